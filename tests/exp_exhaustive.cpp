// attn-exp-exhaustive: attn::exp on every float input (or every N-th bit pattern), on every ISA
// this machine and build support (or only ATTN_ISA), against float64 std::exp.
//
//   attn-exp-exhaustive              all 2^32 inputs
//   attn-exp-exhaustive --every N    the bit patterns 0, N, 2N, ... (N odd varies every mantissa
//   bit)
//   attn-exp-exhaustive --bits LO HI  only the bit patterns LO..HI (hex, inclusive), e.g.
//   0xc2ae0000 0xc2d00000: x in [-104, -87], every input whose result is subnormal
//
// Checks, per ISA and input (exit status 1 if any fails):
//   - |y - e^x| <= 1 ulp(e^x), ulp_error of support/test_support.hpp: subnormal results in units
//     of 2^-149; where e^x rounds to +inf (x > 88.72284) y must be +inf and +inf nowhere else;
//   - every subnormal result is the correctly rounded float (issue 3: "correctly rounded
//     subnormal results down to -103.97");
//   - C's special values: exp(-inf) = +0, exp(+inf) = +inf, NaN in gives NaN out, y == +0
//     exactly where e^x rounds to 0 (x below about -103.97), y never negative or -0;
//   - the floating-point environment's control bits (rounding mode, MXCSR/FPCR) are unchanged.
// The reference is computed once per input and every ISA is checked in the same pass; OpenMP
// threads split the inputs (OMP_NUM_THREADS, default: every core).
#include <omp.h>

#include <algorithm>
#include <cfenv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "support/test_support.hpp"

namespace {

using attn_test::ulp_error;

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
std::uint32_t to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// The control bits of the floating-point environment (not the sticky exception flags, which
// exp may raise like any arithmetic).
std::uint64_t fp_control() {
  std::uint64_t c = static_cast<std::uint64_t>(std::fegetround());
#if defined(__x86_64__) || defined(__i386__)
  c |= static_cast<std::uint64_t>(_mm_getcsr() & ~0x3Fu) << 8;  // FTZ, DAZ, masks, rounding
#elif defined(__aarch64__)
  std::uint64_t fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  c |= fpcr << 8;
#endif
  return c;
}

struct Stats {
  double max_ulp = 0.0;           // over the results that are not correctly rounded
  std::uint32_t argmax = 0;       // bit pattern of x
  std::uint64_t not_rounded = 0;  // results that differ from the correctly rounded float
  std::uint64_t subnormal = 0;    // results whose correct rounding is subnormal
  std::uint64_t subnormal_not_rounded = 0;
  std::uint64_t over_1ulp = 0;      // results more than 1 ulp away
  std::uint64_t special_bad = 0;    // C special-value rule broken
  std::uint32_t first_special = 0;  // its first x (smallest bit pattern)
  std::uint32_t first_over = 0;

  void merge(const Stats& o) {
    if (o.max_ulp > max_ulp || (o.max_ulp == max_ulp && o.max_ulp > 0 && o.argmax < argmax)) {
      max_ulp = o.max_ulp;
      argmax = o.argmax;
    }
    if (o.over_1ulp && (!over_1ulp || o.first_over < first_over)) first_over = o.first_over;
    if (o.special_bad && (!special_bad || o.first_special < first_special)) {
      first_special = o.first_special;
    }
    not_rounded += o.not_rounded;
    subnormal += o.subnormal;
    subnormal_not_rounded += o.subnormal_not_rounded;
    over_1ulp += o.over_1ulp;
    special_bad += o.special_bad;
  }
};

// C's rules beyond the ULP bound. want_f is e^x rounded to float.
bool special_ok(float x, float got, float want_f) {
  if (std::isnan(x)) return std::isnan(got);
  if (std::isnan(got) || std::signbit(got)) return false;
  if (x == -std::numeric_limits<float>::infinity()) return got == 0.0f;
  if (want_f == 0.0f) return got == 0.0f;  // underflow: +0 exactly, as expf
  return true;
}

void check_block(std::uint32_t begin_bits, std::size_t n, std::uint32_t step,
                 const std::vector<attn::Context*>& ctxs, std::vector<float>& x,
                 std::vector<float>& y, std::vector<double>& want, std::vector<Stats>& stats) {
  for (std::size_t i = 0; i < n; ++i) {
    const float xi = from_bits(begin_bits + static_cast<std::uint32_t>(i) * step);
    x[i] = xi;
    want[i] = std::exp(static_cast<double>(xi));
  }
  for (std::size_t k = 0; k < ctxs.size(); ++k) {
    if (!attn::exp(*ctxs[k], x.data(), y.data(), n).ok()) {
      std::fprintf(stderr, "attn::exp failed\n");
      std::exit(2);
    }
    Stats& s = stats[k];
    for (std::size_t i = 0; i < n; ++i) {
      const float got = y[i];
      const float want_f = static_cast<float>(want[i]);
      const std::uint32_t xb = to_bits(x[i]);
      if (!special_ok(x[i], got, want_f)) {
        if (!s.special_bad || xb < s.first_special) s.first_special = xb;
        ++s.special_bad;
      }
      const bool subnormal = want_f != 0.0f && want_f < std::numeric_limits<float>::min();
      s.subnormal += subnormal;
      if (to_bits(got) == to_bits(want_f) || (std::isnan(got) && std::isnan(want_f))) continue;
      const double e = ulp_error(got, want[i]);
      ++s.not_rounded;
      s.subnormal_not_rounded += subnormal;
      if (e > s.max_ulp || (e == s.max_ulp && xb < s.argmax)) {
        s.max_ulp = e;
        s.argmax = xb;
      }
      if (!(e <= 1.0)) {
        if (!s.over_1ulp || xb < s.first_over) s.first_over = xb;
        ++s.over_1ulp;
      }
    }
  }
}

// The first x >= 80 whose exp is +inf and the last x <= -80 whose exp is not 0, scanning the
// floats in between (for the report).
void thresholds(attn::Context* ctx, float* first_inf, float* last_nonzero) {
  std::vector<float> x, y;
  for (std::uint32_t b = to_bits(80.0f); b <= to_bits(90.0f); ++b)
    x.push_back(from_bits(b));
  y.resize(x.size());
  if (ctx) {
    (void)attn::exp(*ctx, x.data(), y.data(), x.size());
  } else {
    for (std::size_t i = 0; i < x.size(); ++i)
      y[i] = static_cast<float>(std::exp(static_cast<double>(x[i])));
  }
  *first_inf = NAN;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isinf(y[i])) {
      *first_inf = x[i];
      break;
    }
  }
  x.clear();
  for (std::uint32_t b = to_bits(-80.0f); b <= to_bits(-110.0f); ++b)
    x.push_back(from_bits(b));
  y.resize(x.size());
  if (ctx) {
    (void)attn::exp(*ctx, x.data(), y.data(), x.size());
  } else {
    for (std::size_t i = 0; i < x.size(); ++i)
      y[i] = static_cast<float>(std::exp(static_cast<double>(x[i])));
  }
  *last_nonzero = NAN;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (y[i] != 0.0f) *last_nonzero = x[i];
  }
}

std::string cpu_model() {
  std::string model = "unknown CPU";
  if (std::FILE* f = std::fopen("/proc/cpuinfo", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, f)) {
      if (std::strncmp(line, "model name", 10) == 0) {
        const char* p = std::strchr(line, ':');
        if (p) {
          model = p + 2;
          while (!model.empty() && (model.back() == '\n' || model.back() == ' '))
            model.pop_back();
        }
        break;
      }
    }
    std::fclose(f);
  }
  return model;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t every = 1, lo = 0, hi = 0xFFFFFFFFu;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--every") == 0 && i + 1 < argc) {
      every = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--bits") == 0 && i + 2 < argc) {
      lo = std::strtoull(argv[++i], nullptr, 16);
      hi = std::strtoull(argv[++i], nullptr, 16);
    } else {
      std::fprintf(stderr, "usage: %s [--every N] [--bits LO HI]\n", argv[0]);
      return 2;
    }
  }
  if (every == 0 || every > (1ull << 31) || lo > hi || hi > 0xFFFFFFFFu) {
    std::fprintf(stderr, "need 1 <= N <= 2^31 and LO <= HI <= 0xffffffff\n");
    return 2;
  }
  const std::vector<attn::Isa> isas = attn_test::test_isas();
  const std::uint64_t total = (hi - lo) / every + 1;
  constexpr std::uint64_t kBlock = 1 << 14;
  const std::uint64_t blocks = (total + kBlock - 1) / kBlock;
  const int threads = omp_get_max_threads();
  std::printf("attn-exp-exhaustive: %" PRIu64 " inputs (%s, bits 0x%08" PRIx64 "..0x%08" PRIx64
              "), %d threads, %s\n",
              total, every == 1 ? "every float" : ("every " + std::to_string(every) + "th").c_str(),
              lo, hi, threads, cpu_model().c_str());
  std::fflush(stdout);

  const std::uint64_t fp_before = fp_control();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Stats> stats(isas.size());
#pragma omp parallel num_threads(threads)
  {
    std::vector<attn::Context> owned;
    owned.reserve(isas.size());
    std::vector<attn::Context*> ctxs;
    for (attn::Isa isa : isas)
      owned.push_back(attn_test::make_context(isa, 1));
    for (attn::Context& c : owned)
      ctxs.push_back(&c);
    std::vector<float> x(kBlock), y(kBlock);
    std::vector<double> want(kBlock);
    std::vector<Stats> mine(isas.size());
#pragma omp for schedule(dynamic, 16)
    for (std::int64_t b = 0; b < static_cast<std::int64_t>(blocks); ++b) {
      const std::uint64_t first = static_cast<std::uint64_t>(b) * kBlock;
      const std::size_t n = static_cast<std::size_t>(std::min(kBlock, total - first));
      check_block(static_cast<std::uint32_t>(lo + first * every), n,
                  static_cast<std::uint32_t>(every), ctxs, x, y, want, mine);
    }
#pragma omp critical
    for (std::size_t k = 0; k < isas.size(); ++k)
      stats[k].merge(mine[k]);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool fp_same = fp_control() == fp_before;

  float ref_inf, ref_zero;
  thresholds(nullptr, &ref_inf, &ref_zero);
  std::printf("C (float64 exp rounded): +inf from x = %.9g, last nonzero at x = %.9g\n", ref_inf,
              ref_zero);
  std::printf("%-7s %-10s %-34s %-15s %-13s %-10s %s\n", "isa", "max ulp", "argmax x (bits)", "y",
              "e^x (double)", ">0.5 ulp", "special/+inf/0 boundaries");
  bool pass = fp_same;
  for (std::size_t k = 0; k < isas.size(); ++k) {
    const Stats& s = stats[k];
    attn::Context ctx = attn_test::make_context(isas[k], 1);
    const float xa = from_bits(s.argmax);
    float ya = 0.0f;
    (void)attn::exp(ctx, &xa, &ya, 1);
    float first_inf, last_nonzero;
    thresholds(&ctx, &first_inf, &last_nonzero);
    char xs[64], ms[32];
    std::snprintf(xs, sizeof xs, "%.9g (0x%08" PRIx32 ")", xa, s.argmax);
    // With every result correctly rounded, the max is <= 0.5 and not tracked.
    std::snprintf(ms, sizeof ms, s.not_rounded ? "%.6f" : "<=0.5", s.max_ulp);
    std::printf("%-7s %-10s %-34s %-15.9g %-13.9g %-10.6f %s %s/%s\n", attn::isa_name(isas[k]), ms,
                xs, ya, std::exp(double(xa)),
                static_cast<double>(s.not_rounded) / static_cast<double>(total),
                s.special_bad ? "BAD" : "ok", first_inf == ref_inf ? "same" : "DIFFERENT",
                last_nonzero == ref_zero ? "same" : "DIFFERENT");
    std::printf("        subnormal results: %" PRIu64 ", %" PRIu64 " not correctly rounded\n",
                s.subnormal, s.subnormal_not_rounded);
    if (s.over_1ulp) {
      const float xo = from_bits(s.first_over);
      float yo = 0.0f;
      (void)attn::exp(ctx, &xo, &yo, 1);
      std::printf("  FAIL: %" PRIu64 " results over 1 ulp; first x = %.9g (0x%08" PRIx32
                  ") gives %.9g, e^x = %.17g\n",
                  s.over_1ulp, xo, s.first_over, yo, std::exp(double(xo)));
    }
    if (s.special_bad) {
      const float xo = from_bits(s.first_special);
      float yo = 0.0f;
      (void)attn::exp(ctx, &xo, &yo, 1);
      std::printf("  FAIL: %" PRIu64 " special values wrong; first x = %.9g (0x%08" PRIx32
                  ") gives %.9g, expf gives %.9g\n",
                  s.special_bad, xo, s.first_special, yo, static_cast<float>(std::exp(double(xo))));
    }
    if (s.subnormal_not_rounded) {
      std::printf("  FAIL: %" PRIu64 " subnormal results not correctly rounded\n",
                  s.subnormal_not_rounded);
    }
    pass = pass && s.over_1ulp == 0 && s.special_bad == 0 && s.max_ulp <= 1.0 &&
           s.subnormal_not_rounded == 0 && first_inf == ref_inf && last_nonzero == ref_zero;
  }
  if (!fp_same) std::printf("FAIL: attn::exp changed the floating-point control state\n");
  std::printf(
      "(\">0.5 ulp\": the fraction of inputs whose result is not the correctly rounded "
      "float)\n%s in %.1f s\n",
      pass ? "PASS: every ISA within 1 ulp, subnormals correctly rounded, C's special values"
           : "FAIL",
      seconds);
  return pass ? 0 : 1;
}
