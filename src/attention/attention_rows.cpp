// Row-at-a-time attention: for each query row, scores over its key range, softmax with the
// kernel table's pieces, then the weighted sum of values. O(Lk) scratch per thread.
#include <cmath>
#include <cstring>

#include "attention/attention_driver.hpp"
#include "attention/mask_rows.hpp"
#include "core/context_state.hpp"
#include "core/parallel.hpp"

namespace attn::detail {
namespace {

void fill_row(float* row, std::size_t n, float value) {
  for (std::size_t j = 0; j < n; ++j)
    row[j] = value;
}

}  // namespace

std::size_t attention_scratch_bytes(const Kernels&, int threads, const AttentionCall& call) {
  const std::size_t per_thread = ScratchCarver::rounded(call.dims.len_k * sizeof(float)) +
                                 ScratchCarver::rounded(call.dims.dim_v * sizeof(float));
  return static_cast<std::size_t>(threads) * per_thread;
}

void attention_run(const Kernels& kern, int threads, const AttentionCall& call, void* scratch) {
  const AttentionDims& d = call.dims;
  const Mask& mask = call.options->mask;
  const TensorView<float>& w = call.options->weights;
  const std::size_t rows = d.batch * d.heads_q * d.len_q;
  if (rows == 0) return;
  const std::size_t group = d.heads_q / d.heads_kv;
  const std::size_t per_thread = attention_scratch_bytes(kern, 1, call);
  run_parallel(threads, [&](int t, int nt) {
    ScratchCarver carve(static_cast<char*>(scratch) + static_cast<std::size_t>(t) * per_thread);
    float* s = carve.take<float>(d.len_k);
    float* acc = carve.take<float>(d.dim_v);
    std::size_t begin, end;
    static_range(rows, t, nt, &begin, &end);
    for (std::size_t r = begin; r < end; ++r) {
      const std::size_t i = r % d.len_q;
      const std::size_t h = (r / d.len_q) % d.heads_q;
      const std::size_t b = r / (d.len_q * d.heads_q);
      const std::size_t hk = h / group;
      const MaskRows mr(mask, d, b, h);
      const KeyRange kr = mr.range(i);
      float* orow = &call.out(b, h, i, 0);
      float* wrow = w.data ? &w(b, h, i, 0) : nullptr;
      const float* qrow = &call.q(b, h, i, 0);
      const std::uint8_t* allowed = mr.allowed_row(i);
      const float* bias = mr.additive_row(i);
      float max = -INFINITY;
      for (std::size_t j = kr.begin; j < kr.end; ++j) {
        if (allowed && allowed[j] == 0) {
          s[j] = -INFINITY;
          continue;
        }
        const float* krow = &call.k(b, hk, j, 0);
        float dot = 0.0f;
        for (std::size_t x = 0; x < d.dim_k; ++x)
          dot += qrow[x] * krow[x];
        s[j] = dot * d.scale + (bias ? bias[j] : 0.0f);
        max = s[j] > max ? s[j] : max;
      }
      const std::size_t n = kr.end > kr.begin ? kr.end - kr.begin : 0;
      double sum = 0.0;
      bool nan = false;
      if (n > 0 && max != -INFINITY) {
        sum = kern.exp_minus_max_sum(s + kr.begin, s + kr.begin, n, max);
        nan = std::isnan(sum);
      } else {
        for (std::size_t j = kr.begin; j < kr.end; ++j)
          nan = nan || std::isnan(s[j]);
      }
      if (nan) {
        fill_row(orow, d.dim_v, NAN);
        if (wrow) fill_row(wrow, d.len_k, NAN);
        continue;
      }
      if (n == 0 || max == -INFINITY) {  // fully masked: zeros, by contract
        fill_row(orow, d.dim_v, 0.0f);
        if (wrow) fill_row(wrow, d.len_k, 0.0f);
        continue;
      }
      fill_row(acc, d.dim_v, 0.0f);
      for (std::size_t j = kr.begin; j < kr.end; ++j) {
        if (allowed && allowed[j] == 0) continue;  // blocked keys are never read
        const float* vrow = &call.v(b, hk, j, 0);
        const float p = s[j];
        for (std::size_t x = 0; x < d.dim_v; ++x)
          acc[x] += p * vrow[x];
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (std::size_t x = 0; x < d.dim_v; ++x)
        orow[x] = acc[x] * inv;
      if (wrow) {
        fill_row(wrow, kr.begin, 0.0f);
        for (std::size_t j = kr.begin; j < kr.end; ++j)
          wrow[j] = s[j] * inv;
        fill_row(wrow + kr.end, d.len_k - kr.end, 0.0f);
      }
    }
  });
}

}  // namespace attn::detail
