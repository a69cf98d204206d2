// The k loop of the AVX-512 6 x 64 packed micro-kernel (gemm_kernel_6x64_avx512.cpp) in inline
// assembly. Include from AVX-512 x86-64 translation units only (gemm_kernel.hpp does).
//
// Why assembly: without the L2Prefetch hint, GCC 12's code for the intrinsics loop (one k step
// per iteration) runs as fast as this; with it, the k loop needs groups of 8 steps with one
// prefetch each, and GCC either spills accumulators (the group unrolled) or, as a nested 8-step
// loop, made every call 4% slower. Intel Xeon of the README, the calls over one MC x KC block of
// 2048^3 (36 row panels x 32 B slivers, rdtsc per call, medians of 7): with the nested loop, a
// hint to lines already in L2 took 5.76k ticks per call against 5.50k with no hint; with this
// loop 5.48k against 5.47k, and hinting the next sliver lifted the block from 75% of the FMA
// probe (no hint) to 81% (the nested loop: 79%). Whole GEMM against the intrinsics loop (one
// binary alternating, medians of 11-21 pairs): 2048^3 0.940x the time (1 thread), 0.948x (2);
// 1024^3 0.946x, 0.956x; 512^3 0.962x; A B^T 512 x 512 x 64, 128, 256: 0.971x, 0.987x, 0.974x.
// A whole tile with alpha 1 and no bias is then written to C here (kLoopSetC, kLoopAddC), not
// through a buffer for store_tile: A B^T 512 x 512 x 64 0.963-0.973x the time (31 pairs, twice),
// 256^3 to 1024^3 1.00x.
#pragma once

#include <cstddef>

namespace attn::detail {
namespace ATTN_ISA_NS {

// One instruction per line.
// clang-format off
// Row i of one k step: the broadcast of its A value at `addr` into zmm r, 4 FMAs into
// accumulators zmm x0..x3 (zmm 4i .. 4i+3); B's 4 vectors of the step are in zmm26..29.
#define ATTN_L6_ROW_AT(addr, r, x0, x1, x2, x3)              \
  "vbroadcastss " addr ", %%zmm" #r "\n\t"                  \
  "vfmadd231ps %%zmm26, %%zmm" #r ", %%zmm" #x0 "\n\t"      \
  "vfmadd231ps %%zmm27, %%zmm" #r ", %%zmm" #x1 "\n\t"      \
  "vfmadd231ps %%zmm28, %%zmm" #r ", %%zmm" #x2 "\n\t"      \
  "vfmadd231ps %%zmm29, %%zmm" #r ", %%zmm" #x3 "\n\t"
// B's 64 floats of step u, contiguous at b + 256 u bytes.
#define ATTN_L6_LOAD_B(u)                                   \
  "vmovups " #u "*256(%[b]), %%zmm26\n\t"                   \
  "vmovups " #u "*256+64(%[b]), %%zmm27\n\t"                \
  "vmovups " #u "*256+128(%[b]), %%zmm28\n\t"               \
  "vmovups " #u "*256+192(%[b]), %%zmm29\n\t"
// Step u on a packed A panel: row i's value at a + 4 (6u + i) bytes.
#define ATTN_L6_ROW(u, i, r, x0, x1, x2, x3) \
  ATTN_L6_ROW_AT("4*(" #u "*6+" #i ")(%[a])", r, x0, x1, x2, x3)
#define ATTN_L6_STEP(u)                                                         \
  ATTN_L6_LOAD_B(u)                                                             \
  ATTN_L6_ROW(u, 0, 30, 0, 1, 2, 3) ATTN_L6_ROW(u, 1, 31, 4, 5, 6, 7)         \
  ATTN_L6_ROW(u, 2, 30, 8, 9, 10, 11) ATTN_L6_ROW(u, 3, 31, 12, 13, 14, 15)   \
  ATTN_L6_ROW(u, 4, 30, 16, 17, 18, 19) ATTN_L6_ROW(u, 5, 31, 20, 21, 22, 23)
// Step u on A rows in place: rows 0-2 at a0, a0 + lda, a0 + 2 lda and rows 3-5 at a3 (= a0 +
// 3 lda), a3 + lda, a3 + 2 lda, each value 4u bytes in.
#define ATTN_L6_STEP_ROWS(u)                                                                    \
  ATTN_L6_LOAD_B(u)                                                                             \
  ATTN_L6_ROW_AT("4*" #u "(%[a0])", 30, 0, 1, 2, 3)                                             \
  ATTN_L6_ROW_AT("4*" #u "(%[a0],%[lda_bytes],1)", 31, 4, 5, 6, 7)                              \
  ATTN_L6_ROW_AT("4*" #u "(%[a0],%[lda_bytes],2)", 30, 8, 9, 10, 11)                            \
  ATTN_L6_ROW_AT("4*" #u "(%[a3])", 31, 12, 13, 14, 15)                                         \
  ATTN_L6_ROW_AT("4*" #u "(%[a3],%[lda_bytes],1)", 30, 16, 17, 18, 19)                          \
  ATTN_L6_ROW_AT("4*" #u "(%[a3],%[lda_bytes],2)", 31, 20, 21, 22, 23)
// The 24 accumulators set to -0 (negz: a float -0 in memory).
#define ATTN_L6_ZERO                                                                            \
  "vbroadcastss %[negz], %%zmm0\n\t"                                                            \
  "vmovaps %%zmm0, %%zmm1\n\t" "vmovaps %%zmm0, %%zmm2\n\t" "vmovaps %%zmm0, %%zmm3\n\t"         \
  "vmovaps %%zmm0, %%zmm4\n\t" "vmovaps %%zmm0, %%zmm5\n\t" "vmovaps %%zmm0, %%zmm6\n\t"         \
  "vmovaps %%zmm0, %%zmm7\n\t" "vmovaps %%zmm0, %%zmm8\n\t" "vmovaps %%zmm0, %%zmm9\n\t"         \
  "vmovaps %%zmm0, %%zmm10\n\t" "vmovaps %%zmm0, %%zmm11\n\t" "vmovaps %%zmm0, %%zmm12\n\t"      \
  "vmovaps %%zmm0, %%zmm13\n\t" "vmovaps %%zmm0, %%zmm14\n\t" "vmovaps %%zmm0, %%zmm15\n\t"      \
  "vmovaps %%zmm0, %%zmm16\n\t" "vmovaps %%zmm0, %%zmm17\n\t" "vmovaps %%zmm0, %%zmm18\n\t"      \
  "vmovaps %%zmm0, %%zmm19\n\t" "vmovaps %%zmm0, %%zmm20\n\t" "vmovaps %%zmm0, %%zmm21\n\t"      \
  "vmovaps %%zmm0, %%zmm22\n\t" "vmovaps %%zmm0, %%zmm23\n\t"
// prefetcht0 of the first c_rows rows of the C tile (row stride ldc_bytes): 4 lines from c and the
// line of each row's last byte, a fifth where C does not start on a line (prefetch_tile in
// gemm_kernel.hpp); local labels 5 and 6.
#define ATTN_L6_PREFETCH_C                \
  "test %[c_rows], %[c_rows]\n\t"         \
  "jz 6f\n\t"                             \
  "5:\n\t"                                \
  "prefetcht0 (%[c])\n\t"                 \
  "prefetcht0 64(%[c])\n\t"               \
  "prefetcht0 128(%[c])\n\t"              \
  "prefetcht0 192(%[c])\n\t"              \
  "prefetcht0 255(%[c])\n\t"              \
  "add %[ldc_bytes], %[c]\n\t"            \
  "dec %[c_rows]\n\t"                     \
  "jnz 5b\n\t"                            \
  "6:\n\t"
// Accumulator r to dst[16 r ..] (the sums); row i's 4 accumulators to the C row at dst, as they
// are or added to it, then dst to the next row.
#define ATTN_L6_STORE(r) "vmovups %%zmm" #r ", 64*" #r "(%[dst])\n\t"
#define ATTN_L6_C_SET(x0, x1, x2, x3)          \
  "vmovups %%zmm" #x0 ", (%[dst])\n\t"         \
  "vmovups %%zmm" #x1 ", 64(%[dst])\n\t"       \
  "vmovups %%zmm" #x2 ", 128(%[dst])\n\t"      \
  "vmovups %%zmm" #x3 ", 192(%[dst])\n\t"      \
  "add %[ldc_bytes], %[dst]\n\t"
#define ATTN_L6_C_ADD(x0, x1, x2, x3)                            \
  "vaddps (%[dst]), %%zmm" #x0 ", %%zmm" #x0 "\n\t"              \
  "vaddps 64(%[dst]), %%zmm" #x1 ", %%zmm" #x1 "\n\t"            \
  "vaddps 128(%[dst]), %%zmm" #x2 ", %%zmm" #x2 "\n\t"           \
  "vaddps 192(%[dst]), %%zmm" #x3 ", %%zmm" #x3 "\n\t"           \
  ATTN_L6_C_SET(x0, x1, x2, x3)
// The accumulators written by mode (kLoopSums, kLoopSetC, kLoopAddC), local labels 9 to 11.
#define ATTN_L6_WRITE                                                                           \
  "cmp $1, %[mode]\n\t"                                                                         \
  "jb 9f\n\t"                                                                                   \
  "ja 10f\n\t"                                                                                  \
  ATTN_L6_C_SET(0, 1, 2, 3) ATTN_L6_C_SET(4, 5, 6, 7) ATTN_L6_C_SET(8, 9, 10, 11)               \
  ATTN_L6_C_SET(12, 13, 14, 15) ATTN_L6_C_SET(16, 17, 18, 19) ATTN_L6_C_SET(20, 21, 22, 23)     \
  "jmp 11f\n\t"                                                                                 \
  "10:\n\t"                                                                                     \
  ATTN_L6_C_ADD(0, 1, 2, 3) ATTN_L6_C_ADD(4, 5, 6, 7) ATTN_L6_C_ADD(8, 9, 10, 11)               \
  ATTN_L6_C_ADD(12, 13, 14, 15) ATTN_L6_C_ADD(16, 17, 18, 19) ATTN_L6_C_ADD(20, 21, 22, 23)     \
  "jmp 11f\n\t"                                                                                 \
  "9:\n\t"                                                                                      \
  ATTN_L6_STORE(0) ATTN_L6_STORE(1) ATTN_L6_STORE(2) ATTN_L6_STORE(3) ATTN_L6_STORE(4)          \
  ATTN_L6_STORE(5) ATTN_L6_STORE(6) ATTN_L6_STORE(7) ATTN_L6_STORE(8) ATTN_L6_STORE(9)          \
  ATTN_L6_STORE(10) ATTN_L6_STORE(11) ATTN_L6_STORE(12) ATTN_L6_STORE(13) ATTN_L6_STORE(14)     \
  ATTN_L6_STORE(15) ATTN_L6_STORE(16) ATTN_L6_STORE(17) ATTN_L6_STORE(18) ATTN_L6_STORE(19)     \
  ATTN_L6_STORE(20) ATTN_L6_STORE(21) ATTN_L6_STORE(22) ATTN_L6_STORE(23)                       \
  "11:\n\t"
// The accumulators set to -0, then the loop over `groups` groups of 8 steps (label 1), whose
// body follows: the steps and their pointer increments.
#define ATTN_L6_START                     \
  ATTN_L6_ZERO                            \
  "test %[groups], %[groups]\n\t"         \
  "jz 2f\n\t"                             \
  ".p2align 6\n\t"                        \
  "1:\n\t"
// The end of the groups' loop, then `rest` single steps, the C prefetch, `tail` single steps,
// the write. one_step: one k step and its pointer increments.
#define ATTN_L6_FINISH(one_step)          \
  "dec %[groups]\n\t"                     \
  "jnz 1b\n\t"                            \
  "2:\n\t"                                \
  "test %[rest], %[rest]\n\t"             \
  "jz 4f\n\t"                             \
  "3:\n\t"                                \
  one_step                                \
  "dec %[rest]\n\t"                       \
  "jnz 3b\n\t"                            \
  "4:\n\t"                                \
  ATTN_L6_PREFETCH_C                      \
  "test %[tail], %[tail]\n\t"             \
  "jz 8f\n\t"                             \
  "7:\n\t"                                \
  one_step                                \
  "dec %[tail]\n\t"                       \
  "jnz 7b\n\t"                            \
  "8:\n\t"                                \
  ATTN_L6_WRITE
#define ATTN_L6_CLOBBERS                                                                       \
  "cc", "memory", "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", \
      "zmm10", "zmm11", "zmm12", "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "zmm18", "zmm19",   \
      "zmm20", "zmm21", "zmm22", "zmm23", "zmm26", "zmm27", "zmm28", "zmm29", "zmm30", "zmm31"
// clang-format on

// The whole k loop of a 6 x 64 tile: acc(i, 16 j + l) = the sum over the k = 8 groups + rest +
// tail steps p of a[6p + i] * b[64p + 16j + l], in p order, one FMA per term, from -0 (the same
// bits as rank1_update_packed's loop). In order: `groups` groups of 8 steps, group g first
// fetching line pf + 64 g into L2 (pf_last once past it: the hint is lines pf .. pf_last, and
// pf == pf_last repeats one line); `rest` single steps; prefetcht0 of the first c_rows rows of
// the C tile (4 lines from c, row stride ldc_bytes); `tail` single steps. a: 6 floats per step,
// b: 64 per step (the packed panels of GemmUkernel). Then, by mode: kLoopSums, acc(i, 16 j + l)
// to dst[(4 i + j) * 16 + l] (dst 64-byte aligned); kLoopSetC, to the C tile at dst (rows
// ldc_bytes apart, all 6 x 64); kLoopAddC, added to it (C + acc, one rounding: the bits of
// store_tile's 1 * C + acc).
enum : std::size_t { kLoopSums = 0, kLoopSetC = 1, kLoopAddC = 2 };
inline void gemm_loop_6x64(const float* a, const float* b, std::size_t groups, std::size_t rest,
                           std::size_t tail, const char* pf, const char* pf_last, const float* c,
                           std::size_t ldc_bytes, std::size_t c_rows, float* dst,
                           std::size_t mode) {
  static const float kNegZero = -0.0f;
  // clang-format off
  asm volatile(
      ATTN_L6_START
      "prefetcht1 (%[pf])\n\t"
      ATTN_L6_STEP(0) ATTN_L6_STEP(1) ATTN_L6_STEP(2) ATTN_L6_STEP(3)
      ATTN_L6_STEP(4) ATTN_L6_STEP(5) ATTN_L6_STEP(6) ATTN_L6_STEP(7)
      "add $64, %[pf]\n\t"
      "cmp %[pf_last], %[pf]\n\t"
      "cmova %[pf_last], %[pf]\n\t"
      "add $192, %[a]\n\t"
      "add $2048, %[b]\n\t"
      ATTN_L6_FINISH(ATTN_L6_STEP(0) "add $24, %[a]\n\t" "add $256, %[b]\n\t")
      : [a] "+r"(a), [b] "+r"(b), [groups] "+r"(groups), [rest] "+r"(rest), [tail] "+r"(tail),
        [pf] "+r"(pf), [c] "+r"(c), [c_rows] "+r"(c_rows), [dst] "+r"(dst)
      : [pf_last] "r"(pf_last), [ldc_bytes] "r"(ldc_bytes), [mode] "r"(mode), [negz] "m"(kNegZero)
      : ATTN_L6_CLOBBERS);
  // clang-format on
}

// gemm_loop_6x64 on A rows in place: a[6p + i] above becomes row i's value p, at a0 + i * lda
// floats + p (lda_bytes = 4 lda), and there is no L2 hint. b: contiguous rows of 64 floats (a
// packed panel, or a row-major B whose rows are 64 floats apart). For gemm_wide_panel.
inline void gemm_loop_6x64_rows(const float* a0, std::size_t lda_bytes, const float* b,
                                std::size_t groups, std::size_t rest, std::size_t tail,
                                const float* c, std::size_t ldc_bytes, std::size_t c_rows,
                                float* dst, std::size_t mode) {
  static const float kNegZero = -0.0f;
  const float* a3 =
      reinterpret_cast<const float*>(reinterpret_cast<const char*>(a0) + 3 * lda_bytes);
  // clang-format off
  asm volatile(
      ATTN_L6_START
      ATTN_L6_STEP_ROWS(0) ATTN_L6_STEP_ROWS(1) ATTN_L6_STEP_ROWS(2) ATTN_L6_STEP_ROWS(3)
      ATTN_L6_STEP_ROWS(4) ATTN_L6_STEP_ROWS(5) ATTN_L6_STEP_ROWS(6) ATTN_L6_STEP_ROWS(7)
      "add $32, %[a0]\n\t"
      "add $32, %[a3]\n\t"
      "add $2048, %[b]\n\t"
      ATTN_L6_FINISH(ATTN_L6_STEP_ROWS(0)
                     "add $4, %[a0]\n\t" "add $4, %[a3]\n\t" "add $256, %[b]\n\t")
      : [a0] "+r"(a0), [a3] "+r"(a3), [b] "+r"(b), [groups] "+r"(groups), [rest] "+r"(rest),
        [tail] "+r"(tail), [c] "+r"(c), [c_rows] "+r"(c_rows), [dst] "+r"(dst)
      : [lda_bytes] "r"(lda_bytes), [ldc_bytes] "r"(ldc_bytes), [mode] "r"(mode),
        [negz] "m"(kNegZero)
      : ATTN_L6_CLOBBERS);
  // clang-format on
}

#undef ATTN_L6_CLOBBERS
#undef ATTN_L6_FINISH
#undef ATTN_L6_START
#undef ATTN_L6_WRITE
#undef ATTN_L6_C_ADD
#undef ATTN_L6_C_SET
#undef ATTN_L6_STORE
#undef ATTN_L6_PREFETCH_C
#undef ATTN_L6_ZERO
#undef ATTN_L6_STEP_ROWS
#undef ATTN_L6_STEP
#undef ATTN_L6_ROW
#undef ATTN_L6_LOAD_B
#undef ATTN_L6_ROW_AT

}  // namespace ATTN_ISA_NS
}  // namespace attn::detail
