// The Isa::avx512 kernel table (AVX-512 F/DQ/BW/VL).
//
// GEMM blocking for the 6 x 64 packed kernel (32 ZMM registers: 24 accumulators, 4 B vectors, 1
// broadcast): per k step it reads 256 bytes of B and 24 of A for 24 FMAs (12 cycles at 2 FMAs
// per cycle), so a KC x NR sliver of B, 512 x 64 floats = 128 KiB, streams from L2 (Zen 4/5 L2
// sustains 32-64 B/cycle) while the MR x KC sliver of A, 12 KiB, stays in a 48 KiB L1; an MC x KC
// block of A, 216 x 512 floats = 432 KiB, fits a 1 MiB L2 beside the B sliver; a KC x NC panel
// of B, 512 x 4096 floats = 8 MiB, in a shared L3. Measured on Zen 5 (interleaved runs, medians
// of 6, time relative to the former 14 x 32 tile at MC 224, KC 512): 6 x 64 at 216/512 0.93-0.95
// (2048^3) and 0.98 (1024^3); at MC 120 0.94/0.98, MC 288 0.97/0.98, KC 384 0.97/0.99; 8 x 48
// 0.95/1.00-1.01; 12 x 32 0.99/0.99; 14 x 32 at KC 256 1.07/1.04.
// With 2 MiB of L2 per core (Intel Xeon since Sapphire Rapids), KC 1024: the 216 x 1024 block of
// A (864 KiB) and two 256 KiB slivers (the current one and the next, L2Prefetch) fill 67% of L2,
// as 216 x 512 and two 128 KiB slivers fill 1 MiB; C is read and written half as often. Intel
// Xeon of the README (in-process alternation with KC 512, medians of 15-21 pairs): 2048^3
// 0.975-0.984x the time (1 thread), 0.982x (2); 1024^3 0.982x (1 and 2 threads); MC 108 with
// KC 1024 1.01-1.03x. NC halves to 2048, so the packed panel of B stays 8 MiB.
// AMD Zen 4 (CpuInfo::avx512_double_pumped: 512-bit FMAs in two 256-bit halves) takes MC 240
// (480 KiB of A): a k step of the tile takes twice the cycles, so L2 streams each sliver of B at
// half Zen 5's rate beside the larger block. Measured there (bench/ab-lib, AB_LIB_OFFSET=16,
// bit-identical, MC 240 over 216; the plan rounds them to 228 and 210 at m = 2048): 2048^3
// 0.982x, 0.982x, 0.969x, 0.996x, 0.987x the time (5-9 of 7-11 pairs), 1536^3 0.983x (plans 222
// and 192); 264 0.987x, 288 0.989x. Squares from 256 to 1024 plan the same MC either way, as do
// 2048^3 and 1536^3 on two threads (read 0.991x twice and 1024^3 1.006x and 0.978x: the
// instrument's noise, about the size of the gain); one thread plans differently for m in
// 217-240, 433-480, 649-720, 865-960 and most m above 1080. Not combined with kc_large_l2 by any
// CPU measured (Zen 4 has 1 MiB of L2): that pair would put a 960 KiB block of A in L2, unmeasured.
#define ATTN_KERNELS_NAME kAvx512Kernels
#define ATTN_KERNELS_ISA Isa::avx512
#define ATTN_GEMM_KERNEL gemm_kernel_6x64
#define ATTN_GEMM_PACK_A gemm_pack_a_6
#define ATTN_GEMM_PACK_A_COLS gemm_pack_a_cols_6
#define ATTN_GEMM_PACK_B_ROWS gemm_pack_b_rows_64
#define ATTN_GEMM_PACK_B_COLS gemm_pack_b_cols_64
#define ATTN_GEMM_LANES 16
#define ATTN_GEMM_MR 6
#define ATTN_GEMM_NR 64
#define ATTN_GEMM_BLOCKING    \
  GemmBlocking {              \
    216, 512, 4096, 1024, 240 \
  }
// The no-packing kernels are 8 x 32 (16 accumulators; B at most half of L2, read in place).
#define ATTN_GEMM_DIRECT_MR 8
#define ATTN_GEMM_DIRECT_NR 32
// Whole no-packing tiles against a B within half of L1: 4 x 64 (gemm_kernel_14x32_avx512.cpp),
// 4 B vectors and 4 broadcasts per 16 FMAs where 8 x 32 loads 2 and 8; against a B in L2 each
// 4-row block would stream all of it, twice the 8-row tile's traffic (see gemm_direct in
// matmul/gemm.cpp for the measurements).
#define ATTN_GEMM_DIRECT_TILES_L1_NR 64
#define ATTN_GEMM_DIRECT_PACK_B_COLS gemm_pack_b_cols_32
// Narrow calls of at most 6 rows (the seed's 6 x 16 x 64) in gemm_direct_narrow_kernel's SPLIT
// form where CpuInfo::narrow_tile_split (Intel, AMD Zen 4). The same library alternating both in
// one process (medians of 21-41 pairs), split over pairs: Intel Xeon of the README, 6 x 16 x 64
// 0.91x the time, 6 x 16 x 256 0.91x, 6 x 16 x 1024 0.88x, 3 x 16 x 64 and 1 x 16 x 64 0.90x,
// but 8 rows 1.01-1.04x (so 8 rows keep the pairs); Zen 5 the other way, the pairs over the
// split form 6 x 16 x 64 0.882x the time (0.962x with the inputs 16 bytes past a line), 3 x 16 x 64
// 0.914x, 1 x 16 x 64 0.899x, 6 x 16 x 1024 0.834x (bench/ab-lib, inputs on a line, 21 pairs);
// Zen 4 (EPYC, family 25 model 17) as Intel, split over pairs 6 x 16 x 64 0.909x the time (0.925x
// on a line), 3 x 16 x 64 0.918x, 1 x 16 x 64 0.904x, 6 x 16 x 1024 0.904x (AB_LIB_OFFSET=16,
// 21 pairs).
#define ATTN_GEMM_DIRECT_NARROW_SPLIT
// And the 6 x 64 tile without packing, for the products use_direct_wide picks (matmul/gemm.cpp).
#define ATTN_GEMM_DIRECT_WIDE_MR 6
// GemmPath::prefetched: 8 x 48 (24 accumulators, 3 B vectors); see gemm_prefetch_b.
#define ATTN_GEMM_PREFETCH_B_MR 8
#define ATTN_GEMM_PREFETCH_B_NV 3
#define ATTN_GEMM_PREFETCH_B_MIN_ROWS 5
#define ATTN_GEMM_PREFETCH_B_MANY_ROWS 192  // AMD: see use_prefetched
// A pre-packed B: the 6 x 64 tile on each packed sliver, 8 x 32 tiles on each half of it for 7 or
// 8 rows, for up to ATTN_GEMM_SLIVER_MAX_ROWS rows (gemm_prepacked_loop in matmul/gemm_path.cpp has
// the measurements).
#define ATTN_GEMM_SLIVER_MR 6
#define ATTN_GEMM_SLIVER_CALL_ROWS 8
#define ATTN_GEMM_SLIVER_MAX_ROWS 48
// Fused attention: the 14 x 32 tile (a head dimension of 64 is 2 panels; NR = 64 would pad 80
// to 128). 56 query rows (4 x MR) against 128 keys: the 56 x 128 score tile (28 KiB) stays in a
// 48 KiB L1 while it is turned into probabilities; the packed K and V tiles (128 x 64 floats,
// 32 KiB each at d = 64) and the 56 x Dv output accumulator sit in L2.
#define ATTN_ATTENTION_MR 14
#define ATTN_ATTENTION_NR 32
#define ATTN_ATTENTION_SCORES gemm_kernel_14x32
#define ATTN_ATTENTION_PACK_Q gemm_pack_a_14
#define ATTN_ATTENTION_TILING \
  AttentionTiling {           \
    56, 128                   \
  }
#define ATTN_ATTENTION_PV pv_kernel_14x32_bk128
// Decoding's P*V (at most 4 rows): 64-wide panels (4 x 4 accumulators), as in
// attention/attention_kernels_avx512.cpp.
#define ATTN_PV_FEW_NV 4
#include "dispatch/kernels_table.inc"
