// attn-demo's figure: the seed's two pictures, drawn from the weights attn computed.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "demo_model.hpp"

namespace attn_demo {

struct Figure {
  std::vector<std::string> tokens;
  std::string subtitle;  // e.g. "d_model 64, d_k 16, seed 42, ISA avx512"
  // One or two patterns: the heatmaps, side by side, and the bar chart's series.
  struct Pattern {
    std::string title;           // "Bidirectional (encoder)"
    MaskChoice mask;             // greys out the cells it blocks
    std::vector<float> weights;  // n × n, row = query
  };
  std::vector<Pattern> patterns;
  std::size_t query = 0;  // the bar chart shows this query's row
};

// Writes the figure as SVG. Every number drawn is a <text> element whose data-w attribute holds
// the weight as attn computed it (%.9g, which reads back as the same float) and whose text is
// that weight with 2 decimals (heatmap cells, class "cell") or 3 decimals (bars, class "bar");
// data-p is the pattern, data-q the query and data-k the key. Returns false if the file cannot
// be written.
bool write_svg(const std::string& path, const Figure& figure);

}  // namespace attn_demo
