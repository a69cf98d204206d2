// What the CPU (and the OS, for AVX state) can run, read once with cpuid/xgetbv. xsimd 8.1's own
// detection misreads SSE2/AVX and ignores XCR0, so attn does not use it.
#pragma once

#include <cstddef>

namespace attn::detail {

struct CpuInfo {
  bool sse2 = false;
  bool avx2_fma = false;  // AVX2 + FMA3 + OS-saved YMM state
  bool avx512 = false;    // AVX-512 F, DQ, BW, VL + OS-saved ZMM state
  bool neon = false;
  std::size_t l1d_bytes = 32 * 1024;  // per core; defaults when the CPU does not say
  std::size_t l2_bytes = 512 * 1024;  // per core
  std::size_t l3_bytes = 8 * 1024 * 1024;
  // Whether the no-packing GEMM kernels, which read a B of up to half of L2 in place (rows ldb
  // apart), run at the packed kernel's rate when B is larger than L1 (matmul/gemm_path.cpp,
  // gemm_path). Measured per vendor: AMD Zen 5 yes (AVX-512 256^3 at 93% of the FMA probe, level
  // with oneDNN); an Intel Xeon with AVX-512 and AMX (KVM guest, family 6 model 167, 48 KiB L1d,
  // 2 MiB L2) no: packing made 256^3 0.90x and A*B^T 512 x 512 x 64 0.94x the time on AVX-512,
  // 0.90x and 0.975x on AVX2 (bench/ab, 4 rounds). Other Intel CPUs are taken to be alike; CPUs
  // not measured (other vendors, AArch64) keep the rule first tuned on Zen 5.
  bool l2_feeds_in_place_b = true;
  // Whether GemmPath::prefetched (a row-major B beyond L2 read in place, its rows prefetched)
  // runs faster than packing B for up to Kernels::gemm_prefetch_b_many_rows rows rather than 48
  // (matmul/gemm_path.cpp, use_prefetched). Measured per vendor: AMD Zen 5 yes, the Intel Xeon
  // above no (64 rows 1.03x the time); other CPUs keep 48.
  bool prefetched_many_rows = false;
  // Whether GemmPath::prefetched fetches each panel's successor into L2 while the panel's later
  // groups of rows run (matmul/gemm.cpp, kNextPanelMinGroups: measured there on Zen 4). AMD Zen 5
  // (family 26) no: without over with (bench/ab-lib, AB_LIB_OFFSET=16, AVX-512, one thread, 11-15
  // pairs, bit-identical) 128 x 2304 x 768 0.982x and 0.985x (13 of 15 won), 64 rows 0.969x, 32
  // rows 0.949x, 48 x 768 x 3072 0.971x, 48 x 3072 x 768 0.964x; level at 192 x 2304 x 768
  // (1.002x), 128 x 4096 x 1024 (0.997x) and 96 x 4096 x 4096 (0.998x); 48 x 4096 x 1024 1.012x
  // (3 of 15). Later, with over without: 128 x 2304 x 768 1.069x (0 of 11); AVX2 (whose 6 x 16
  // tile gained 0.899x from it on Zen 4) level, 128 rows 0.990x (quartiles 0.976-1.002), 32 rows
  // 1.007x. Others keep it (Intel and NEON not measured).
  bool prefetched_next_panel = true;
  // Whether the one-vector no-packing tile broadcasts once per FMA for a few rows
  // (Kernels::gemm_direct_narrow_split) rather than in pairs of k steps with shuffles, which on
  // Intel cores share ports with the FMAs. Measured (kernels_avx512.cpp): Intel yes, AMD Zen 4
  // (family 25, the only one of that family with AVX-512) yes, Zen 5 (family 26) no; others keep
  // the pairs.
  bool narrow_tile_split = false;
  // The fewest rows of A for which GemmPath::rows against a B^T prefetches B^T's rows 4 KiB ahead
  // in software (Kernels::gemm_rows_t_prefetch) rather than leaving them to the hardware
  // prefetchers; SIZE_MAX: never. Measured per vendor:
  // - the Intel Xeon above: 1 (A B^T 1 x 2304 x 768 took 0.95x the time with it; not measured
  //   with the one-row kernel's groups of 8 rows of B^T).
  // - AMD Zen 4 (EPYC, family 25 model 17, 32 KiB L1d, 1 MiB L2): never. Without over with
  //   (bench/ab-lib, AB_LIB_OFFSET=16, 11-15 pairs, bit-identical) AVX-512 1 x 2304 x 768
  //   0.918-0.939x (two threads 0.908x), 4 rows 0.923x, 8 rows 0.990x, 1 x 768 x 3072 0.800x;
  //   AVX2 1 row 0.725x, SSE2 0.880x; with the one-row kernel's groups of 8 rows of B^T
  //   (matmul/gemm_rows_t_kernel.hpp) 1 x 2304 x 768 with the prefetch 1.129x the time.
  // - AMD Zen 5 (family 26): 2. The one-row kernel reads 8 rows of B^T at once, the others one
  //   row at a time. With over without (the same way, AVX-512, 9-11 pairs), B^T hot in L3:
  //   1 x 2304 x 768 1.063x, 1 x 768 x 3072 1.193x; 2 rows 0.953x, 3 rows 1.025x (4 of 11 won),
  //   4 rows 0.896x (two threads 0.776x), 8 rows 1.022x (4 of 11), 4 x 768 x 3072 0.911x,
  //   4 x 4096 x 1024 0.775x. B^T from memory (AB_LIB_B_COPIES=16, as a decoding step's weights):
  //   1 row 1.005x, 2 rows 0.755x, 3 rows 0.923x, 4 rows 0.729x (two threads 0.642x), 8 rows
  //   0.888x, 4 x 768 x 3072 0.777x. AVX2 4 x 2304 x 768 from memory 0.953x; SSE2 not measured.
  // - Other AMD CPUs: never, as Zen 4 (not measured); other vendors: 1.
  std::size_t rows_t_prefetch_min_rows = 1;
  // Whether decoding's scores kernel prefetches the V rows P * V reads next into L1
  // (DirectPrefetch::v, attention/attention_fused.cpp; the K prefetch stays everywhere; where
  // decode_prefetch_l2 applies, the V rows go to L2 whatever this says). Measured
  // on AMD Zen 4 (family 25): no, without it (bench/ab-lib, AB_LIB_OFFSET=16, bit-identical)
  // attention 1x8x4x4096x128 took 0.859x and 0.895x the time, 1x12x1x1024x64 (K and V in L3)
  // 0.907x, 1x8x1x65536x128 (537 MB of K and V from DRAM) 0.828x; dropping the K prefetch
  // instead took 1.298x. The Intel Xeon measured it only together with the K prefetch
  // (dispatch/kernels.hpp, DirectPrefetch) and keeps it; Zen 5 keeps it but for one thread and
  // one query row per KV head (decode_prefetch_v_one_thread_min_rows). One query row per KV head
  // runs 512-key tiles whose V rows L1 cannot hold (Plan::key_tile): those never take it, on any
  // CPU (measured on Zen 5 only: on the Intel Xeon one thread with one row took it before). The
  // two-thread measurements below predate those tiles.
  bool decode_prefetch_v = true;
  // Where decode_prefetch_v holds, the fewest query rows per KV head (Lq times the GQA group) for
  // which a call on one thread still prefetches the V rows (calls on more threads do, but for
  // one row per KV head, whose 512-key tiles never take the hint: Plan::key_tile).
  // AMD Zen 5 (family 26): 2. Measured there (bench/ab-lib, AB_LIB_OFFSET=16, bit-identical, time
  // without the V prefetch over with; shapes B,H,Lq,Lk,d):
  // - one thread, one row, K and V hot in L3 or not: 1,12,1,1024,64 (6.3 MB) 0.911x and 0.909x,
  //   1,8,1,1024,128 0.898x, 1,8,1,2048,128 0.912x, 1,32,1,512,128 0.857x, 1,8,1,3072,128 (25 MB)
  //   0.887x, 1,8,1,4096,128 (33.5 MB) 0.941x, 1,8,1,65536,128 (537 MB, from DRAM) 0.838x (9-15
  //   pairs, 7-15 won); with a program streaming 6.3 MB (L3) or 256 MB (DRAM) on the other core:
  //   1,12,1,1024,64 0.964x and 0.899x, 1,8,1,4096,128 0.992x; 1,12,1,1024,64 with K and V from
  //   memory (16 copies in turn, AB_LIB_KV_COPIES) level (1.004x the time with it, 5 of 11).
  // - two threads, one row: 1,12,1,1024,64 1.130x and 1.128x, 1,8,1,4096,128 0.970x,
  //   1,8,1,65536,128 1.103x (slower on 2 of 3): those keep it.
  // - one thread, more rows: faster only while K and V stay hot in L3 (4 rows: 1,12,4,1024,64
  //   0.810x, 1,8,4,1024,128 0.877x; 2 rows: 1,8,2,1024,128 0.967x), slower beyond (4 rows:
  //   1,8,4,2048,128 1.124x, 3072 1.276x, 4096 1.167x, 16384 1.220x; 2 rows: 1,8,2,4096,128
  //   1.124x) and with small K and V from memory (AB_LIB_KV_COPIES=16: 4 rows 1,12,4,1024,64
  //   1.141x, 1,8,4,1024,128 1.352x), where a decoding step's K and V usually come from (the
  //   model's other layers evict them): those keep it.
  // - V prefetched to L2 (prefetcht1) instead of L1, every row count, time over L1's: one thread
  //   1,12,1,1024,64 0.984x, 1,8,4,4096,128 1.090x, 1,8,1,4096,128 1.019x.
  // Elsewhere 1 (not measured: the Intel Xeon).
  std::size_t decode_prefetch_v_one_thread_min_rows = 1;
  // How far ahead that kernel prefetches K's rows (DirectPrefetch::k_ahead_bytes). Zen 4: 4 KiB,
  // against 8 (bench/ab-lib, bit-identical) 1x8x4x4096x128 0.945x, 0.973x and 0.974x the time,
  // 1x12x1x1024x64 0.960x and 0.978x, 1x8x1x65536x128 (K and V from DRAM) 0.908x; 2 KiB 0.959x,
  // 16 KiB 1.003x. Zen 5 (family 26): 4 KiB too, against 8 (the same way, with
  // decode_prefetch_v_one_thread_min_rows 2): one thread 1,12,1,1024,64 0.961x, 1,12,4,1024,64
  // 0.973x, 1,8,4,4096,128 0.941x, 8192 0.953x, 16384 1.050x and 1.026x (quartiles 0.998-1.127, 3
  // of 7), 65536 0.955x, 1,8,1,65536,128 0.766x; two threads 1,12,1,1024,64 0.952x, 1,8,4,4096,128
  // 0.813x (7-11 pairs; bench/ab had read 4 and 16 KiB no better: kernels.hpp); with K and V
  // from memory (AB_LIB_KV_COPIES=16) 1,12,1,1024,64 0.986x, 1,12,4,1024,64 0.975x (8 KiB's
  // 1.014x and 1.026x inverted; quartiles across 1). Elsewhere 8 KiB.
  std::size_t decode_k_ahead_bytes = 8192;
  // Whether, where a decoding call's K and V exceed half of L3 (so each call reads them from
  // memory), that kernel prefetches K's rows and the tile's V rows into L2 (prefetcht1,
  // DirectPrefetch::to_l2) rather than K's into L1. AMD Zen 4 (family 25) yes: each prefetcht0
  // that misses to DRAM holds one of L1's few miss buffers for the whole trip, prefetcht1 one of
  // L2's many. Measured there (bench/ab-lib, AB_LIB_OFFSET=16, bit-identical, time with over
  // without; the host's speed moved between runs): as committed, attention 1x8x4x4096x128
  // (33.5 MB of K and V) 0.619x (11 of 11 pairs), AVX2 0.407x, two threads 0.609x,
  // 1x8x1x65536x128 (537 MB) 0.766x; the same hints before the half-of-L3 condition
  // 1x8x4x4096x128 0.712x (two threads 0.837x), 1x8x1x3072x128 (25 MB) 0.785x, 1x8x1x2048x128
  // (16.8 MB, half of L3) 0.962x, but 1x12x1x1024x64 (6.3 MB, in L3) 1.100x (the K hint to L2
  // alone 1.084x), hence the condition. The Intel Xeon read V's hint to L2 no better
  // (kernels.hpp); Zen 3 (also family 25) not measured. Zen 5 (family 26) no: with it, one
  // thread (bench/ab-lib as above, K 4 KiB ahead, 7 pairs, 0 won) 1,8,4,65536,128 1.104x the
  // time, 1,8,1,65536,128 1.169x, 1,8,4,4096,128 1.224x.
  bool decode_prefetch_l2 = false;
  // Whether 512-bit FMAs run as two 256-bit halves, one per cycle where 256-bit ones run two
  // (AMD Zen 4: family 25 with AVX-512; the FMA probe reads the same peak for AVX-512 and AVX2).
  // The AVX-512 table's GEMM blocking has an MC for it (GemmBlocking::mc_double_pumped).
  bool avx512_double_pumped = false;
  // x86: the display family of cpuid leaf 1 (base family, plus the extended family where the
  // base is 15: AMD Zen 3 and 4 are 25, Zen 5 26); 0 elsewhere.
  unsigned family = 0;
  char model[64] = "unknown";
};

// Reads the CPU (cpuid, sysfs); cpu_info() calls it once.
CpuInfo detect_cpu() noexcept;

// Detected on first use (thread-safe), then cached. Inline: the GEMM's path choice asks several
// times per call, and a call of the seed's 6 x 16 x 64 product takes tens of nanoseconds.
inline const CpuInfo& cpu_info() noexcept {
  static const CpuInfo info = detect_cpu();
  return info;
}

}  // namespace attn::detail
