// attn-fuzz: a libFuzzer target over attn's whole public API.
//
// Each input picks an entry point (matmul, with B as a view or packed by pack_matrix, exp,
// softmax, attention, self_attention, or the Context setters), an ISA, a thread count, shapes,
// layouts (padding, permuted dimensions, and for inputs broadcast, aliasing and negative strides),
// mask parts, and float values (small exact values, uniform values, raw bit patterns, or specials:
// NaN, +-inf, +-0, +-1e30, subnormals, FLT_MAX), plus up to a few values patched in at chosen
// places. It may then inject one fault from a catalogue of bad arguments. The checks, any failure
// of which aborts:
//   - a fault gives invalid_argument, both from attn and from attn::reference, and no buffer
//     changes (outputs are compared bit for bit with a snapshot);
//   - a call without a fault gives ok, inputs are unchanged, and output memory outside the views
//     (row padding, slack) is unchanged;
//   - the results agree with attn::reference within the bounds of README "Accuracy"
//     (tests/support/bounds.hpp) wherever IEEE float and the double reference must agree (no
//     float overflow possible); elsewhere the documented IEEE rules are checked: fully masked rows
//     are zeros, blocked keys get weight 0 and are never read (their k and v rows are poisoned
//     with NaN and inf), and a NaN weights row is NaN throughout, with its output row.
// ASan and UBSan (the `fuzz` preset) report memory and undefined-behaviour errors on the way.
// Shapes stay small so each run is fast. README "Guarantees" says how to fuzz.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <type_traits>
#include <vector>

#include "attn/attn.hpp"
#include "support/bounds.hpp"
#include "support/test_support.hpp"

namespace {

using attn::MatrixView;
using attn::Status;
using attn::StatusCode;
using attn::TensorView;
using attn::Transpose;
using Shape4 = std::array<std::size_t, 4>;
using Strides4 = std::array<std::ptrdiff_t, 4>;

[[noreturn]] void fuzz_fail(const char* file, int line, const char* cond, const char* fmt, ...) {
  std::fprintf(stderr, "\nattn-fuzz: check failed at %s:%d: %s\n  ", file, line, cond);
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  std::abort();
}
#define FUZZ_CHECK(cond, ...)                                       \
  do {                                                              \
    if (!(cond)) fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint32_t to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
bool same_bits(float a, float b) {
  return to_bits(a) == to_bits(b);
}
// Bit-for-bit equality (== would call NaN unequal to itself).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

constexpr float kSentinel = -12345.678f;
// Products at least this large (or 0) cannot lose accuracy to underflow in sums and scalings:
// far above the smallest normal float, 2^-126.
const double kNoUnderflow = std::ldexp(1.0, -100);
template <class T>
T sentinel() {
  return std::is_same<T, float>::value ? T(kSentinel) : T(0xa5);
}

// ---------------------------------------------------------------------------------------------
// Values: a small generator seeded from the input, so that a few bytes fill any buffer, plus
// the mode that decides what kind of floats it makes.

class Values {
 public:
  enum Mode { exact, uniform, specials, raw, kModes };

  explicit Values(FuzzedDataProvider& fdp)
      : state_(fdp.ConsumeIntegral<std::uint64_t>()),
        mode_(static_cast<Mode>(fdp.ConsumeIntegralInRange<int>(0, kModes - 1))),
        range_(fdp.PickValueInArray({1.0f, 4.0f, 30.0f})) {}

  Mode mode() const { return mode_; }
  // True when every value is finite and |x| <= 30.
  bool tame() const { return mode_ == exact || mode_ == uniform; }

  float next() {
    const std::uint64_t r = step();
    switch (mode_) {
      case exact:  // multiples of 1/8 in [-4, 4]: many exact ties and cancellations
        return static_cast<float>(static_cast<int>(r % 65) - 32) / 8.0f;
      case uniform:
        return range_ * (static_cast<float>(r >> 40) / static_cast<float>(1 << 24) * 2.0f - 1.0f);
      case specials:
        if (r % 4 == 0) return special(r >> 8);
        return static_cast<float>(static_cast<int>((r >> 8) % 65) - 32) / 8.0f;
      default:
        return from_bits(static_cast<std::uint32_t>(r >> 16));
    }
  }
  static float special(std::uint64_t r) {
    static const float table[] = {attn_test::nan_f(),
                                  -attn_test::nan_f(),
                                  attn_test::inf_f(),
                                  -attn_test::inf_f(),
                                  0.0f,
                                  -0.0f,
                                  1e30f,
                                  -1e30f,
                                  1e-30f,
                                  FLT_MAX,
                                  -FLT_MAX,
                                  FLT_MIN,
                                  FLT_TRUE_MIN,
                                  -FLT_TRUE_MIN,
                                  from_bits(0x00400000u),  // subnormal
                                  from_bits(0x7f800001u),  // signalling NaN
                                  88.72284f,
                                  -103.97208f,
                                  1.0f,
                                  -1.0f};
    return table[r % (sizeof(table) / sizeof(table[0]))];
  }
  std::uint64_t bits() { return step(); }

 private:
  std::uint64_t step() {  // splitmix64
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t state_;
  Mode mode_;
  float range_;
};

// ---------------------------------------------------------------------------------------------
// Buffers and layouts.

// Owns the memory of one view. Its vector is exactly as long as the view needs (plus chosen
// slack), so ASan reports any access past it.
template <class T>
struct Buffer {
  std::vector<T> mem;
  std::vector<T> snapshot;
  void snap() { snapshot = mem; }
  bool unchanged() const {
    return mem.size() == snapshot.size() &&
           (mem.empty() || std::memcmp(mem.data(), snapshot.data(), mem.size() * sizeof(T)) == 0);
  }
};

struct Layout4 {
  Shape4 shape{};
  Strides4 strides{};
  std::size_t base = 0;    // offset of element (0, 0, 0, 0) in the buffer
  std::size_t size = 0;    // elements the buffer holds
  std::size_t extent = 0;  // elements from the lowest to the highest the view reaches
  bool empty() const { return shape[0] == 0 || shape[1] == 0 || shape[2] == 0 || shape[3] == 0; }
  std::size_t offset(std::size_t b, std::size_t h, std::size_t s, std::size_t d) const {
    return static_cast<std::size_t>(
        static_cast<std::ptrdiff_t>(base) + static_cast<std::ptrdiff_t>(b) * strides[0] +
        static_cast<std::ptrdiff_t>(h) * strides[1] + static_cast<std::ptrdiff_t>(s) * strides[2] +
        static_cast<std::ptrdiff_t>(d) * strides[3]);
  }
};

// Sets base and size from shape and strides (plus `slack` elements after the last one).
void finish_layout(Layout4* l, std::size_t slack) {
  if (l->empty()) {
    l->base = 0;
    l->size = 0;
    return;
  }
  std::ptrdiff_t lo = 0, hi = 0;
  for (int d = 0; d < 4; ++d) {
    const std::ptrdiff_t reach = static_cast<std::ptrdiff_t>(l->shape[d] - 1) * l->strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  l->base = static_cast<std::size_t>(-lo);
  l->extent = static_cast<std::size_t>(hi - lo + 1);
  l->size = l->extent + slack;
}

// A rank-4 layout with strides[3] == 1. Outputs get the dense orders (BHSD, BSHD, or any order of
// the first three dimensions) with row padding; inputs may also broadcast (stride 0), alias
// (a stride below the span of the dimensions inside it) or run backwards (negative strides).
Layout4 tensor_layout(FuzzedDataProvider& fdp, const Shape4& shape, bool input) {
  Layout4 l;
  l.shape = shape;
  const int kind = fdp.ConsumeIntegralInRange<int>(0, input ? 3 : 2);
  std::array<int, 3> order = {2, 1, 0};  // inner to outer, after dimension 3
  if (kind == 1) order = {1, 2, 0};      // BSHD
  if (kind >= 2) {
    order = {0, 1, 2};
    for (int i = 2; i > 0; --i)
      std::swap(order[i], order[fdp.ConsumeIntegralInRange<int>(0, i)]);
  }
  l.strides[3] = 1;
  std::ptrdiff_t extent = static_cast<std::ptrdiff_t>(std::max<std::size_t>(shape[3], 1));
  for (int d : order) {
    const std::ptrdiff_t pad = kind == 0 ? 0 : fdp.ConsumeIntegralInRange<int>(0, 3);
    l.strides[d] = extent + pad;
    extent = l.strides[d] * static_cast<std::ptrdiff_t>(std::max<std::size_t>(shape[d], 1));
  }
  if (kind == 3) {
    for (int d = 0; d < 3; ++d) {
      switch (fdp.ConsumeIntegralInRange<int>(0, 4)) {
        case 0:
          l.strides[d] = 0;  // broadcast
          break;
        case 1:  // rows that overlap
          l.strides[d] = fdp.ConsumeIntegralInRange<std::ptrdiff_t>(
              1, std::max<std::ptrdiff_t>(1, l.strides[d] - 1));
          break;
        case 2:
          l.strides[d] = -l.strides[d];
          break;
        default:
          break;
      }
    }
  }
  // Any stride, PTRDIFF_MIN and PTRDIFF_MAX included.
  const auto any_stride = [&fdp] {
    return fdp.ConsumeBool() ? fdp.PickValueInArray<std::ptrdiff_t>({PTRDIFF_MIN, PTRDIFF_MAX})
                             : fdp.ConsumeIntegral<std::ptrdiff_t>();
  };
  // A dimension of size 1 may carry any stride: it is never applied.
  for (int d = 0; d < 3; ++d) {
    if (shape[d] == 1 && fdp.ConsumeBool()) l.strides[d] = any_stride();
  }
  // A view with no elements may carry any strides: they are never used (view.hpp).
  if (l.empty() && fdp.ConsumeBool()) {
    for (std::ptrdiff_t& st : l.strides)
      st = any_stride();
  }
  finish_layout(&l, input ? 0 : fdp.ConsumeIntegralInRange<std::size_t>(0, 2));
  return l;
}

// Brute force: do two elements of the layout share an offset?
bool self_aliases(const Layout4& l) {
  if (l.empty()) return false;
  std::set<std::size_t> seen;
  for (std::size_t b = 0; b < l.shape[0]; ++b)
    for (std::size_t h = 0; h < l.shape[1]; ++h)
      for (std::size_t s = 0; s < l.shape[2]; ++s)
        for (std::size_t d = 0; d < l.shape[3]; ++d)
          if (!seen.insert(l.offset(b, h, s, d)).second) return true;
  return false;
}

// Offsets a layout covers.
std::vector<char> covered(const Layout4& l, std::size_t buffer_size) {
  std::vector<char> c(buffer_size, 0);
  if (l.empty()) return c;
  for (std::size_t b = 0; b < l.shape[0]; ++b)
    for (std::size_t h = 0; h < l.shape[1]; ++h)
      for (std::size_t s = 0; s < l.shape[2]; ++s)
        for (std::size_t d = 0; d < l.shape[3]; ++d)
          c[l.offset(b, h, s, d)] = 1;
  return c;
}

// A tensor: layout plus buffer, viewed as TensorView<T> (or with data == nullptr when empty and
// the input says so).
template <class T>
struct Tensor {
  Layout4 layout;
  Buffer<T> buf;
  bool null_when_empty = true;
  T* data() {
    if (layout.empty() && null_when_empty) return nullptr;
    if (buf.mem.empty()) buf.mem.resize(1, T(0));  // an empty view with a real pointer
    return buf.mem.data() + layout.base;
  }
  TensorView<T> view() { return {data(), layout.shape, layout.strides}; }
  T& at(std::size_t b, std::size_t h, std::size_t s, std::size_t d) {
    return buf.mem[layout.offset(b, h, s, d)];
  }
};

template <class T>
void make_tensor(FuzzedDataProvider& fdp, Tensor<T>* t, const Shape4& shape, bool input) {
  t->layout = tensor_layout(fdp, shape, input);
  t->buf.mem.assign(t->layout.size, sentinel<T>());
  t->null_when_empty = fdp.ConsumeBool();
}

void fill(Values& val, Tensor<float>* t) {
  for (float& x : t->buf.mem)
    x = val.next();
}

// A matrix view over a buffer: rows x cols, stride cols + padding (anything when rows <= 1).
struct Matrix {
  std::size_t rows = 0, cols = 0, stride = 0;
  Buffer<float> buf;
  bool null_when_empty = true;
  bool empty() const { return rows == 0 || cols == 0; }
  float* data() {
    if (empty() && null_when_empty) return nullptr;
    if (buf.mem.empty()) buf.mem.resize(1, 0.0f);
    return buf.mem.data();
  }
  MatrixView<float> view() { return {data(), rows, cols, stride}; }
  MatrixView<const float> cview() { return view(); }
  float& at(std::size_t i, std::size_t j) { return buf.mem[i * stride + j]; }
};

void make_matrix(FuzzedDataProvider& fdp, Matrix* m, std::size_t rows, std::size_t cols,
                 bool output) {
  m->rows = rows;
  m->cols = cols;
  m->stride = cols + fdp.ConsumeIntegralInRange<std::size_t>(0, 3);
  if (rows <= 1 && fdp.ConsumeBool()) m->stride = fdp.ConsumeIntegralInRange<std::size_t>(0, 40);
  const std::size_t slack = output ? fdp.ConsumeIntegralInRange<std::size_t>(0, 2) : 0;
  m->buf.mem.assign(m->empty() ? 0 : (rows - 1) * m->stride + cols + slack, kSentinel);
  m->null_when_empty = fdp.ConsumeBool();
}

void fill(Values& val, Matrix* m) {
  for (float& x : m->buf.mem)
    x = val.next();
}

// Entries of the buffer outside the matrix view are unchanged.
bool matrix_padding_unchanged(const Matrix& m) {
  for (std::size_t p = 0; p < m.buf.mem.size(); ++p) {
    const bool inside =
        !m.empty() && (m.rows == 1 ? p < m.cols : p / m.stride < m.rows && p % m.stride < m.cols);
    if (!inside && !same_bits(m.buf.mem[p], m.buf.snapshot[p])) return false;
  }
  return true;
}

bool tensor_padding_unchanged(const Tensor<float>& t) {
  const std::vector<char> c = covered(t.layout, t.buf.mem.size());
  for (std::size_t p = 0; p < t.buf.mem.size(); ++p) {
    if (!c[p] && !same_bits(t.buf.mem[p], t.buf.snapshot[p])) return false;
  }
  return true;
}

// Sizes whose byte count cannot fit in ptrdiff_t, whatever the stride.
std::size_t huge_size(FuzzedDataProvider& fdp) {
  return fdp.PickValueInArray<std::size_t>({(std::size_t{1} << 61) + 1, std::size_t{1} << 62,
                                            std::size_t{1} << 63, SIZE_MAX / 2, SIZE_MAX});
}

void check_status(const Status& fast, const Status& ref, bool fault, int fault_case,
                  const char* fn) {
  if (fault) {
    FUZZ_CHECK(fast.code() == StatusCode::invalid_argument,
               "%s: a bad argument (fault case %d) gave %s (\"%s\"), not invalid_argument", fn,
               fault_case, attn::status_code_name(fast.code()), fast.message());
  } else {
    FUZZ_CHECK(fast.ok(), "%s: valid arguments were refused: %s", fn, fast.message());
  }
  FUZZ_CHECK(fast.code() == ref.code(), "%s: attn says %s (\"%s\"), the reference %s (\"%s\")", fn,
             attn::status_code_name(fast.code()), fast.message(),
             attn::status_code_name(ref.code()), ref.message());
  FUZZ_CHECK(fast.ok() || std::strlen(fast.message()) > 0, "%s: an error without a message", fn);
}

// ---------------------------------------------------------------------------------------------
// The Context setters.

void fuzz_context(FuzzedDataProvider& fdp, attn::Context& ctx) {
  const int before = ctx.num_threads();
  const int n = fdp.ConsumeIntegralInRange<int>(INT_MIN, 0);
  FUZZ_CHECK(ctx.set_num_threads(n).code() == StatusCode::invalid_argument,
             "set_num_threads(%d) accepted", n);
  FUZZ_CHECK(ctx.num_threads() == before, "a refused set_num_threads changed the count");
  const attn::Isa isa_before = ctx.isa();
  // Every Isa, or (the last pick) a value that is no enumerator.
  constexpr std::size_t kIsas = std::size(attn::kAllIsas);
  const std::size_t pick = fdp.ConsumeIntegralInRange<std::size_t>(0, kIsas);
  if (pick == kIsas) {
    int value = fdp.ConsumeIntegral<int>();
    if (value >= 0 && value < int{kIsas}) value = -1 - value;  // negative values too
    const auto bad = static_cast<attn::Isa>(value);
    FUZZ_CHECK(ctx.set_isa(bad).code() == StatusCode::invalid_argument && ctx.isa() == isa_before,
               "set_isa(%d), not an Isa, was not refused", static_cast<int>(bad));
    return;
  }
  const attn::Isa isa = attn::kAllIsas[pick];
  const Status s = ctx.set_isa(isa);
  if (attn::isa_supported(isa)) {
    FUZZ_CHECK(s.ok() && ctx.isa() == isa, "set_isa(%s) failed", attn::isa_name(isa));
  } else {
    FUZZ_CHECK(s.code() == StatusCode::unsupported && ctx.isa() == isa_before,
               "set_isa(%s) on an unsupported ISA", attn::isa_name(isa));
  }
}

// ---------------------------------------------------------------------------------------------
// matmul

void fuzz_matmul(FuzzedDataProvider& fdp, attn::Context& ctx) {
  const bool big = fdp.ConsumeIntegralInRange<int>(0, 7) == 0;
  const std::size_t m = fdp.ConsumeIntegralInRange<std::size_t>(0, big ? 40 : 9);
  const std::size_t n = fdp.ConsumeIntegralInRange<std::size_t>(0, big ? 70 : 9);
  const std::size_t k = fdp.ConsumeIntegralInRange<std::size_t>(0, big ? 40 : 9);
  const Transpose ta = fdp.ConsumeBool() ? Transpose::yes : Transpose::no;
  const Transpose tb = fdp.ConsumeBool() ? Transpose::yes : Transpose::no;
  Values val(fdp);
  const float alpha = fdp.ConsumeBool() ? 1.0f : (fdp.ConsumeBool() ? val.next() : 0.0f);
  const float beta =
      fdp.ConsumeBool() ? 0.0f : fdp.PickValueInArray({1.0f, -0.5f, 2.0f, val.next()});
  Matrix a, b, c;
  make_matrix(fdp, &a, ta == Transpose::no ? m : k, ta == Transpose::no ? k : m, false);
  make_matrix(fdp, &b, tb == Transpose::no ? k : n, tb == Transpose::no ? n : k, false);
  make_matrix(fdp, &c, m, n, true);
  fill(val, &a);
  fill(val, &b);
  fill(val, &c);
  MatrixView<const float> av = a.cview(), bv = b.cview();
  MatrixView<float> cv = c.view();

  bool fault = true;
  const int fault_case = fdp.ConsumeIntegralInRange<int>(0, 12);
  // B packed first (pack_matrix on the unchanged b), then matmul with the PackedMatrix: the faults
  // then reach a and c only (the packed b is valid by construction).
  const bool packed = fdp.ConsumeBool();
  switch (fault_case) {
    case 1:  // null data with a non-zero size
      if (!a.empty()) {
        av.data = nullptr;
      } else if (!c.empty()) {
        cv.data = nullptr;
      } else {
        fault = false;
      }
      break;
    case 2:  // stride < cols
      if (a.rows > 1 && a.cols > 0) {
        av.stride = fdp.ConsumeIntegralInRange<std::size_t>(0, a.cols - 1);
      } else if (c.rows > 1 && c.cols > 0) {
        cv.stride = fdp.ConsumeIntegralInRange<std::size_t>(0, c.cols - 1);
      } else {
        fault = false;
      }
      break;
    case 3:  // inner dimensions that differ (attn must reject before reading past b, or a)
      if (packed) {
        if (ta == Transpose::no) {
          av.cols += 1;
        } else {
          av.rows += 1;
        }
        av.stride = std::max(av.stride, av.cols);
        if (av.data == nullptr) av.data = &kSentinel;
      } else if (tb == Transpose::no) {
        bv.rows += 1;
      } else {
        bv.cols += 1;
      }
      bv.stride = std::max(bv.stride, bv.cols);
      break;
    case 4:  // c of the wrong shape
      cv.rows += 1;
      break;
    case 5:  // c overlapping a or b (a only where b is packed: the call never reads b)
      if (!c.empty() && (!a.empty() || (!b.empty() && !packed))) {
        Buffer<float>& in =
            !a.empty() && (b.empty() || packed || fdp.ConsumeBool()) ? a.buf : b.buf;
        cv.data = in.mem.data() + fdp.ConsumeIntegralInRange<std::size_t>(0, in.mem.size() - 1);
      } else {
        fault = false;
      }
      break;
    case 6:  // sizes whose byte count overflows
      av.rows = huge_size(fdp);
      av.cols = std::max<std::size_t>(av.cols, 1);
      av.stride = std::max(av.stride, av.cols);
      if (av.data == nullptr) av.data = &kSentinel;
      break;
    default:
      fault = false;
  }

  a.buf.snap();
  b.buf.snap();
  c.buf.snap();
  attn::PackedMatrix pb;
  if (packed) {
    const Status ps = attn::pack_matrix(ctx, b.cview(), tb, &pb);
    FUZZ_CHECK(ps.ok(), "pack_matrix: %s", ps.message());
  }
  const Status s = packed ? attn::matmul(ctx, av, ta, pb, cv, alpha, beta)
                          : attn::matmul(ctx, av, ta, bv, tb, cv, alpha, beta);
  FUZZ_CHECK(a.buf.unchanged() && b.buf.unchanged(), "matmul changed an input");
  const std::vector<float> c_fast = c.buf.mem;
  c.buf.mem = c.buf.snapshot;
  const Status r = attn::reference::matmul(av, ta, bv, tb, cv, alpha, beta);
  const std::vector<float> got = c.buf.mem;  // the reference's result
  c.buf.mem = c_fast;
  check_status(s, r, fault, fault_case, "matmul");
  if (!s.ok()) {
    FUZZ_CHECK(c.buf.unchanged(), "matmul wrote c on error");
    return;
  }
  FUZZ_CHECK(matrix_padding_unchanged(c), "matmul wrote outside c");
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      // The bound holds when no float sum or product overflows, and when underflow cannot
      // matter: every product is 0 or far above the subnormals, or alpha cannot magnify the
      // absolute underflow error (at most 2^-150 per product and per sum) beyond 1e-30.
      double mag = 0.0;
      bool finite = std::isfinite(alpha) && (beta == 0.0f || std::isfinite(beta));
      bool tiny = false;
      for (std::size_t p = 0; p < k; ++p) {
        const float x = ta == Transpose::no ? a.at(i, p) : a.at(p, i);
        const float y = tb == Transpose::no ? b.at(p, j) : b.at(j, p);
        finite = finite && std::isfinite(x) && std::isfinite(y);
        const double prod = std::fabs(double(x) * double(y));
        tiny = tiny || (prod != 0.0 && prod < kNoUnderflow);
        mag += prod;
      }
      const float c0 = c.buf.snapshot[i * c.stride + j];
      if (beta != 0.0f) finite = finite && std::isfinite(c0);
      const double scaled = std::fabs(double(alpha)) * mag +
                            (beta != 0.0f ? std::fabs(double(beta) * double(c0)) : 0.0);
      const float fast = c.at(i, j), want = got[i * c.stride + j];
      if (!finite || mag > FLT_MAX / 4 || scaled > FLT_MAX / 4) continue;
      if (tiny && std::fabs(double(alpha)) * double(2 * k + 2) * std::ldexp(1.0, -150) > 1e-30) {
        continue;
      }
      const double tol = attn_test::bounds::matmul(k, scaled);
      FUZZ_CHECK(std::fabs(double(fast) - double(want)) <= tol,
                 "matmul c(%zu, %zu) = %a, reference %a, tolerance %g (m %zu n %zu k %zu, "
                 "alpha %a beta %a, %s)",
                 i, j, fast, want, tol, m, n, k, alpha, beta, attn::isa_name(ctx.isa()));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// exp

void fuzz_exp(FuzzedDataProvider& fdp, attn::Context& ctx) {
  static float dummy_out = 0.0f;
  const bool big = fdp.ConsumeIntegralInRange<int>(0, 15) == 0;
  const std::size_t n = big ? fdp.ConsumeIntegralInRange<std::size_t>(65536, 70000)
                            : fdp.ConsumeIntegralInRange<std::size_t>(0, 300);
  Values val(fdp);
  Buffer<float> x, y;
  x.mem.resize(n);
  for (float& e : x.mem)
    e = val.next();
  for (int p = fdp.ConsumeIntegralInRange<int>(0, 4); p > 0 && n > 0; --p)
    x.mem[fdp.ConsumeIntegralInRange<std::size_t>(0, n - 1)] =
        from_bits(fdp.ConsumeIntegral<std::uint32_t>());
  y.mem.assign(n, kSentinel);
  const bool in_place = fdp.ConsumeBool();
  const float* xp = x.mem.data();
  float* yp = in_place ? x.mem.data() : y.mem.data();
  if (n == 0 && fdp.ConsumeBool()) xp = nullptr, yp = nullptr;
  std::size_t len = n;
  bool fault = true;
  const int fault_case = fdp.ConsumeIntegralInRange<int>(0, 8);
  switch (fault_case) {
    case 1:  // null data with n > 0
      if (n == 0) {
        fault = false;
      } else if (fdp.ConsumeBool()) {
        xp = nullptr;
      } else {
        yp = nullptr;
      }
      break;
    case 2:  // y overlapping x without being x
      if (n >= 3) {
        const std::size_t d = fdp.ConsumeIntegralInRange<std::size_t>(1, (n - 1) / 2);
        len = n - d;
        const bool y_ahead = fdp.ConsumeBool();
        xp = x.mem.data() + (y_ahead ? 0 : d);
        yp = x.mem.data() + (y_ahead ? d : 0);
      } else {
        fault = false;
      }
      break;
    case 3:  // a length whose byte count overflows
      len = huge_size(fdp);
      if (xp == nullptr) xp = &kSentinel;
      if (yp == nullptr) yp = &dummy_out;
      break;
    default:
      fault = false;
  }
  x.snap();
  y.snap();
  const Status s = attn::exp(ctx, xp, yp, len);
  const std::vector<float> x_fast = x.mem, y_fast = y.mem;
  x.mem = x.snapshot;
  y.mem = y.snapshot;
  const Status r = attn::reference::exp(xp, yp, len);
  check_status(s, r, fault, fault_case, "exp");
  if (!s.ok()) {
    x.mem = x_fast;
    y.mem = y_fast;
    FUZZ_CHECK(x.unchanged() && y.unchanged(), "exp wrote on error");
    return;
  }
  if (!in_place) FUZZ_CHECK(same_bits(x_fast, x.snapshot), "exp changed its input");
  const std::vector<float>& out = in_place ? x_fast : y_fast;
  // On a failure, the 16-aligned block of inputs around it (a SIMD kernel sees them together).
  auto block = [&](std::size_t i) {
    std::fprintf(stderr, "x[%zu..]:", i / 16 * 16);
    for (std::size_t j = i / 16 * 16; j < std::min(len, i / 16 * 16 + 16); ++j)
      std::fprintf(stderr, " %a", x.snapshot[j]);
    std::fprintf(stderr, "\n");
  };
  for (std::size_t i = 0; i < len; ++i) {
    const float xi = x.snapshot[i], got = out[i];
    const float want = std::exp(xi);
    if (std::isnan(want)) {
      FUZZ_CHECK(std::isnan(got), "exp(%a) = %a, not NaN (x[%zu] of %zu, %s)", xi, got, i, len,
                 attn::isa_name(ctx.isa()));
    } else if (std::isinf(want) || want == 0.0f) {
      if (got != want) block(i);
      FUZZ_CHECK(got == want, "exp(%a) = %a, C says %a (x[%zu] of %zu, %s, %s)", xi, got, want, i,
                 len, attn::isa_name(ctx.isa()), in_place ? "in place" : "out of place");
    } else {
      FUZZ_CHECK(attn_test::ulp_error(got, std::exp(double(xi))) <= 1.0,
                 "exp(%a) = %a: %g ULP from %a (%s)", xi, got,
                 attn_test::ulp_error(got, std::exp(double(xi))), std::exp(double(xi)),
                 attn::isa_name(ctx.isa()));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// softmax

void fuzz_softmax(FuzzedDataProvider& fdp, attn::Context& ctx) {
  static float dummy_out = 0.0f;
  const bool big = fdp.ConsumeIntegralInRange<int>(0, 15) == 0;
  const std::size_t rows = fdp.ConsumeIntegralInRange<std::size_t>(0, big ? 3 : 6);
  const std::size_t cols = big ? fdp.ConsumeIntegralInRange<std::size_t>(22000, 33000)
                               : fdp.ConsumeIntegralInRange<std::size_t>(0, 70);
  Values val(fdp);
  const bool in_place = fdp.ConsumeBool();
  Matrix x, y;
  make_matrix(fdp, &x, rows, cols, false);
  fill(val, &x);
  for (int p = fdp.ConsumeIntegralInRange<int>(0, 4); p > 0 && !x.buf.mem.empty(); --p)
    x.buf.mem[fdp.ConsumeIntegralInRange<std::size_t>(0, x.buf.mem.size() - 1)] =
        Values::special(fdp.ConsumeIntegral<std::uint8_t>());
  if (rows > 0 && cols > 0 && fdp.ConsumeBool()) {  // a row of -inf: a fully masked row
    const std::size_t i = fdp.ConsumeIntegralInRange<std::size_t>(0, rows - 1);
    for (std::size_t j = 0; j < cols; ++j)
      x.at(i, j) = -attn_test::inf_f();
  }
  if (!in_place) make_matrix(fdp, &y, rows, cols, true);
  MatrixView<const float> xv = x.cview();
  MatrixView<float> yv = in_place ? x.view() : y.view();
  bool fault = true;
  const int fault_case = fdp.ConsumeIntegralInRange<int>(0, 10);
  switch (fault_case) {
    case 1:  // null data with a non-zero size
      if (x.empty()) {
        fault = false;
      } else if (fdp.ConsumeBool()) {
        xv.data = nullptr;
      } else {
        yv.data = nullptr;
      }
      break;
    case 2:  // shapes that differ
      if (yv.rows > 0 && fdp.ConsumeBool()) {
        yv.rows -= 1;
      } else if (yv.cols > 0) {
        yv.cols -= 1;
      } else {
        yv.rows += 1;
      }
      break;
    case 3:  // stride < cols
      if (x.rows > 1 && x.cols > 0) {
        xv.stride = fdp.ConsumeIntegralInRange<std::size_t>(0, x.cols - 1);
      } else {
        fault = false;
      }
      break;
    case 4:  // y overlapping x without being it
      if (!x.empty() && x.buf.mem.size() > 1) {
        yv.data =
            x.buf.mem.data() + fdp.ConsumeIntegralInRange<std::size_t>(1, x.buf.mem.size() - 1);
        yv.stride = x.stride;
      } else {
        fault = false;
      }
      break;
    case 5:  // y at x's data but with another stride (more than one row)
      if (x.rows > 1 && x.cols > 0) {
        yv.data = x.buf.mem.data();
        yv.stride = x.stride + fdp.ConsumeIntegralInRange<std::size_t>(1, 3);
      } else {
        fault = false;
      }
      break;
    case 6:  // sizes whose byte count overflows
      xv.rows = yv.rows = huge_size(fdp);
      xv.cols = yv.cols = std::max<std::size_t>(xv.cols, 1);
      xv.stride = std::max(xv.stride, xv.cols);
      yv.stride = std::max(yv.stride, yv.cols);
      if (xv.data == nullptr) xv.data = &kSentinel;
      if (yv.data == nullptr) yv.data = &dummy_out;
      break;
    default:
      fault = false;
  }
  x.buf.snap();
  y.buf.snap();
  const Status s = attn::softmax(ctx, xv, yv);
  const std::vector<float> x_fast = x.buf.mem, y_fast = y.buf.mem;
  x.buf.mem = x.buf.snapshot;
  y.buf.mem = y.buf.snapshot;
  const Status r = attn::reference::softmax(xv, yv);
  const std::vector<float> x_ref = x.buf.mem, y_ref = y.buf.mem;
  x.buf.mem = x_fast;
  y.buf.mem = y_fast;
  check_status(s, r, fault, fault_case, "softmax");
  if (!s.ok()) {
    FUZZ_CHECK(x.buf.unchanged() && y.buf.unchanged(), "softmax wrote on error");
    return;
  }
  if (!in_place) FUZZ_CHECK(x.buf.unchanged(), "softmax changed its input");
  Matrix& got = in_place ? x : y;
  const std::vector<float>& want = in_place ? x_ref : y_ref;
  FUZZ_CHECK(matrix_padding_unchanged(got), "softmax wrote outside y");
  for (std::size_t i = 0; i < rows; ++i) {
    double row_max = 0.0;
    for (std::size_t j = 0; j < cols; ++j)
      row_max = std::fmax(row_max, want[i * got.stride + j]);
    for (std::size_t j = 0; j < cols; ++j) {
      const float g = got.at(i, j);
      const double w = want[i * got.stride + j];
      if (std::isnan(w)) {
        FUZZ_CHECK(std::isnan(g), "softmax(%zu, %zu) = %a, reference NaN", i, j, g);
        continue;
      }
      const double tol = attn_test::bounds::softmax(w, row_max);
      FUZZ_CHECK(std::fabs(g - w) <= tol, "softmax(%zu, %zu) = %a, reference %a (x = %a, %s)", i, j,
                 g, w, x.buf.snapshot[i * x.stride + j], attn::isa_name(ctx.isa()));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// attention

// The mask of README "Masks", written out independently of attn: may query i of (b, h) attend
// key j (before the additive part)?
struct MaskOracle {
  const attn::Mask* mask;
  std::size_t len_q, len_k;
  Tensor<std::uint8_t>* allowed;
  const std::vector<std::int32_t>* lengths;

  bool attends(std::size_t b, std::size_t h, std::size_t i, std::size_t j) const {
    const __int128 ii = i, jj = j, shift = __int128(len_k) - __int128(len_q);
    if (mask->is_causal) {
      if (jj > ii + (mask->causal_align == attn::CausalAlign::bottom_right ? shift : 0))
        return false;
    }
    if (mask->has_window) {
      const __int128 p = ii + (mask->window_align == attn::CausalAlign::bottom_right ? shift : 0);
      if (jj < p - __int128(mask->window_left) || jj > p + __int128(mask->window_right))
        return false;
    }
    if (mask->key_lengths != nullptr && jj >= (*lengths)[b]) return false;
    if (mask->allowed.data != nullptr) {
      const auto& s = allowed->layout.shape;
      if (allowed->at(s[0] == 1 ? 0 : b, s[1] == 1 ? 0 : h, s[2] == 1 ? 0 : i, j) == 0)
        return false;
    }
    return true;
  }
};

std::size_t pick_window_side(FuzzedDataProvider& fdp) {
  return fdp.PickValueInArray<std::size_t>({0, 1, 2, 3, 5, attn::Mask::kUnbounded,
                                            attn::Mask::kUnbounded - 1, std::size_t{1} << 63,
                                            std::size_t{1} << 32});
}

void fuzz_attention(FuzzedDataProvider& fdp, attn::Context& ctx) {
  const bool big = fdp.ConsumeIntegralInRange<int>(0, 7) == 0;
  const std::size_t B = fdp.ConsumeIntegralInRange<std::size_t>(0, 3);
  const std::size_t Hkv = fdp.ConsumeIntegralInRange<std::size_t>(0, 3);
  const std::size_t Hq = Hkv * fdp.ConsumeIntegralInRange<std::size_t>(1, 3);
  const std::size_t Lq = fdp.ConsumeIntegralInRange<std::size_t>(0, big ? 40 : 9);
  const std::size_t Lk = fdp.ConsumeIntegralInRange<std::size_t>(0, big ? 40 : 9);
  const std::size_t Dk = fdp.ConsumeIntegralInRange<std::size_t>(0, big ? 40 : 9);
  const std::size_t Dv = fdp.ConsumeIntegralInRange<std::size_t>(0, big ? 40 : 9);
  Values val(fdp);
  Tensor<float> q, k, v, out, weights, bias;
  Tensor<std::uint8_t> allowed;
  make_tensor(fdp, &q, {B, Hq, Lq, Dk}, true);
  make_tensor(fdp, &k, {B, Hkv, Lk, Dk}, true);
  make_tensor(fdp, &v, {B, Hkv, Lk, Dv}, true);
  make_tensor(fdp, &out, {B, Hq, Lq, Dv}, false);
  fill(val, &q);
  fill(val, &k);
  fill(val, &v);
  for (int p = fdp.ConsumeIntegralInRange<int>(0, 3); p > 0; --p) {
    Tensor<float>& t = *fdp.PickValueInArray({&q, &k, &v});
    if (!t.buf.mem.empty())
      t.buf.mem[fdp.ConsumeIntegralInRange<std::size_t>(0, t.buf.mem.size() - 1)] =
          from_bits(fdp.ConsumeIntegral<std::uint32_t>());
  }

  attn::AttentionOptions opt;
  if (fdp.ConsumeBool()) {
    opt.mask = attn::Mask::causal(fdp.ConsumeBool() ? attn::CausalAlign::bottom_right
                                                    : attn::CausalAlign::top_left);
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) {
    const std::size_t left = pick_window_side(fdp), right = pick_window_side(fdp);
    opt.mask = opt.mask.with_window(
        left, right,
        fdp.ConsumeBool() ? attn::CausalAlign::bottom_right : attn::CausalAlign::top_left);
  }
  std::vector<std::int32_t> lengths(B);
  if (fdp.ConsumeIntegralInRange<int>(0, 2) == 0) {
    for (auto& len : lengths)
      len = fdp.ConsumeIntegralInRange<std::int32_t>(0, static_cast<std::int32_t>(Lk));
    opt.mask = opt.mask.with_key_lengths(lengths.data());
    static const std::int32_t unused = -1;  // B == 0: never read
    if (B == 0) opt.mask.key_lengths = fdp.ConsumeBool() ? &unused : nullptr;
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 2) == 0) {
    make_tensor(
        fdp, &bias,
        {fdp.ConsumeBool() ? 1 : B, fdp.ConsumeBool() ? 1 : Hq, fdp.ConsumeBool() ? 1 : Lq, Lk},
        true);
    fill(val, &bias);
    for (float& x : bias.buf.mem)
      if (val.bits() % 6 == 0) x = -attn_test::inf_f();
    opt.mask = opt.mask.with_additive(bias.view());
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 2) == 0) {
    make_tensor(
        fdp, &allowed,
        {fdp.ConsumeBool() ? 1 : B, fdp.ConsumeBool() ? 1 : Hq, fdp.ConsumeBool() ? 1 : Lq, Lk},
        true);
    const int density = fdp.ConsumeIntegralInRange<int>(0, 4);  // 0: nothing allowed
    for (auto& x : allowed.buf.mem)
      x = static_cast<int>(val.bits() % 4) < density
              ? static_cast<std::uint8_t>(1 + val.bits() % 255)
              : 0;
    opt.mask = opt.mask.with_allowed(allowed.view());
  }
  if (fdp.ConsumeBool()) {
    make_tensor(fdp, &weights, {B, Hq, Lq, Lk}, false);
    opt.weights = weights.view();
  }
  opt.scale = fdp.PickValueInArray(
      {0.0f, 0.0f, 1.0f, -1.0f, 0.125f, 1e-3f, 1e3f, 1e30f, FLT_TRUE_MIN, FLT_MAX, -0.0f});

  // Poison keys that no query may attend: attn must never read them.
  const std::size_t group = Hkv == 0 ? 1 : Hq / Hkv;
  const MaskOracle oracle{&opt.mask, Lq, Lk, &allowed, &lengths};
  const bool poison = fdp.ConsumeBool();
  if (poison && !k.layout.empty()) {
    std::vector<char> read_k(k.buf.mem.size(), 0), read_v(v.buf.mem.size(), 0);
    std::vector<char> blocked(B * Hkv * Lk, 1);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t h = 0; h < Hq; ++h)
        for (std::size_t i = 0; i < Lq; ++i)
          for (std::size_t j = 0; j < Lk; ++j)
            if (oracle.attends(b, h, i, j)) blocked[(b * Hkv + h / group) * Lk + j] = 0;
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t hk = 0; hk < Hkv; ++hk)
          for (std::size_t j = 0; j < Lk; ++j) {
            const bool blk = blocked[(b * Hkv + hk) * Lk + j];
            for (std::size_t x = 0; x < Dk; ++x) {
              const std::size_t o = k.layout.offset(b, hk, j, x);
              if (pass == 0 && !blk) read_k[o] = 1;
              if (pass == 1 && blk && !read_k[o]) k.buf.mem[o] = attn_test::nan_f();
            }
            for (std::size_t x = 0; x < Dv; ++x) {
              const std::size_t o = v.layout.offset(b, hk, j, x);
              if (pass == 0 && !blk) read_v[o] = 1;
              if (pass == 1 && blk && !read_v[o])
                v.buf.mem[o] = x % 2 ? attn_test::inf_f() : attn_test::nan_f();
            }
          }
    }
  }

  TensorView<const float> qv = q.view(), kv = k.view(), vv = v.view();
  TensorView<float> ov = out.view();
  attn::AttentionOptions o = opt;
  Tensor<float>* inputs[] = {&q, &k, &v, &bias};
  std::vector<std::int32_t> bad;
  bool fault = true;
  const int fault_case = fdp.ConsumeIntegralInRange<int>(0, 24);
  switch (fault_case) {
    case 1:  // null data with a non-zero size
      if (!q.layout.empty()) {
        qv.data = nullptr;
      } else if (!out.layout.empty()) {
        ov.data = nullptr;
      } else {
        fault = false;
      }
      break;
    case 2: {  // a last stride other than 1, a fault where that dimension holds 2 or more
      const std::ptrdiff_t st = fdp.PickValueInArray<std::ptrdiff_t>({0, 2, -1, 7});
      // A view with no element, or one per row, ignores strides[3] (README "Overlap").
      const auto used = [](const auto& t) {
        for (std::size_t n : t.shape)
          if (n == 0) return false;
        return t.shape[3] > 1;
      };
      switch (fdp.ConsumeIntegralInRange<int>(0, 4)) {
        case 0:
          qv.strides[3] = st;
          fault = used(qv);
          break;
        case 1:
          kv.strides[3] = st;
          fault = used(kv);
          break;
        case 2:
          vv.strides[3] = st;
          fault = used(vv);
          break;
        case 3:
          ov.strides[3] = st;
          fault = used(ov);
          break;
        default:
          o.weights = weights.view();
          o.weights.data = o.weights.data ? o.weights.data : const_cast<float*>(&kSentinel);
          o.weights.strides[3] = st;
          // Without weights asked for, the view is the empty tensor's, shape [0, 0, 0, 0]: a fault
          // unless it is [B, Hq, Lq, Lk].
          fault = used(o.weights) || o.weights.shape != std::array<std::size_t, 4>{B, Hq, Lq, Lk};
      }
      break;
    }
    case 3:  // shapes that do not match
      switch (fdp.ConsumeIntegralInRange<int>(0, 5)) {
        case 0:
          kv.shape[0] += 1;
          break;
        case 1:
          kv.shape[3] += 1;
          break;
        case 2:
          vv.shape[1] += 1;
          break;
        case 3:
          vv.shape[2] += 1;
          break;
        case 4:
          ov.shape[fdp.ConsumeIntegralInRange<int>(0, 3)] += 1;
          break;
        default:
          o.weights = weights.view();
          o.weights.data = o.weights.data ? o.weights.data : const_cast<float*>(&kSentinel);
          o.weights.shape[fdp.ConsumeIntegralInRange<int>(0, 3)] += 1;
      }
      break;
    case 4:  // Hq not a multiple of Hkv
      if (Hkv >= 2) {
        qv.shape[1] += 1;
        ov.shape[1] += 1;
      } else if (Hkv == 0) {
        qv.shape[1] = 1;
        ov.shape[1] = 1;
      } else {
        fault = false;
      }
      break;
    case 5:  // key lengths out of range
      if (B > 0) {
        bad = lengths;
        bad[fdp.ConsumeIntegralInRange<std::size_t>(0, B - 1)] = fdp.PickValueInArray<std::int32_t>(
            {-1, INT32_MIN, INT32_MAX, static_cast<std::int32_t>(Lk + 1)});
        o.mask.key_lengths = bad.data();
      } else {
        fault = false;
      }
      break;
    case 6: {  // a mask that does not broadcast
      const bool use_bias = fdp.ConsumeBool();
      const int d = fdp.ConsumeIntegralInRange<int>(0, 3);
      Shape4 shape = {B, Hq, Lq, Lk};
      shape[d] = d < 3 ? (shape[d] == 2 ? 3 : 2) : shape[d] + 1;  // never 1 or the right size
      if (use_bias) {
        o.mask.additive = bias.view();
        o.mask.additive.data = o.mask.additive.data ? o.mask.additive.data : &kSentinel;
        o.mask.additive.shape = shape;
      } else {
        o.mask.allowed = allowed.view();
        static const std::uint8_t one = 1;
        o.mask.allowed.data = o.mask.allowed.data ? o.mask.allowed.data : &one;
        o.mask.allowed.shape = shape;
      }
      break;
    }
    case 7:  // a non-finite scale
      o.scale = fdp.PickValueInArray(
          {attn_test::nan_f(), attn_test::inf_f(), -attn_test::inf_f(), from_bits(0xffc00001u)});
      break;
    case 8: {  // out overlapping an input
      Tensor<float>& in = *fdp.PickValueInArray(inputs);
      if (!out.layout.empty() && !in.layout.empty() && (&in != &bias || o.mask.additive.data)) {
        ov.data =
            in.buf.mem.data() + fdp.ConsumeIntegralInRange<std::size_t>(0, in.layout.extent - 1);
      } else if (!out.layout.empty() && o.mask.key_lengths != nullptr && B > 0) {
        ov.data = reinterpret_cast<float*>(lengths.data());
      } else {
        fault = false;
      }
      break;
    }
    case 9: {  // weights overlapping out or an input
      Tensor<float>& in = fdp.ConsumeBool() ? out : *fdp.PickValueInArray(inputs);
      if (o.weights.data != nullptr && !weights.layout.empty() && !in.layout.empty() &&
          (&in != &bias || o.mask.additive.data)) {
        o.weights.data =
            in.buf.mem.data() + fdp.ConsumeIntegralInRange<std::size_t>(0, in.layout.extent - 1);
      } else {
        fault = false;
      }
      break;
    }
    case 10: {  // an output whose elements alias
      const bool w = o.weights.data != nullptr && fdp.ConsumeBool();
      Layout4 l = w ? weights.layout : out.layout;
      const int d = fdp.ConsumeIntegralInRange<int>(0, 2);
      l.strides[d] = fdp.ConsumeIntegralInRange<std::ptrdiff_t>(0, 2);
      if (fdp.ConsumeBool()) l.strides[d] = -l.strides[d];
      if (self_aliases(l)) {
        (w ? o.weights.strides : ov.strides)[d] = l.strides[d];
      } else {
        fault = false;
      }
      break;
    }
    case 11: {  // sizes whose byte count overflows
      TensorView<const float>& t = *fdp.PickValueInArray({&qv, &kv, &vv});
      const int d = fdp.ConsumeIntegralInRange<int>(0, 3);
      if (fdp.ConsumeBool()) {
        t.shape[d] = huge_size(fdp);
        if (d < 3 && t.strides[d] == 0) t.strides[d] = 1;
        for (int e = 0; e < 4; ++e)
          if (e != d && t.shape[e] == 0) t.shape[e] = 1;
      } else {
        for (auto& s : t.shape)
          s = std::max<std::size_t>(s, 2);
        t.strides[std::min(d, 2)] = fdp.PickValueInArray<std::ptrdiff_t>(
            {PTRDIFF_MIN, PTRDIFF_MAX, PTRDIFF_MAX / 2, -(PTRDIFF_MAX / 3)});
      }
      if (t.data == nullptr) t.data = &kSentinel;
      break;
    }
    default:
      fault = false;
  }

  for (Tensor<float>* t : {&q, &k, &v, &bias, &out, &weights})
    t->buf.snap();
  allowed.buf.snap();
  const std::vector<std::int32_t> lengths0 = lengths;
  const Status s = attn::attention(ctx, qv, kv, vv, ov, o);
  FUZZ_CHECK(q.buf.unchanged() && k.buf.unchanged() && v.buf.unchanged() && bias.buf.unchanged() &&
                 allowed.buf.unchanged() && lengths == lengths0,
             "attention changed an input (%s)", s.message());
  // The reference, on copies of the outputs.
  const std::vector<float> out_fast = out.buf.mem, w_fast = weights.buf.mem;
  out.buf.mem = out.buf.snapshot;
  weights.buf.mem = weights.buf.snapshot;
  const Status r = attn::reference::attention(qv, kv, vv, ov, o);
  const std::vector<float> out_ref = out.buf.mem, w_ref = weights.buf.mem;
  out.buf.mem = out_fast;
  weights.buf.mem = w_fast;
  check_status(s, r, fault, fault_case, "attention");
  if (!s.ok()) {
    FUZZ_CHECK(out.buf.unchanged() && weights.buf.unchanged(), "attention wrote on error: %s",
               s.message());
    return;
  }
  FUZZ_CHECK(tensor_padding_unchanged(out), "attention wrote outside out");
  FUZZ_CHECK(o.weights.data == nullptr || tensor_padding_unchanged(weights),
             "attention wrote outside the weights");

  const bool has_w = o.weights.data != nullptr;
  // Printed with a failure: the problem in words.
  auto describe = [&] {
    std::fprintf(stderr,
                 "attention B%zu Hq%zu Hkv%zu Lq%zu Lk%zu Dk%zu Dv%zu scale %a causal %d(%d) "
                 "window %d [%zu, %zu](%d) lengths %d additive %d allowed %d weights %d poison "
                 "%d, %s, %d threads\n",
                 B, Hq, Hkv, Lq, Lk, Dk, Dv, opt.scale, opt.mask.is_causal,
                 int(opt.mask.causal_align), opt.mask.has_window, opt.mask.window_left,
                 opt.mask.window_right, int(opt.mask.window_align), opt.mask.key_lengths != nullptr,
                 opt.mask.additive.data != nullptr, opt.mask.allowed.data != nullptr, has_w, poison,
                 attn::isa_name(ctx.isa()), ctx.num_threads());
    if (std::getenv("ATTN_FUZZ_VERBOSE") == nullptr) return;
    for (Tensor<float>* t : {&q, &k, &v}) {
      const char* name = t == &q ? "q" : (t == &k ? "k" : "v");
      const auto& l = t->layout;
      std::fprintf(stderr, "%s shape [%zu %zu %zu %zu] strides [%td %td %td %td]:", name,
                   l.shape[0], l.shape[1], l.shape[2], l.shape[3], l.strides[0], l.strides[1],
                   l.strides[2], l.strides[3]);
      for (float e : t->buf.mem)
        std::fprintf(stderr, " %a", e);
      std::fprintf(stderr, "\n");
    }
  };
  const double scale =
      opt.scale != 0.0f ? double(opt.scale) : (Dk == 0 ? 1.0 : 1.0 / std::sqrt(double(Dk)));
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < Hq; ++h) {
      const std::size_t hk = h / group;
      for (std::size_t i = 0; i < Lq; ++i) {
        auto got_o = [&](std::size_t x) { return out.buf.mem[out.layout.offset(b, h, i, x)]; };
        auto ref_o = [&](std::size_t x) { return out_ref[out.layout.offset(b, h, i, x)]; };
        auto got_w = [&](std::size_t j) { return w_fast[weights.layout.offset(b, h, i, j)]; };
        auto ref_w = [&](std::size_t j) { return w_ref[weights.layout.offset(b, h, i, j)]; };
        // What the documented rules fix whatever the values.
        std::size_t attended = 0;
        double s_abs = 0.0, dot_max = 0.0, vmax = 0.0;
        bool finite = true, tiny = false;
        for (std::size_t j = 0; j < Lk; ++j) {
          if (!oracle.attends(b, h, i, j)) continue;
          ++attended;
          double dot = 0.0;
          for (std::size_t x = 0; x < Dk; ++x) {
            const float qx = q.at(b, h, i, x), kx = k.at(b, hk, j, x);
            finite = finite && std::isfinite(qx) && std::isfinite(kx);
            const double prod = std::fabs(double(qx) * double(kx));
            tiny = tiny || (prod != 0.0 && prod < kNoUnderflow);
            dot += prod;
          }
          double bj = 0.0;
          if (o.mask.additive.data != nullptr) {
            const auto& bs = bias.layout.shape;
            const float bf = bias.at(bs[0] == 1 ? 0 : b, bs[1] == 1 ? 0 : h, bs[2] == 1 ? 0 : i, j);
            bj = std::isinf(bf) ? 0.0 : std::fabs(double(bf));  // NaN: the row is NaN anyway
          }
          dot_max = std::fmax(dot_max, dot);
          s_abs = std::fmax(s_abs, std::fabs(scale) * dot + bj);
          for (std::size_t x = 0; x < Dv; ++x) {
            finite = finite && std::isfinite(v.at(b, hk, j, x));
            vmax = std::fmax(vmax, std::fabs(v.at(b, hk, j, x)));
          }
        }
        if (attended == 0) {
          for (std::size_t x = 0; x < Dv; ++x)
            FUZZ_CHECK(got_o(x) == 0.0f, "fully masked row: out[%zu,%zu,%zu,%zu] = %a", b, h, i, x,
                       got_o(x));
        }
        bool row_nan = false;
        if (has_w && Lk > 0) {
          row_nan = std::isnan(got_w(0));
          for (std::size_t j = 0; j < Lk; ++j) {
            FUZZ_CHECK(std::isnan(got_w(j)) == row_nan,
                       "weights row [%zu,%zu,%zu] is NaN in some places only", b, h, i);
            if (!row_nan && !oracle.attends(b, h, i, j)) {
              FUZZ_CHECK(got_w(j) == 0.0f, "blocked key %zu has weight %a", j, got_w(j));
            }
          }
          if (row_nan) {
            for (std::size_t x = 0; x < Dv; ++x)
              FUZZ_CHECK(std::isnan(got_o(x)), "NaN weights row but out[%zu] = %a", x, got_o(x));
          }
        }
        // Where float cannot overflow, the reference's answer, within the Accuracy bound.
        const double limit = FLT_MAX / 4;
        if (!finite || dot_max > limit || s_abs > limit || double(Lk + 1) * vmax > limit) continue;
        // Underflowing products (see kNoUnderflow) err by up to 2^-150 each in the dot product,
        // which the scale magnifies; compare only where that stays below 1e-30.
        if (tiny && std::fabs(scale) * double(2 * Dk + 2) * std::ldexp(1.0, -150) > 1e-30) continue;
        const double f = attn_test::bounds::attention_factor(Dk, Lk, s_abs);
        // The bound is first order in the score error: it holds while f <= 1 (e^x - 1 <= 2x for
        // x <= 1.25). Larger S means score errors of order 1 (a float dot product of large
        // vectors), and no relative accuracy of the weights.
        if (f > 1.0) continue;
        for (std::size_t x = 0; x < Dv; ++x) {
          const float g = got_o(x), w = ref_o(x);
          const bool ok =
              std::isnan(w) ? std::isnan(g) : std::fabs(double(g) - double(w)) <= f * vmax + 1e-30;
          if (!ok) describe();
          FUZZ_CHECK(ok,
                     "out[%zu,%zu,%zu,%zu] = %a, reference %a, tolerance %g (B%zu Hq%zu Hkv%zu "
                     "Lq%zu Lk%zu Dk%zu Dv%zu, %s, %d threads)",
                     b, h, i, x, g, w, f * vmax + 1e-30, B, Hq, Hkv, Lq, Lk, Dk, Dv,
                     attn::isa_name(ctx.isa()), ctx.num_threads());
        }
        if (!has_w) continue;
        for (std::size_t j = 0; j < Lk; ++j) {
          const float g = got_w(j), w = ref_w(j);
          const bool ok =
              std::isnan(w) ? std::isnan(g) : std::fabs(double(g) - double(w)) <= f * w + 1e-30;
          if (!ok) describe();
          FUZZ_CHECK(ok, "weights[%zu,%zu,%zu,%zu] = %a, reference %a (%s)", b, h, i, j, g, w,
                     attn::isa_name(ctx.isa()));
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// self_attention

void fuzz_self_attention(FuzzedDataProvider& fdp, attn::Context& ctx) {
  const std::size_t batch = fdp.ConsumeIntegralInRange<std::size_t>(0, 3);
  // With batch == 0 the sequence length is 0 by definition (x has no rows to divide).
  const std::size_t seq = batch == 0 ? 0 : fdp.ConsumeIntegralInRange<std::size_t>(0, 7);
  const std::size_t d_model = fdp.ConsumeIntegralInRange<std::size_t>(0, 9);
  const std::size_t kv_heads = fdp.ConsumeIntegralInRange<std::size_t>(1, 3);
  const std::size_t heads = kv_heads * fdp.ConsumeIntegralInRange<std::size_t>(1, 2);
  const std::size_t dk = fdp.ConsumeIntegralInRange<std::size_t>(1, 6);
  const std::size_t dv = fdp.ConsumeIntegralInRange<std::size_t>(1, 6);
  const bool out_proj = fdp.ConsumeBool();
  const std::size_t d_out = out_proj ? fdp.ConsumeIntegralInRange<std::size_t>(0, 8) : heads * dv;
  const std::size_t rows = batch * seq;
  Values val(fdp);
  Matrix x, wq, wk, wv, wo, out;
  std::vector<float> bq(heads * dk), bk(kv_heads * dk), bv(kv_heads * dv), bo(d_out);
  make_matrix(fdp, &x, rows, d_model, false);
  make_matrix(fdp, &wq, d_model, heads * dk, false);
  make_matrix(fdp, &wk, d_model, kv_heads * dk, false);
  make_matrix(fdp, &wv, d_model, kv_heads * dv, false);
  make_matrix(fdp, &wo, heads * dv, d_out, false);
  make_matrix(fdp, &out, rows, d_out, true);
  for (Matrix* m : {&x, &wq, &wk, &wv, &wo})
    fill(val, m);
  for (auto* b : {&bq, &bk, &bv, &bo})
    for (float& e : *b)
      e = val.next();
  attn::SelfAttentionParams p;
  p.q = {wq.cview(), fdp.ConsumeBool() ? bq.data() : nullptr};
  p.k = {wk.cview(), fdp.ConsumeBool() ? bk.data() : nullptr};
  p.v = {wv.cview(), fdp.ConsumeBool() ? bv.data() : nullptr};
  if (out_proj) {
    p.o = {wo.cview(), fdp.ConsumeBool() ? bo.data() : nullptr};
    if (p.o.weight.data == nullptr) p.o.weight.data = &kSentinel;  // present though empty
  }
  p.num_heads = heads;
  p.num_kv_heads = kv_heads == heads && fdp.ConsumeBool() ? 0 : kv_heads;
  if (fdp.ConsumeBool()) p.attention.mask = attn::Mask::causal();
  std::vector<std::int32_t> lengths(batch);
  if (fdp.ConsumeIntegralInRange<int>(0, 2) == 0 && batch > 0) {
    for (auto& len : lengths)
      len = fdp.ConsumeIntegralInRange<std::int32_t>(0, static_cast<std::int32_t>(seq));
    p.attention.mask = p.attention.mask.with_key_lengths(lengths.data());
  }
  Tensor<float> bias, weights;
  if (fdp.ConsumeIntegralInRange<int>(0, 2) == 0) {
    make_tensor(fdp, &bias, {fdp.ConsumeBool() ? 1 : batch, 1, fdp.ConsumeBool() ? 1 : seq, seq},
                true);
    fill(val, &bias);
    for (float& e : bias.buf.mem)
      if (val.bits() % 5 == 0) e = -attn_test::inf_f();
    p.attention.mask = p.attention.mask.with_additive(bias.view());
  }
  if (fdp.ConsumeBool()) {
    make_tensor(fdp, &weights, {batch, heads, seq, seq}, false);
    p.attention.weights = weights.view();
  }
  p.attention.scale = fdp.PickValueInArray({0.0f, 0.0f, 1.0f, -0.5f});
  MatrixView<const float> xv = x.cview();
  MatrixView<float> ov = out.view();
  std::size_t batch_arg = batch;

  bool fault = true;
  const int fault_case = fdp.ConsumeIntegralInRange<int>(0, 14);
  switch (fault_case) {
    case 1:  // rows not a multiple of batch
      if (rows > 0 && batch > 1 && rows % (batch + 1) != 0) {
        batch_arg = batch + 1;
      } else if (rows > 0) {
        batch_arg = 0;
      } else {
        fault = false;
      }
      break;
    case 2:
      p.num_heads = 0;
      break;
    case 3:  // num_heads not a multiple of num_kv_heads
      p.num_kv_heads = heads + 1;
      break;
    case 4: {  // a weight with the wrong number of rows
      attn::Projection& pr = *fdp.PickValueInArray({&p.q, &p.k, &p.v});
      pr.weight.rows += 1;
      if (pr.weight.rows > 1) pr.weight.stride = std::max(pr.weight.stride, pr.weight.cols);
      if (pr.weight.data == nullptr) pr.weight.data = &kSentinel;
      break;
    }
    case 5:  // q.weight columns not a positive multiple of num_heads (heads + 1 > 1 columns)
      if (heads > 1) {
        p.q.weight.cols = heads * dk + 1;
        p.q.weight.stride = std::max(p.q.weight.stride, p.q.weight.cols);
      } else {
        p.q.weight.cols = 0;
      }
      break;
    case 6:  // out of the wrong shape
      ov.cols += 1;
      ov.stride = std::max(ov.stride, ov.cols);
      if (ov.data == nullptr && ov.rows > 0) ov.data = const_cast<float*>(&kSentinel);
      break;
    case 7:  // null weight data
      if (d_model > 0) {
        p.v.weight.data = nullptr;
      } else {
        fault = false;
      }
      break;
    case 8: {  // out overlapping x, a weight or a bias
      Matrix& in = *fdp.PickValueInArray({&x, &wq, &wk, &wv});
      if (!out.empty() && !in.empty()) {
        ov.data =
            in.buf.mem.data() + fdp.ConsumeIntegralInRange<std::size_t>(0, in.buf.mem.size() - 1);
      } else if (!out.empty() && p.q.bias != nullptr) {
        ov.data = bq.data();
      } else {
        fault = false;
      }
      break;
    }
    case 9:  // weights overlapping out
      if (p.attention.weights.data != nullptr && !weights.layout.empty() && !out.empty()) {
        p.attention.weights.data = out.buf.mem.data();
      } else {
        fault = false;
      }
      break;
    case 10:  // sizes whose byte count overflows
      xv.rows = huge_size(fdp);
      xv.cols = std::max<std::size_t>(xv.cols, 1);
      xv.stride = std::max(xv.stride, xv.cols);
      if (xv.data == nullptr) xv.data = &kSentinel;
      break;
    default:
      fault = false;
  }

  for (Matrix* m : {&x, &wq, &wk, &wv, &wo, &out})
    m->buf.snap();
  for (Tensor<float>* t : {&bias, &weights})
    t->buf.snap();
  const std::vector<float> b0 = bq, b1 = bk, b2 = bv, b3 = bo;
  const Status s = attn::self_attention(ctx, xv, batch_arg, p, ov);
  FUZZ_CHECK(x.buf.unchanged() && wq.buf.unchanged() && wk.buf.unchanged() && wv.buf.unchanged() &&
                 wo.buf.unchanged() && bias.buf.unchanged() && same_bits(b0, bq) &&
                 same_bits(b1, bk) && same_bits(b2, bv) && same_bits(b3, bo),
             "self_attention changed an input (%s)", s.message());
  const std::vector<float> out_fast = out.buf.mem, w_fast = weights.buf.mem;
  out.buf.mem = out.buf.snapshot;
  weights.buf.mem = weights.buf.snapshot;
  const Status r = attn::reference::self_attention(xv, batch_arg, p, ov);
  const std::vector<float> out_ref = out.buf.mem, w_ref = weights.buf.mem;
  out.buf.mem = out_fast;
  weights.buf.mem = w_fast;
  check_status(s, r, fault, fault_case, "self_attention");
  if (!s.ok()) {
    FUZZ_CHECK(out.buf.unchanged() && weights.buf.unchanged(), "self_attention wrote on error: %s",
               s.message());
    return;
  }
  FUZZ_CHECK(matrix_padding_unchanged(out), "self_attention wrote outside out");
  FUZZ_CHECK(p.attention.weights.data == nullptr || tensor_padding_unchanged(weights),
             "self_attention wrote outside the weights");
  if (!val.tame()) return;  // the bound assumes no overflow anywhere

  // The bound of tests/test_self_attention.cpp.
  auto proj_max = [&](const Matrix& w, const float* b) {
    double best = 0.0;
    for (std::size_t r0 = 0; r0 < rows; ++r0) {
      for (std::size_t c = 0; c < w.cols; ++c) {
        double acc = b ? std::fabs(b[c]) : 0.0;
        for (std::size_t t = 0; t < d_model; ++t)
          acc += std::fabs(double(x.buf.mem[r0 * x.stride + t]) * w.buf.mem[t * w.stride + c]);
        best = std::fmax(best, acc);
      }
    }
    return best;
  };
  const double pq = proj_max(wq, p.q.bias), pk = proj_max(wk, p.k.bias),
               pv = proj_max(wv, p.v.bias);
  double bias_abs = 0.0;
  for (float e : bias.buf.mem)
    if (std::isfinite(e)) bias_abs = std::fmax(bias_abs, std::fabs(e));
  double o_abs = 0.0, o_col = 0.0;
  if (out_proj) {
    for (std::size_t c = 0; c < d_out; ++c) {
      double col = 0.0;
      for (std::size_t t = 0; t < heads * dv; ++t)
        col += std::fabs(wo.buf.mem[t * wo.stride + c]);
      o_col = std::fmax(o_col, col);
      o_abs = std::fmax(o_abs, pv * col + (p.o.bias ? std::fabs(bo[c]) : 0.0));
    }
  }
  const double scale = p.attention.scale != 0.0f ? p.attention.scale : 1.0 / std::sqrt(double(dk));
  const auto tol = attn_test::bounds::self_attention(d_model, dk, seq, heads * dv, pq, pk, pv,
                                                     scale, bias_abs, out_proj, o_abs, o_col);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t c = 0; c < d_out; ++c) {
      const float g = out.at(i, c), w = out_ref[i * out.stride + c];
      FUZZ_CHECK(std::fabs(double(g) - double(w)) <= tol.out,
                 "self_attention out(%zu, %zu) = %a, reference %a, tolerance %g (%s)", i, c, g, w,
                 tol.out, attn::isa_name(ctx.isa()));
    }
  }
  if (p.attention.weights.data == nullptr) return;
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t i = 0; i < seq; ++i)
        for (std::size_t j = 0; j < seq; ++j) {
          const std::size_t off = weights.layout.offset(b, h, i, j);
          const float g = w_fast[off], w = w_ref[off];
          FUZZ_CHECK(std::fabs(double(g) - double(w)) <= tol.weights,
                     "self_attention weights[%zu,%zu,%zu,%zu] = %a, reference %a (%s)", b, h, i, j,
                     g, w, attn::isa_name(ctx.isa()));
        }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider fdp(data, size);
  static std::vector<attn::Isa> isas = [] {
    std::vector<attn::Isa> v;
    for (attn::Isa isa : attn::kAllIsas)
      if (attn::isa_supported(isa)) v.push_back(isa);
    return v;
  }();
  attn::Context ctx;
  FUZZ_CHECK(ctx.set_isa(isas[fdp.ConsumeIntegralInRange<std::size_t>(0, isas.size() - 1)]).ok(),
             "set_isa");
  FUZZ_CHECK(ctx.set_num_threads(fdp.ConsumeIntegralInRange<int>(1, 4)).ok(), "threads");
  switch (fdp.ConsumeIntegralInRange<int>(0, 5)) {
    case 0:
      fuzz_matmul(fdp, ctx);
      break;
    case 1:
      fuzz_exp(fdp, ctx);
      break;
    case 2:
      fuzz_softmax(fdp, ctx);
      break;
    case 3:
      fuzz_attention(fdp, ctx);
      break;
    case 4:
      fuzz_self_attention(fdp, ctx);
      break;
    default:
      fuzz_context(fdp, ctx);
  }
  return 0;
}
