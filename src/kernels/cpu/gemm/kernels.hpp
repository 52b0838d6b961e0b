// The contracts between the portable GEMM framework and the per-ISA kernels.
//
// Every ISA provides the same pieces (ukernels/<isa>/, one file each):
//   ukernel     C[MR,NR] = alpha * Apanel . Bpanel + beta * C (BLIS micro-kernel signature)
//   convert     a contiguous run of bf16 / fp16 / fp8 / fp32 values to fp32 (x scale)
//   interleave  rows of fp32 into a K-major panel (the transpose inside packing)
//   decode      small-M GEMM streaming W rows once, converting in registers
//   direct      C tiles from W rows read in place and a packed A^T (fp32, mid-size M)
// The ISA files include only intrinsics and these POD declarations: no inline function of a
// shared header is instantiated with ISA-specific flags (it could be picked by the linker for
// generic code and fault on an older CPU).
#pragma once

#include <cstdint>

#include "attain/dtype.hpp"

namespace attain::gemm::detail {

// Where the micro-kernel may prefetch from while it runs: the packed panels it will be
// called with next (nullptr: no prefetch, e.g. with a 1-stage pipeline).
struct UkAux {
  const float* a_next = nullptr;
  const float* b_next = nullptr;
  // Per-row multipliers of the sums in place of alpha (nullptr: alpha): fp8 as bf16 pairs,
  // where each 128-wide K block has its own scale per row of A and per 128 columns of B.
  const float* row_scale = nullptr;
  // 16-bit C written by the kernel itself (KernelFamily::ukernel_writes16; nullptr: C is the
  // fp32 `c`): C(i, j) at c16[i * rs_c + j] = round(alpha * sum + beta * C(i, j)), rounded as
  // the family's write_row rounds a row (bf16 where c16_bf, else fp16); cs_c is 1. The packed
  // path's one-K-block products take it: no fp32 tile of C to write, read back and round.
  std::uint16_t* c16 = nullptr;
  bool c16_bf = false;
  // fp32 C written with non-temporal stores, which skip the read of each line before it is
  // written, where the family has them (S::stream): beta 0, no row_scale, no c16, cs_c 1, every
  // row of the tile whole 64-byte-aligned lines. The caller fences.
  bool stream_c = false;
};

// a: packed A micro-panel, k x MR (MR contiguous per k). b: packed B micro-panel, k x NR.
// C element (i, j) at c[i*rs_c + j*cs_c]. beta == 0: C is not read.
using UKernel = void (*)(std::int64_t k, const float* alpha, const float* a, const float* b,
                         const float* beta, float* c, std::int64_t rs_c, std::int64_t cs_c,
                         const UkAux* aux);

// dst[i] = value(src[i]) * scale for i < n (scale applied only for fp8, as e4m3 * scale
// rounded once, bitwise the same as e4m3_to_f32(v) * scale). e4m3: the decode table.
using Convert = void (*)(const void* src, DType t, std::int64_t n, float scale, const float* e4m3,
                         float* dst);

// dst[p*R + r] = src[r*ld + p] for r < rows, p < k; rows r in [rows, R) are zero.
// A row of C of dtype t (f32, bf16 or f16) from fp32 sums: dst[j] = alpha * src[j] + beta *
// dst[j] for j < n, with the C update and rounding of the scalar write-back (fma(beta, c,
// alpha * src), then for 16-bit C dtype.hpp's f32_to_bf16 / f32_to_f16, bit for bit; beta == 0:
// dst is not read).
using WriteRow = void (*)(DType t, const float* src, std::int64_t n, float alpha, float beta,
                          void* dst);
void write_row_avx512(DType, const float*, std::int64_t, float, float, void*);
void write_row_avx2(DType, const float*, std::int64_t, float, float, void*);

using Interleave = void (*)(const float* src, std::int64_t ld, int rows, std::int64_t k, int R,
                            float* dst);

// W bytes per decode call past which the AVX-512 decode loops take W as streamed from memory
// (this machine's L2, 1 MiB; smaller W is likely in it already): the bf16 pairs' two-row
// blocks read short rows in order, and the fp8 / bf16 pairs loops prefetch the next group of
// W rows into L2.
inline constexpr std::int64_t kDecodeStreamedBytes = std::int64_t{1} << 20;

// The line this many bytes further on in memory than the one a decode loop reads, prefetched into
// L2 (with --stages > 1) by the panel kernel on 16-bit W (decode_panel_avx512.hpp) and by the loops
// that read short W rows one after another in address order (the fp8 and bf16 pairs decodes' row
// order, the fp32 route's row_order) with more than one dot or FMA chain per 64 bytes (two or more
// rows of A, or fp8's conversion). With one row of A and no conversion the hardware prefetcher
// alone keeps up and the prefetches only cost. W in cache pays a few percent for them.
inline constexpr std::int64_t kDecodeFarBytes = 16 * 1024;

// W rows longer than a page stream on the hardware prefetcher alone where a decode loop reads few
// rows of A against them (the bf16 pairs with one block of rows of A, fp16 with one row); the
// prefetcher stops at each page's end, so rows of a page or less keep the software prefetches.
inline constexpr std::int64_t kDecodePageBytes = 4096;

// The panel kernel's largest K chunk of packed A (below) where it keeps A in L1 ...
inline constexpr std::int64_t kDecodePanelChunkBytes = 32 * 1024;
// ... and its chunk for 16-bit W on the fp32 route (Fp32Route<bf16 / f16>), A in L2, which sizes
// the decode scratch: there an L1 chunk (512 fp32 values of 8 rows) cuts each W row into 1 KiB
// pieces, too short for the memory streams (fp16 8 x 16384 x 4096, Zen 4: 1.6x against half the
// L1d). fp32 W (2 KiB pieces) gains nothing and bf16 pairs lose (two products per value load A
// twice as fast), so they keep the L1 chunk. Chosen on Zen 4 (32 KiB L1d).
inline constexpr std::int64_t kDecodePanelWideBytes = 512 * 1024;
// The panel kernel's W rows per group (two register tiles of 3): a group takes all of K (in chunks
// of A kept in L1) before the next, so its rows stream in address order, where all of a thread's
// rows a chunk at a time read each row in pieces far apart. Groups of 3 rows are slower, groups of
// 12 mixed.
inline constexpr std::int64_t kDecodePanelGroupRows = 6;

// Whether a decode kernel reads a group's W rows one after another instead of a vector of each
// in turn, which makes one stream in address order where the rows lie back to back (ldw = K)
// and the kernel's K span is all of K: rows of up to 2 KiB, or 8 KiB with one row of A (fewer A
// loads per W vector). Stream::row_order_pays (fp32) and the bf16 pairs' sum_rows add their
// own limits; the measurements are there.
inline constexpr bool short_rows_in_order(std::int64_t ldw, std::int64_t k, std::int64_t row_bytes,
                                          bool one_row_of_a) {
  return ldw == k && row_bytes <= (one_row_of_a ? 8192 : 2048);
}

// The decode path: out[i*ldo + (j - n0)] = sum_p a[i*lda + p] * w(j, p) for i < m,
// j in [n0, n1): A in fp32 (scales applied), W rows in their storage dtype.
struct DecodeArgs {
  const float* a = nullptr;
  std::int64_t lda = 0, m = 0, k = 0;
  const void* w = nullptr;
  DType w_type = DType::f32;
  std::int64_t ldw = 0;
  const float* w_scale = nullptr;  // fp8: [(j/128) * ld_wscale + p/128]
  std::int64_t ld_wscale = 0;
  std::int64_t n0 = 0, n1 = 0;
  float* out = nullptr;
  std::int64_t ldo = 0;
  const float* e4m3 = nullptr;  // decode table (K tails)
  int stages = 2;               // prefetch distance in k tiles (1 = none)
  std::int64_t k_tile = 1024;   // K elements per pipeline tile (multiple of 128)
  float* scratch = nullptr;     // >= decode_scratch_floats(k_tile, k) floats, 64-byte aligned
  // Stream's fp8 decode with few rows of A: A times 2^64 (set by the kernel itself, in scratch;
  // null: not scaled). See Stream::scale_a.
  const float* a_up = nullptr;
  std::int64_t lda_up = 0;
  // The bf16-pairs decode kernels (decode_*_pairs_*) read A as bf16 rows, `a` unused: for
  // bf16 x bf16 A itself; for fp8 x fp8 A in permute_a_fp8_pairs' order, unscaled, with its
  // 1 x 128 scales a_scale[i * ld_ascale + p/128].
  const std::uint16_t* a16 = nullptr;
  std::int64_t lda16 = 0;
  const float* a_scale = nullptr;
  std::int64_t ld_ascale = 0;
  // The panel kernel's packed A per K chunk, in bytes (the engine passes decode_panel_bytes():
  // a quarter of the L1d; clamped to kDecodePanelChunkBytes; 16-bit W on the fp32 route ignores
  // it).
  std::int64_t panel_bytes = kDecodePanelChunkBytes;
};
using Decode = void (*)(const DecodeArgs& args);
struct DirectNext {
  const char* w = nullptr;
  std::int64_t ld = 0, bytes = 0;  // bytes between rows, bytes of each row to fetch
};
// The direct path (Path::direct): W is never packed. A tile of C is `rows` <= R rows of W,
// read where they are (one value of each broadcast per k), against a panel of m <= P rows of A
// packed k-major in a width of Pm = round_up(m, L) rows (A^T: at[p * Pm + i] = A(i, p), rows
// past m zero); the family's R, P and L are direct_rows, direct_panel and direct_lanes.
// For i < m and r < rows, with C(i, r) = c[i * ldc + r] (ct false) or c[r * ldc + i] (ct true:
// the caller's C is this product's transpose, written a row of W's sums at a time as vectors):
//   C(i, r) = alpha * sum_{p < k} at[p * P + i] * w[r * ldw + p] + beta * C(i, r)
// (beta == 0: C is not read). C is stored as c_type: fp32, or bf16 / fp16, whose elements are
// rounded once from the fp32 value alpha * sum + beta * C(i, r) (fma(beta, C, alpha * sum)) as
// write_back and the write_row kernels round them - so a product whose K is one block needs no
// fp32 tile of C (ldc counts elements). next: the W tile computed next, fetched into L1 while
// this one computes, a line of each of its R rows per 16 k steps as far as next->bytes (nullptr:
// none). Its rows may be of another dtype than w (the tiles the framework converts into scratch).
using DirectKernel = void (*)(std::int64_t k, const float* w, std::int64_t ldw, int rows,
                              const float* at, int m, float alpha, float beta, void* c,
                              std::int64_t ldc, bool ct, DType c_type, const DirectNext* next);

// fp8 x fp8 on the direct path (DirectScaledKernel): both operands as bf16 pairs, unscaled (e4m3
// values are exact in bf16), and the DeepSeek block scales applied to the sums of each 128-wide
// K block of the call - `steps` k steps (64 pairs), the last block possibly shorter:
//   sums(i, r) = sum_b a[b * Pm + i] * w[b * R + r] * (the block's sum of products)
// with Pm the panel's width (as the A^T panel's) and R the family's direct_rows (rows past
// `rows` are not read); then C(i, r) = alpha * sums(i, r) + beta * C(i, r) as DirectKernel.
struct DirectScales {
  const float* a = nullptr;  // A's scale of row i in block b (zero past the panel's rows)
  const float* w = nullptr;  // W's scale of row r in block b
  std::int64_t steps = 0;
};
using DirectScaledKernel = void (*)(std::int64_t k, const float* w, std::int64_t ldw, int rows,
                                    const float* at, int m, float alpha, float beta, void* c,
                                    std::int64_t ldc, bool ct, DType c_type, const DirectNext* next,
                                    const DirectScales* scales);

inline constexpr std::int64_t kDecodeMaxM = 64;  // rows of A the decode kernels accept
inline constexpr int kDecodeRows = 4;            // W rows per register tile (all ISAs)
// The fp8 pairs decode's A rows (permute_a_fp8_pairs): whole super-blocks of two 128-value
// scale blocks, zero past K. With more than kDecodeRows rows of A it runs K in chunks of
// k_tile values; with fewer, and in the bf16 pairs decode, k_tile plays no part. Up to two rows
// of A it reads W in address order (the stream order), with more in super-blocks.
inline constexpr std::int64_t kFp8PairsSuper = 2 * kFp8Block;  // K values of a super-block
inline constexpr std::int64_t fp8_pairs_row(std::int64_t k) {
  return (k + kFp8PairsSuper - 1) / kFp8PairsSuper * kFp8PairsSuper;
}
inline constexpr bool fp8_pairs_super(std::int64_t m) {
  return m > 2;
}

// fp32, bf16 or fp16 W with kDecodePanelMinM..MaxM rows of A and K from kDecodePanelMinK takes the
// decode's panel kernel (decode_panel.hpp; AVX-512: all rows of A against each W vector in one
// pass; AVX2: the limits below, passes of 4 rows; A packed into scratch K chunk by K chunk, each
// chunk at most DecodeArgs::panel_bytes (a quarter of the L1d, at most kDecodePanelChunkBytes) of
// packed A so that it stays in L1 beside the W stream - 16-bit W on the fp32 route at most
// kDecodePanelWideBytes, in L2; bf16 x bf16 on bf16 pairs where the CPU has AVX512-BF16). Shorter
// rows stay on the 4 x 4 blocks (fp32, M = 8: the panel loses at K = 128-256 and runs 1.6-1.8x
// faster from 384). AVX2 (passes of 4 rows) takes it from 3 rows of A: its 4 x 4 blocks hold 2 rows
// of A.
inline constexpr std::int64_t kDecodePanelMinM = 5, kDecodePanelMaxM = 8, kDecodePanelMinK = 384;
// AVX2 takes 16-bit W from K = 128 (the blocks convert each vector of W once per 2 rows of A); fp32
// stays from 384 (at K = 128 the blocks are faster).
inline constexpr std::int64_t kDecodePanelMinMAvx2 = 3, kDecodePanelMinK16Avx2 = 128;
inline constexpr bool panel_shape(DType w, std::int64_t m, std::int64_t k,
                                  std::int64_t min_m = kDecodePanelMinM,
                                  std::int64_t min_k16 = kDecodePanelMinK) {
  return (w == DType::f32 || w == DType::bf16 || w == DType::f16) && m >= min_m &&
         m <= kDecodePanelMaxM && k >= (w == DType::f32 ? kDecodePanelMinK : min_k16);
}

// Stream's part of the decode scratch (simd_stream.hpp): the converted W tiles from 0, the
// vector accumulators (up to 16 lanes) from decode_acc_floats, the scaled rows of A
// (DecodeArgs::a_up) from decode_a_up_floats.
inline constexpr std::int64_t decode_acc_floats(std::int64_t k_tile) {
  return kDecodeRows * k_tile;
}
inline constexpr std::int64_t decode_a_up_floats(std::int64_t k_tile) {
  return decode_acc_floats(k_tile) + kDecodeMaxM * kDecodeRows * 16;
}

// Scratch the decode kernels need: converted W tile + vector accumulators, or the panel
// kernel's packed A (kDecodePanelMaxM rows of one K chunk rounded up to whole vectors: at most
// kDecodePanelWideBytes, the chunk of 16-bit W on the fp32 route).
inline constexpr std::int64_t decode_scratch_floats(std::int64_t k_tile, std::int64_t k) {
  // W tiles, the accumulators, and up to kDecodeRows rows of A scaled (DecodeArgs::a_up).
  const std::int64_t tiles = decode_a_up_floats(k_tile) + kDecodeRows * ((k + 15) / 16) * 16;
  const std::int64_t all_k = kDecodePanelMaxM * ((k + 15) / 16) * 16;
  const std::int64_t chunk = kDecodePanelWideBytes / static_cast<std::int64_t>(sizeof(float));
  const std::int64_t panel = all_k < chunk ? all_k : chunk;
  return tiles > panel ? tiles : panel;
}

// ---- the kernels, by ISA (defined in ukernels/<isa>/*.cpp) ----
void sgemm_scalar_4x8(std::int64_t, const float*, const float*, const float*, const float*, float*,
                      std::int64_t, std::int64_t, const UkAux*);
void convert_scalar(const void*, DType, std::int64_t, float, const float*, float*);
void interleave_scalar(const float*, std::int64_t, int, std::int64_t, int, float*);
void decode_scalar(const DecodeArgs&);
void sgemm_direct_scalar_4x8(std::int64_t, const float*, std::int64_t, int, const float*, int,
                             float, float, void*, std::int64_t, bool, DType, const DirectNext*);

void sgemm_avx2_6x16(std::int64_t, const float*, const float*, const float*, const float*, float*,
                     std::int64_t, std::int64_t, const UkAux*);
void convert_avx2(const void*, DType, std::int64_t, float, const float*, float*);
void interleave_avx2(const float*, std::int64_t, int, std::int64_t, int, float*);
void decode_avx2(const DecodeArgs&);
void sgemm_direct_avx2_6x16(std::int64_t, const float*, std::int64_t, int, const float*, int, float,
                            float, void*, std::int64_t, bool, DType, const DirectNext*);

void sgemm_avx512_12x32(std::int64_t, const float*, const float*, const float*, const float*,
                        float*, std::int64_t, std::int64_t, const UkAux*);
void convert_avx512(const void*, DType, std::int64_t, float, const float*, float*);
void interleave_avx512(const float*, std::int64_t, int, std::int64_t, int, float*);
void decode_avx512(const DecodeArgs&);
void sgemm_direct_avx512_6x64(std::int64_t, const float*, std::int64_t, int, const float*, int,
                              float, float, void*, std::int64_t, bool, DType, const DirectNext*);
// The direct kernel on k pairs (simd_direct_k2): panels of up to 16 rows of A.
void sgemm_direct_avx512_6x16k2(std::int64_t, const float*, std::int64_t, int, const float*, int,
                                float, float, void*, std::int64_t, bool, DType, const DirectNext*);
// fp8 x fp8 decode as bf16 pairs (AVX512-BF16 + VBMI): K a multiple of 64, a16 set
// (permute_a_fp8_pairs; a slice starts at a multiple of 256 values).
void decode_fp8_pairs_avx512vbmi(const DecodeArgs&);
// m rows of k e4m3 values (row i at a + i * lda; k a multiple of 64) as bf16 rows of
// fp8_pairs_row(k) values at dst, in the order the kernel's loads and byte interleave give W:
// `super` (fp8_pairs_super(M) of the whole problem's M): each 256 values b.. as four steps t of
// 64, b + 32t + {0-7, 16-23, 128-135, 144-151} then b + 32t + {8-15, 24-31, 136-143, 152-159},
// zero past k; else (the stream order) each 64 values b.. as b + {0-7, 16-23, 32-39, 48-55}
// then b + {8-15, 24-31, 40-47, 56-63}.
void permute_a_fp8_pairs(const std::uint8_t* a, std::int64_t m, std::int64_t lda, std::int64_t k,
                         const float* e4m3, bool super, std::uint16_t* dst);
// n e4m3 values as bf16 (exact; NaN codes give a quiet NaN), AVX512-VBMI byte lookups.
void e4m3_to_bf16_avx512vbmi(const std::uint8_t* src, std::int64_t n, const float* e4m3,
                             std::uint16_t* dst);
// bf16 x bf16 decode as bf16 pairs (AVX512-BF16): any K, a16 = A.
void decode_bf16_pairs_avx512bf16(const DecodeArgs&);
// The direct kernel on bf16 pairs (AVX512-BF16): w and at hold 32-bit words (two bf16 of
// consecutive k), k counts pairs, ldw is in words.
void sgemm_direct_avx512bf16_6x64(std::int64_t, const float*, std::int64_t, int, const float*, int,
                                  float, float, void*, std::int64_t, bool, DType,
                                  const DirectNext*);
// ...and with fp8 block scales (DirectScales): fp8 x fp8 converted to bf16 pairs.
void sgemm_direct_avx512bf16_6x64_fp8(std::int64_t, const float*, std::int64_t, int, const float*,
                                      int, float, float, void*, std::int64_t, bool, DType,
                                      const DirectNext*, const DirectScales*);
// bf16 pairs (AVX512-BF16): a, b hold 32-bit words, k counts pairs (see KernelFamily).
void bgemm_avx512bf16_12x32(std::int64_t, const float*, const float*, const float*, const float*,
                            float*, std::int64_t, std::int64_t, const UkAux*);

}  // namespace attain::gemm::detail
