// attn-first-call: the latency of a program's first attention call, with and without
// Context::reserve_scratch, against its second call.
//
//     attn-first-call [B H n d [processes]]      (default: 1 12 128 64, 21 processes)
//
// Each sample is a fresh process (fork), so the arena's pages are new to it as they are to a
// program that starts: one Context, optionally reserve_scratch(the arena a first process
// measured), then two timed calls of bidirectional self-attention (q = k = v, B x H x n x d).
// Prints the medians over the processes of both calls, each way. One thread; pin it with taskset.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <attn/attn.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

struct Sample {
  double first_us = 0, second_us = 0;
  std::size_t arena = 0;
};

// Runs in the child: the two calls, on a Context reserved to `reserve` bytes (0: none).
bool measure(std::size_t b, std::size_t h, std::size_t n, std::size_t d, std::size_t reserve,
             Sample* s) {
  std::vector<float> q(b * h * n * d), out(b * h * n * d);
  for (std::size_t i = 0; i < q.size(); ++i)
    q[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  const auto tq = attn::make_bhsd<const float>(q.data(), b, h, n, d);
  const auto to = attn::make_bhsd(out.data(), b, h, n, d);
  attn::Context ctx;
  if (reserve != 0 && !ctx.reserve_scratch(reserve).ok()) return false;
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  if (!attn::attention(ctx, tq, tq, tq, to).ok()) return false;
  const auto t1 = clock::now();
  if (!attn::attention(ctx, tq, tq, tq, to).ok()) return false;
  const auto t2 = clock::now();
  s->first_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  s->second_us = std::chrono::duration<double, std::micro>(t2 - t1).count();
  s->arena = ctx.peak_scratch_bytes();
  return true;
}

// One sample in a child process; false if the child failed.
bool sample(std::size_t b, std::size_t h, std::size_t n, std::size_t d, std::size_t reserve,
            Sample* s) {
  int fd[2];
  if (pipe(fd) != 0) return false;
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    close(fd[0]);
    Sample r;
    const bool ok = measure(b, h, n, d, reserve, &r);
    const bool sent = ok && write(fd[1], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
    _exit(sent ? 0 : 1);
  }
  close(fd[1]);
  const bool got = read(fd[0], s, sizeof *s) == static_cast<ssize_t>(sizeof *s);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return got && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 1 && argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: %s [B H n d [processes]]\n", argv[0]);
    return 2;
  }
  const auto arg = [&](int i, std::size_t dflt) {
    return argc > i ? std::strtoull(argv[i], nullptr, 10) : dflt;
  };
  const std::size_t b = arg(1, 1), h = arg(2, 12), n = arg(3, 128), d = arg(4, 64);
  const std::size_t processes = std::max<std::size_t>(1, arg(5, 21));
  Sample probe;
  if (!sample(b, h, n, d, 0, &probe)) {
    std::fprintf(stderr, "attn-first-call: the attention call failed\n");
    return 1;
  }
  std::printf("attention %zux%zux%zux%zu, one thread, arena %zu bytes; medians of %zu processes:\n",
              b, h, n, d, probe.arena, processes);
  // The two ways alternate, so that the host's drift falls on both.
  std::vector<double> first[2], second[2];
  for (std::size_t p = 0; p < processes; ++p) {
    for (int way = 0; way < 2; ++way) {
      Sample s;
      if (!sample(b, h, n, d, way == 0 ? 0 : probe.arena, &s)) return 1;
      first[way].push_back(s.first_us);
      second[way].push_back(s.second_us);
    }
  }
  for (int way = 0; way < 2; ++way) {
    std::printf("  %-24s first call %9.1f us, second %9.1f us\n",
                way ? "reserve_scratch(arena):" : "no reserve:", median(first[way]),
                median(second[way]));
  }
  return 0;
}
