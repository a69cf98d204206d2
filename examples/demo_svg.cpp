// The figure as SVG 1.1, written by hand: heatmaps (matplotlib's "Blues" colour map, 0 to 1),
// a colour bar, and a grouped bar chart.
#include "demo_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <memory>

namespace attn_demo {
namespace {

struct Rgb {
  double r, g, b;
};

// matplotlib's Blues: 9 stops from 0 (white) to 1 (dark blue), interpolated linearly.
std::string blues(double v) {
  static const Rgb stops[] = {{247, 251, 255}, {222, 235, 247}, {198, 219, 239},
                              {158, 202, 225}, {107, 174, 214}, {66, 146, 198},
                              {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};
  v = std::clamp(v, 0.0, 1.0) * 8.0;
  const int i = std::min(7, static_cast<int>(v));
  const double t = v - i;
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x",
                static_cast<int>(std::lround(stops[i].r + t * (stops[i + 1].r - stops[i].r))),
                static_cast<int>(std::lround(stops[i].g + t * (stops[i + 1].g - stops[i].g))),
                static_cast<int>(std::lround(stops[i].b + t * (stops[i + 1].b - stops[i].b))));
  return buf;
}

const char* kSeriesColours[] = {"#2171b5", "#e6550d"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Rough width of text in DejaVu Sans: 0.62 em per character.
double text_width(const std::string& s, double font_size) {
  std::size_t chars = 0;
  for (unsigned char c : s)
    chars += (c & 0xC0) != 0x80;
  return 0.62 * font_size * static_cast<double>(chars);
}

class Svg {
 public:
  void add(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    va_list args, again;
    va_start(args, format);
    va_copy(again, args);
    const int size = std::vsnprintf(nullptr, 0, format, args);
    va_end(args);
    std::string line(static_cast<std::size_t>(size > 0 ? size : 0) + 1, '\0');
    std::vsnprintf(line.data(), line.size(), format, again);
    va_end(again);
    line.back() = '\n';
    body_ += line;
  }
  void text(double x, double y, double size, const char* anchor, const std::string& s,
            const std::string& extra = "") {
    add("<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" text-anchor=\"%s\"%s>%s</text>", x, y, size,
        anchor, extra.c_str(), escape(s).c_str());
  }
  const std::string& body() const { return body_; }

 private:
  std::string body_;
};

}  // namespace

bool write_svg(const std::string& path, const Figure& f) {
  const std::size_t n = f.tokens.size();
  const std::size_t np = f.patterns.size();
  Svg svg;

  // Heatmaps.
  const double cell = std::clamp(std::round(420.0 / static_cast<double>(n)), 22.0, 64.0);
  const double cell_font = cell >= 44 ? 13 : (cell >= 30 ? 10 : 8);
  const double label_font = 12;
  double longest = 0;
  for (const auto& t : f.tokens)
    longest = std::max(longest, text_width(t, label_font));
  const double row_labels = longest + 10;
  const double col_labels = longest * 0.71 + 14;  // rotated by 45°
  const double margin = 16;
  const double grid = cell * static_cast<double>(n);
  const double panel_w = 22 + row_labels + grid;  // 22: the "query" axis title
  const double top = 64;                          // title and subtitle
  const double grid_y = top + 24 + col_labels;    // panel title, then the column labels

  svg.text(margin, 26, 18, "start", "Attention weights computed by attn", " font-weight=\"bold\"");
  svg.text(margin, 46, 12, "start", f.subtitle, " fill=\"#444\"");

  for (std::size_t p = 0; p < np; ++p) {
    const auto& pat = f.patterns[p];
    const double x0 = margin + static_cast<double>(p) * (panel_w + 40);
    const double gx = x0 + 22 + row_labels;
    svg.text(gx + grid / 2, top + 14, 14, "middle", pat.title, " font-weight=\"bold\"");
    // "query" down the left, "key" under the grid.
    svg.add(
        "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" font-size=\"12\" "
        "text-anchor=\"middle\" fill=\"#444\">query</text>",
        x0 + 12, grid_y + grid / 2);
    svg.text(gx + grid / 2, grid_y + grid + 18, 12, "middle", "key", " fill=\"#444\"");
    for (std::size_t i = 0; i < n; ++i) {
      const double cy = grid_y + cell * static_cast<double>(i);
      svg.text(gx - 6, cy + cell / 2 + 4, label_font, "end", f.tokens[i]);
      const double cx = gx + cell * static_cast<double>(i) + cell / 2;
      svg.add("<text transform=\"translate(%.1f,%.1f) rotate(-45)\" font-size=\"%.0f\">%s</text>",
              cx - 2, grid_y - 6, label_font, escape(f.tokens[i]).c_str());
    }
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        const float w = pat.weights[i * n + j];
        const bool blocked = !pat.mask.allows(i, j);
        const double x = gx + cell * static_cast<double>(j);
        const double y = grid_y + cell * static_cast<double>(i);
        svg.add(
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
            "stroke=\"white\" stroke-width=\"1\"/>",
            x, y, cell, cell, blocked ? "#e4e4e4" : blues(w).c_str());
        const char* ink = blocked ? "#9a9a9a" : (w > 0.55f ? "white" : "#111");
        svg.add(
            "<text class=\"cell\" data-p=\"%zu\" data-q=\"%zu\" data-k=\"%zu\" "
            "data-w=\"%.9g\" x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"middle\" "
            "fill=\"%s\">%.2f</text>",
            p, i, j, static_cast<double>(w), x + cell / 2, y + cell / 2 + cell_font * 0.35,
            cell_font, ink, static_cast<double>(w));
      }
    }
  }

  // The colour bar, right of the last heatmap.
  const double bar_x = margin + static_cast<double>(np) * (panel_w + 40) - 10;
  svg.add("<defs><linearGradient id=\"blues\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">");
  for (int s = 0; s <= 8; ++s)
    svg.add("<stop offset=\"%.3f\" stop-color=\"%s\"/>", s / 8.0, blues(s / 8.0).c_str());
  svg.add("</linearGradient></defs>");
  svg.add(
      "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"%.1f\" fill=\"url(#blues)\" "
      "stroke=\"#888\" stroke-width=\"0.5\"/>",
      bar_x, grid_y, grid);
  for (int t = 0; t <= 4; ++t) {
    const double y = grid_y + grid * (1.0 - t / 4.0);
    svg.add("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>", bar_x + 16,
            y, bar_x + 20, y);
    char label[16];
    std::snprintf(label, sizeof label, "%.2f", t / 4.0);
    svg.text(bar_x + 23, y + 4, 11, "start", label);
  }
  svg.add(
      "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" font-size=\"12\" "
      "text-anchor=\"middle\" fill=\"#444\">weight</text>",
      bar_x + 64, grid_y + grid / 2);
  bool any_blocked = false;
  for (const auto& pat : f.patterns) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j)
        any_blocked = any_blocked || !pat.mask.allows(i, j);
    }
  }
  if (any_blocked) {
    svg.add("<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"12\" fill=\"#e4e4e4\"/>", bar_x,
            grid_y + grid + 10);
    svg.text(bar_x + 22, grid_y + grid + 20, 11, "start", "masked");
  }

  // The grouped bar chart of one query's weights.
  const double heat_w = bar_x + 80;
  const double chart_top = grid_y + grid + 60;
  const double chart_h = 220;
  const double chart_x = margin + 50;
  const double chart_w = std::max(heat_w - chart_x - margin, 60.0 * static_cast<double>(n));
  const double width = std::max(heat_w, chart_x + chart_w + margin);
  float max_w = 0;
  for (const auto& pat : f.patterns) {
    for (std::size_t j = 0; j < n; ++j)
      max_w = std::max(max_w, pat.weights[f.query * n + j]);
  }
  // Headroom above the tallest bar for its value.
  const double y_max = std::max(0.1, std::ceil(static_cast<double>(max_w) * 11.5 - 1e-9) / 10.0);
  const double step = y_max > 0.6 ? 0.2 : 0.1;
  const double base = chart_top + 34 + chart_h;  // y of weight 0
  auto y_of = [&](double w) { return base - chart_h * w / y_max; };

  svg.text(
      margin, chart_top + 8, 14, "start",
      "Attention weights of \"" + f.tokens[f.query] + "\" (query " + std::to_string(f.query) + ")",
      " font-weight=\"bold\"");
  double lx = margin + text_width("Attention weights of \"\" (query 0)", 14) +
              text_width(f.tokens[f.query], 14) + 30;
  for (std::size_t p = 0; p < np; ++p) {
    svg.add("<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>", lx,
            chart_top - 2, kSeriesColours[p % 2]);
    svg.text(lx + 16, chart_top + 8, 12, "start", f.patterns[p].title);
    lx += 16 + text_width(f.patterns[p].title, 12) + 20;
  }
  for (int t = 0; t * step <= y_max + 1e-9; ++t) {
    const double w = t * step;
    svg.add("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>", chart_x,
            y_of(w), chart_x + chart_w, y_of(w), t == 0 ? "#444" : "#e0e0e0");
    char label[16];
    std::snprintf(label, sizeof label, "%.1f", w);
    svg.text(chart_x - 6, y_of(w) + 4, 11, "end", label);
  }
  svg.add(
      "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" font-size=\"12\" "
      "text-anchor=\"middle\" fill=\"#444\">weight</text>",
      margin + 8, base - chart_h / 2);
  const double group_w = chart_w / static_cast<double>(n);
  const double bar_w = std::min(30.0, group_w * 0.8 / static_cast<double>(np));
  const double value_font = std::min(10.0, bar_w / 2.4 + 1);
  const bool vertical_values = bar_w < 26;
  for (std::size_t j = 0; j < n; ++j) {
    const double gx = chart_x + group_w * static_cast<double>(j);
    const double bars_x = gx + (group_w - bar_w * static_cast<double>(np)) / 2;
    for (std::size_t p = 0; p < np; ++p) {
      const float w = f.patterns[p].weights[f.query * n + j];
      const double x = bars_x + bar_w * static_cast<double>(p);
      svg.add("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>", x,
              y_of(w), bar_w - 1, base - y_of(w), kSeriesColours[p % 2]);
      char value[32];
      std::snprintf(value, sizeof value, "%.3f", static_cast<double>(w));
      const double vx = x + (bar_w - 1) / 2, vy = y_of(w) - 4;
      if (vertical_values) {
        svg.add(
            "<text class=\"bar\" data-p=\"%zu\" data-q=\"%zu\" data-k=\"%zu\" "
            "data-w=\"%.9g\" transform=\"translate(%.1f,%.1f) rotate(-90)\" "
            "font-size=\"%.1f\" text-anchor=\"start\" dy=\"0.35em\">%s</text>",
            p, f.query, j, static_cast<double>(w), vx, vy, value_font, value);
      } else {
        svg.add(
            "<text class=\"bar\" data-p=\"%zu\" data-q=\"%zu\" data-k=\"%zu\" "
            "data-w=\"%.9g\" x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" "
            "text-anchor=\"middle\">%s</text>",
            p, f.query, j, static_cast<double>(w), vx, vy, value_font, value);
      }
    }
    const std::string& t = f.tokens[j];
    if (text_width(t, 12) > group_w - 4) {
      svg.add(
          "<text transform=\"translate(%.1f,%.1f) rotate(-35)\" font-size=\"12\" "
          "text-anchor=\"end\">%s</text>",
          gx + group_w / 2 + 4, base + 14, escape(t).c_str());
    } else {
      svg.text(gx + group_w / 2, base + 16, 12, "middle", t);
    }
  }
  svg.text(chart_x + chart_w / 2, base + 44, 12, "middle", "key", " fill=\"#444\"");
  const double height = base + 56;

  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "w"), std::fclose);
  if (!file) return false;
  std::fprintf(file.get(),
               "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\n"
               "<title>Attention weights computed by attn</title>\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n%s</svg>\n",
               std::ceil(width), std::ceil(height), std::ceil(width), std::ceil(height),
               svg.body().c_str());
  return std::ferror(file.get()) == 0;
}

}  // namespace attn_demo
