// fp8 x fp8 decode (few rows of A) as bf16 pairs, AVX512-BF16 + AVX512-VBMI. Each 64 bytes of
// a W row become 64 bf16 values with two byte lookups (vpermi2b over the 128 e4m3 magnitudes:
// one table for the low byte of the bf16, one for the high byte; the sign bit is or-ed in) and
// two byte interleaves, then two vdpbf16ps per row of A: about 1.75 instructions per 16 values
// where the fp32 route takes 4 to convert, 1 to multiply and a NaN scan. The tables map the
// NaN codes to a bf16 NaN and the subnormals to their exact values, so nothing is checked on
// the way. e4m3 values are exact in bf16 and their products exact in fp32; each 128-wide K
// block's sums go onto the output times a_scale(row, block) * w_scale(rows, block).
//
// The byte interleave works within 128-bit lanes, so the 64 values come out as two vectors
// holding k = {0-7, 16-23, 32-39, 48-55} and {8-15, 24-31, 40-47, 56-63} of the 64; A is
// stored in that order (permute_a_fp8_pairs), so the pairs meet their partners.

// GCC 12 reports the _mm512_undefined_*() inside its own intrinsics as maybe-uninitialized
// (as in simd_avx512.hpp); the values are fully defined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "attain/dtype.hpp"
#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm::detail {

namespace {

struct Tables {
  __m512i lo0, lo1, hi0, hi1;
};

Tables make_tables(const float* e4m3) {
  alignas(64) std::uint8_t lo[128], hi[128];
  for (int m = 0; m < 128; ++m) {
    const std::uint16_t h = f32_to_bf16(e4m3[m]);  // exact; the NaN code gives a quiet NaN
    lo[m] = static_cast<std::uint8_t>(h & 0xff);
    hi[m] = static_cast<std::uint8_t>(h >> 8);
  }
  return {_mm512_load_si512(lo), _mm512_load_si512(lo + 64), _mm512_load_si512(hi),
          _mm512_load_si512(hi + 64)};
}

// 64 e4m3 bytes at p as bf16 in the order above.
inline void convert64(const std::uint8_t* p, const Tables& t, __m512i& w0, __m512i& w1) {
  const __m512i x = _mm512_loadu_si512(p);
  const __m512i lo = _mm512_permutex2var_epi8(t.lo0, x, t.lo1);  // index bit 7 (sign) ignored
  __m512i hi = _mm512_permutex2var_epi8(t.hi0, x, t.hi1);
  hi = _mm512_ternarylogic_epi32(hi, x, _mm512_set1_epi8(static_cast<char>(0x80)), 0xf8);
  w0 = _mm512_unpacklo_epi8(lo, hi);
  w1 = _mm512_unpackhi_epi8(lo, hi);
}

inline __m512 dot(__m512 acc, __m512i a, __m512i w) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(w));
}

// Rows i0.. of A (MB of them) times W rows j0.. (NB of them) over all of K (a multiple of 64).
template <int MB, int NB>
void block(const DecodeArgs& g, const Tables& t, std::int64_t i0, std::int64_t j0,
           std::int64_t ahead) {
  const std::uint8_t* w[NB];
  for (int j = 0; j < NB; ++j) w[j] = static_cast<const std::uint8_t*>(g.w) + (j0 + j) * g.ldw;
  // Prefetch `ahead` bytes ahead in the order the rows are consumed: further along these rows,
  // and past their end the next group's rows (the rows after j0 + NB, where there are any).
  const std::uint8_t* next[NB];
  for (int j = 0; j < NB; ++j) next[j] = j0 + NB + j < g.n1 ? w[j] + NB * g.ldw - g.k : w[j];
  const std::uint16_t* a[MB];
  for (int i = 0; i < MB; ++i) a[i] = g.a16 + (i0 + i) * g.lda16;
  __m512 acc[MB][NB] = {};
  for (std::int64_t b0 = 0; b0 < g.k; b0 += kFp8Block) {
    const std::int64_t b1 = std::min(g.k, b0 + kFp8Block);
    __m512 part[MB][NB] = {};
    for (std::int64_t p = b0; p < b1; p += 64) {
      if (ahead > 0) {
        const std::int64_t q = p + ahead;
        for (int j = 0; j < NB; ++j)
          _mm_prefetch(reinterpret_cast<const char*>((q < g.k ? w[j] : next[j]) + q), _MM_HINT_T0);
      }
      __m512i a0[MB], a1[MB];
      for (int i = 0; i < MB; ++i) {
        a0[i] = _mm512_loadu_si512(a[i] + p);
        a1[i] = _mm512_loadu_si512(a[i] + p + 32);
      }
      for (int j = 0; j < NB; ++j) {
        __m512i w0, w1;
        convert64(w[j] + p, t, w0, w1);
        for (int i = 0; i < MB; ++i) part[i][j] = dot(dot(part[i][j], a0[i], w0), a1[i], w1);
      }
    }
    const std::int64_t kb = b0 / kFp8Block;
    for (int j = 0; j < NB; ++j) {
      const float ws = g.w_scale[((j0 + j) / kFp8Block) * g.ld_wscale + kb];
      for (int i = 0; i < MB; ++i)
        acc[i][j] = _mm512_fmadd_ps(
            part[i][j], _mm512_set1_ps(ws * g.a_scale[(i0 + i) * g.ld_ascale + kb]), acc[i][j]);
    }
  }
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < NB; ++j)
      g.out[(i0 + i) * g.ldo + (j0 + j - g.n0)] = _mm512_reduce_add_ps(acc[i][j]);
}

template <int NB>
void rows_of_a(const DecodeArgs& g, const Tables& t, std::int64_t j0, std::int64_t ahead) {
  std::int64_t i0 = 0;
  for (; i0 + 2 <= g.m; i0 += 2) block<2, NB>(g, t, i0, j0, i0 == 0 ? ahead : 0);
  if (i0 < g.m) block<1, NB>(g, t, i0, j0, i0 == 0 ? ahead : 0);
}

}  // namespace

void decode_fp8_pairs_avx512vbmi(const DecodeArgs& g) {
  const Tables t = make_tables(g.e4m3);
  // Prefetch distance per W row: 4 KiB per pipeline stage beyond the first (--stages 1: none,
  // the hardware prefetcher alone).
  const std::int64_t ahead = std::int64_t{4096} * (g.stages - 1);
  std::int64_t j0 = g.n0;
  for (; j0 + 4 <= g.n1; j0 += 4) rows_of_a<4>(g, t, j0, ahead);
  for (; j0 < g.n1; ++j0) rows_of_a<1>(g, t, j0, ahead);
}

void permute_a_fp8_pairs(const std::uint8_t* a, std::int64_t k, const float* e4m3,
                         std::uint16_t* dst) {
  std::uint16_t bf[256];
  for (int v = 0; v < 256; ++v) bf[v] = f32_to_bf16(e4m3[v]);
  for (std::int64_t b = 0; b < k; b += 64)
    for (int half = 0; half < 2; ++half)
      for (int lane = 0; lane < 4; ++lane)
        for (int q = 0; q < 8; ++q)
          dst[b + half * 32 + lane * 8 + q] = bf[a[b + lane * 16 + half * 8 + q]];
}

}  // namespace attain::gemm::detail
