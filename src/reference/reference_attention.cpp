// attn::reference::attention and self_attention: one (query, key) pair at a time, in double.
#include <cmath>
#include <cstddef>
#include <cstdlib>

#include "attn/reference.hpp"
#include "core/args.hpp"
#include "core/checks.hpp"

namespace attn::reference {
namespace {

using detail::AttentionDims;

std::size_t bcast(std::size_t index, std::size_t size) {
  return size == 1 ? 0 : index;
}

// True if the mask's structural or boolean parts block key j for query i of (b, h).
bool blocked(const Mask& mask, const AttentionDims& d, std::size_t b, std::size_t h, std::size_t i,
             std::size_t j) {
  const long long lq = static_cast<long long>(d.len_q);
  const long long lk = static_cast<long long>(d.len_k);
  const long long ii = static_cast<long long>(i);
  const long long jj = static_cast<long long>(j);
  if (mask.is_causal) {
    const long long shift = mask.causal_align == CausalAlign::bottom_right ? lk - lq : 0;
    if (jj > ii + shift) return true;
  }
  if (mask.has_window) {
    const long long pos = ii + (mask.window_align == CausalAlign::bottom_right ? lk - lq : 0);
    // jj < pos - left  <=>  pos - jj > left, computed without overflow.
    if (pos - jj > 0 && static_cast<unsigned long long>(pos - jj) > mask.window_left) return true;
    if (jj - pos > 0 && static_cast<unsigned long long>(jj - pos) > mask.window_right) return true;
  }
  if (mask.key_lengths != nullptr && jj >= mask.key_lengths[b]) return true;
  if (mask.allowed.data != nullptr) {
    const auto& t = mask.allowed;
    if (t(bcast(b, t.shape[0]), bcast(h, t.shape[1]), bcast(i, t.shape[2]), j) == 0) return true;
  }
  return false;
}

// Where row (b, h, s) of t starts: t(b, h, s, x) is t.data[row_start(t, b, h, s) + x *
// t.strides[3]]. The loops over a row's elements index from it: clang-14's ASan build does not
// inline TensorView::operator(), which took 12% of an attention test case's time there. Only for
// a view with elements: an empty one's strides are never checked (core/checks.cpp), and their
// products could overflow.
template <class T>
std::ptrdiff_t row_start(const TensorView<T>& t, std::size_t b, std::size_t h, std::size_t s) {
  return static_cast<std::ptrdiff_t>(b) * t.strides[0] +
         static_cast<std::ptrdiff_t>(h) * t.strides[1] +
         static_cast<std::ptrdiff_t>(s) * t.strides[2];
}

double additive(const Mask& mask, std::size_t b, std::size_t h, std::size_t i, std::size_t j) {
  if (mask.additive.data == nullptr) return 0.0;
  const auto& t = mask.additive;
  return t(bcast(b, t.shape[0]), bcast(h, t.shape[1]), bcast(i, t.shape[2]), j);
}

}  // namespace

namespace {

// The oracle's work space: n zeroed T's from calloc, freed with the array. attn throws no
// exception and needs none (a project may build it with -fno-exceptions): a size the heap refuses
// is out_of_memory, reported before the first write to an output.
template <class T>
class WorkArray {
 public:
  WorkArray() = default;
  WorkArray(const WorkArray&) = delete;
  WorkArray& operator=(const WorkArray&) = delete;
  ~WorkArray() { std::free(p_); }
  // False if calloc refuses n elements (n == 0 allocates one, so that data() is never null).
  bool allocate(std::size_t n) {
    std::free(p_);
    p_ = static_cast<T*>(std::calloc(n == 0 ? 1 : n, sizeof(T)));
    return p_ != nullptr;
  }
  T* data() { return p_; }
  T& operator[](std::size_t i) { return p_[i]; }

 private:
  T* p_ = nullptr;
};

Status no_work_space(const char* fn) {
  return Status::Error(StatusCode::out_of_memory, "%s: could not allocate its work space", fn);
}

Status attention_validated(const TensorView<const float>& q, const TensorView<const float>& k,
                           const TensorView<const float>& v, const TensorView<float>& out,
                           const AttentionOptions& options, const AttentionDims& d) {
  const Mask& mask = options.mask;
  const TensorView<float>& w = options.weights;
  const std::size_t group = d.heads_kv == 0 ? 1 : d.heads_q / d.heads_kv;
  WorkArray<double> s, acc;
  WorkArray<char> skip;
  if (!s.allocate(d.len_k) || !acc.allocate(d.dim_v) || !skip.allocate(d.len_k)) {
    return no_work_space("reference::attention");
  }
  for (std::size_t b = 0; b < d.batch; ++b) {
    for (std::size_t h = 0; h < d.heads_q; ++h) {
      const std::size_t hk = h / group;
      for (std::size_t i = 0; i < d.len_q; ++i) {
        const std::ptrdiff_t qi = d.dim_k == 0 ? 0 : row_start(q, b, h, i);
        double m = -INFINITY;
        bool nan = false;
        for (std::size_t j = 0; j < d.len_k; ++j) {
          skip[j] = blocked(mask, d, b, h, i, j);
          if (skip[j]) continue;
          const std::ptrdiff_t kj = d.dim_k == 0 ? 0 : row_start(k, b, hk, j);
          double dot = 0.0;
          for (std::size_t x = 0; x < d.dim_k; ++x) {
            const auto xs = static_cast<std::ptrdiff_t>(x);
            dot += static_cast<double>(q.data[qi + xs * q.strides[3]]) *
                   static_cast<double>(k.data[kj + xs * k.strides[3]]);
          }
          s[j] = dot * static_cast<double>(d.scale) + additive(mask, b, h, i, j);
          nan = nan || std::isnan(s[j]);
          if (s[j] > m) m = s[j];
        }
        if (nan || m == INFINITY) {  // NaN, or inf - inf below: the row is NaN
          for (std::size_t x = 0; x < d.dim_v; ++x)
            out(b, h, i, x) = NAN;
          if (w.data) {
            for (std::size_t j = 0; j < d.len_k; ++j)
              w(b, h, i, j) = NAN;
          }
          continue;
        }
        if (m == -INFINITY) {  // fully masked: zeros, by contract
          for (std::size_t x = 0; x < d.dim_v; ++x)
            out(b, h, i, x) = 0.0f;
          if (w.data) {
            for (std::size_t j = 0; j < d.len_k; ++j)
              w(b, h, i, j) = 0.0f;
          }
          continue;
        }
        double sum = 0.0;
        for (std::size_t j = 0; j < d.len_k; ++j) {
          s[j] = skip[j] ? 0.0 : std::exp(s[j] - m);
          sum += s[j];
        }
        for (std::size_t x = 0; x < d.dim_v; ++x)
          acc[x] = 0.0;
        for (std::size_t j = 0; j < d.len_k; ++j) {
          if (skip[j]) continue;  // blocked keys are never read
          const double p = s[j] / sum;
          const std::ptrdiff_t vj = d.dim_v == 0 ? 0 : row_start(v, b, hk, j);
          for (std::size_t x = 0; x < d.dim_v; ++x)
            acc[x] +=
                p * static_cast<double>(v.data[vj + static_cast<std::ptrdiff_t>(x) * v.strides[3]]);
        }
        for (std::size_t x = 0; x < d.dim_v; ++x)
          out(b, h, i, x) = static_cast<float>(acc[x]);
        if (w.data) {
          for (std::size_t j = 0; j < d.len_k; ++j)
            w(b, h, i, j) = static_cast<float>(s[j] / sum);
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status attention(TensorView<const float> q, TensorView<const float> k, TensorView<const float> v,
                 TensorView<float> out, const AttentionOptions& options) {
  constexpr const char* fn = "reference::attention";
  AttentionDims d;
  ATTN_RETURN_IF_ERROR(detail::validate_attention(fn, q, k, v, out, options, &d));
  if (detail::attention_writes_nothing(d, options.weights.data != nullptr)) return Status::Ok();
  return attention_validated(q, k, v, out, options, d);
}

namespace {

Status self_attention_validated(const MatrixView<const float>& x, const SelfAttentionParams& params,
                                const MatrixView<float>& out, const detail::SelfAttentionDims& d) {
  const std::size_t rows = x.rows;
  if (detail::self_attention_writes_nothing(rows, d, params.attention.weights.data != nullptr)) {
    return Status::Ok();
  }
  // Each view is bounded alone; rows times a projection's or the heads' width may still wrap
  // (x of 2^33 rows against Wq of 2^31 columns): more than memory holds.
  for (std::size_t cols :
       {params.q.weight.cols, params.k.weight.cols, params.v.weight.cols, d.heads_q * d.dim_v}) {
    std::size_t floats = 0;
    if (!detail::mul_ok(rows, cols, &floats) || !detail::mul_ok(floats, sizeof(float), &floats)) {
      return Status::Error(StatusCode::out_of_memory,
                           "reference::self_attention: %zu rows x %zu columns do not fit in "
                           "memory",
                           rows, cols);
    }
  }
  // Projections in double, rounded once to float: the inputs attention sees.
  // rows x cols fits (above): calloc's product does not wrap.
  WorkArray<float> qs, ks, vs, heads;
  if (!qs.allocate(rows * params.q.weight.cols) || !ks.allocate(rows * params.k.weight.cols) ||
      !vs.allocate(rows * params.v.weight.cols) || !heads.allocate(rows * d.heads_q * d.dim_v)) {
    return no_work_space("reference::self_attention");
  }
  auto project = [&](const Projection& p, WorkArray<float>& y) {
    const std::size_t n = p.weight.cols;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < n; ++c) {
        double sum = p.bias ? static_cast<double>(p.bias[c]) : 0.0;
        for (std::size_t t = 0; t < d.d_model; ++t) {
          sum += static_cast<double>(x(r, t)) * static_cast<double>(p.weight(t, c));
        }
        y[r * n + c] = static_cast<float>(sum);
      }
    }
  };
  project(params.q, qs);
  project(params.k, ks);
  project(params.v, vs);
  const auto tq = make_bshd<const float>(qs.data(), d.batch, d.seq, d.heads_q, d.dim_k);
  const auto tk = make_bshd<const float>(ks.data(), d.batch, d.seq, d.heads_kv, d.dim_k);
  const auto tv = make_bshd<const float>(vs.data(), d.batch, d.seq, d.heads_kv, d.dim_v);
  const auto th = make_bshd<float>(heads.data(), d.batch, d.seq, d.heads_q, d.dim_v);
  if (d.batch > 0) ATTN_RETURN_IF_ERROR(attention(tq, tk, tv, th, params.attention));
  const std::size_t hd = d.heads_q * d.dim_v;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < d.d_out; ++c) {
      if (!d.has_output_projection) {
        out(r, c) = heads[r * hd + c];
        continue;
      }
      double sum = params.o.bias ? static_cast<double>(params.o.bias[c]) : 0.0;
      for (std::size_t t = 0; t < hd; ++t) {
        sum += static_cast<double>(heads[r * hd + t]) * static_cast<double>(params.o.weight(t, c));
      }
      out(r, c) = static_cast<float>(sum);
    }
  }
  return Status::Ok();
}

}  // namespace

Status self_attention(MatrixView<const float> x, std::size_t batch,
                      const SelfAttentionParams& params, MatrixView<float> out) {
  constexpr const char* fn = "reference::self_attention";
  detail::SelfAttentionDims d;
  ATTN_RETURN_IF_ERROR(detail::validate_self_attention(fn, x, batch, params, out, &d));
  return self_attention_validated(x, params, out, d);
}

}  // namespace attn::reference
