// bench/ab-lib's driver: loads two builds of the case (ab_lib/case.cpp linked with each build's
// libattn.a) into one process and times them in alternated batches of about 50 ms, the order
// swapping every pair, so that the machine's drift over seconds lands on both alike. Prints each
// build's median GFLOP/s, the median and quartiles of new/old time over the pairs, how many
// pairs the new build won, and whether the two outputs differ in any bit.
//   ab-lib-driver OLD.so NEW.so KIND M N K BATCH HEADS THREADS PAIRS
// (KIND and the shape as ab_lib/case.cpp takes them: attention has M = Lq, N = Lk, K = d).
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using Make = void* (*)(int, long, long, long, long, long, int);
using Time = double (*)(void*, int);
using Out = const float* (*)(void*, std::size_t*);

struct Build {
  Make make;
  Time time;
  Out out;
  void* c;
};

Build load(const char* path) {
  // RTLD_DEEPBIND: each object's calls resolve inside it, never in the other build.
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (h == nullptr) {
    std::fprintf(stderr, "ab-lib-driver: %s\n", dlerror());
    std::exit(1);
  }
  return {reinterpret_cast<Make>(dlsym(h, "ab_make")), reinterpret_cast<Time>(dlsym(h, "ab_time")),
          reinterpret_cast<Out>(dlsym(h, "ab_out")), nullptr};
}

double quantile(std::vector<double> v, double f) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(f * double(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 11) {
    std::fprintf(stderr, "usage: %s OLD.so NEW.so KIND M N K BATCH HEADS THREADS PAIRS\n", argv[0]);
    return 2;
  }
  const int kind = std::atoi(argv[3]);
  const long m = std::atol(argv[4]), n = std::atol(argv[5]), k = std::atol(argv[6]);
  const long batch = std::atol(argv[7]), heads = std::atol(argv[8]);
  const int threads = std::atoi(argv[9]), pairs = std::atoi(argv[10]);
  Build b[2] = {load(argv[1]), load(argv[2])};
  for (Build& x : b)
    x.c = x.make(kind, m, n, k, batch, heads, threads);
  std::size_t n0 = 0, n1 = 0;
  const float* o0 = b[0].out(b[0].c, &n0);
  const float* o1 = b[1].out(b[1].c, &n1);
  const bool same = n0 == n1 && std::memcmp(o0, o1, n0 * sizeof(float)) == 0;
  const bool product = kind <= 1 || kind == 4 || kind == 5;  // else attention (all its keys)
  const double flop = product ? 2.0 * m * n * k : 4.0 * batch * heads * m * n * k;
  const int reps = std::max(1, static_cast<int>(0.05 / b[0].time(b[0].c, 1)));
  std::vector<double> ratio, t0, t1;
  for (int p = 0; p < pairs; ++p) {
    double x0, x1;
    if (p % 2 == 0) {
      x0 = b[0].time(b[0].c, reps);
      x1 = b[1].time(b[1].c, reps);
    } else {
      x1 = b[1].time(b[1].c, reps);
      x0 = b[0].time(b[0].c, reps);
    }
    ratio.push_back(x1 / x0);
    t0.push_back(x0);
    t1.push_back(x1);
  }
  const long wins = std::count_if(ratio.begin(), ratio.end(), [](double r) { return r < 1.0; });
  std::printf(
      "old %.1f GFLOP/s, new %.1f GFLOP/s; new/old time: median %.3f, quartiles %.3f-%.3f; new "
      "faster in %ld of %d pairs of %d calls each; outputs %s\n",
      flop / quantile(t0, 0.5) / 1e9, flop / quantile(t1, 0.5) / 1e9, quantile(ratio, 0.5),
      quantile(ratio, 0.25), quantile(ratio, 0.75), wins, pairs, reps,
      same ? "bit-identical" : "DIFFER");
  return 0;
}
