// fp8 x fp8 decode (few rows of A) as bf16 pairs, AVX512-BF16 + AVX512-VBMI. Each 64 bytes of
// a W row become 64 bf16 values with two byte lookups (vpermi2b over the 128 e4m3 magnitudes:
// one table for the low byte of the bf16, one for the high byte; the sign bit is or-ed in) and
// two byte interleaves, then two vdpbf16ps per row of A: about 1.75 instructions per 16 values
// where the fp32 route takes 4 to convert, 1 to multiply and a NaN scan. The tables map the
// NaN codes to a bf16 NaN and the subnormals to their exact values, so nothing is checked on
// the way. e4m3 values are exact in bf16 and their products exact in fp32; each 128-wide K
// block's sums are scaled by a_scale(row, block) * w_scale(rows, block).
//
// The scales change every 128 values of K, every fourth vdpbf16ps of a sum. Reducing a 4 x 4
// block's sixteen sums per 128 block (a tree of 45 operations per 64 products) held the kernel
// at 0.3-0.45 of the bf16 dot peak in cache. So the 64 bytes one step converts come from two
// scale blocks: bytes 32t.. of a super-block's first block (256 values: two scale blocks) in
// the low 256 bits, bytes 128 + 32t.. of its second in the high 256 bits (t = 0-3), and each
// sum's low 8 lanes hold the first block's products, its high 8 lanes the second's. A super-
// block's sums are scaled once, by a vector of the two blocks' scales, onto totals kept in
// memory (L1): 16 products per flush instead of 4, and no reduction until the end of K. The
// byte interleave works within 128-bit lanes, so a step's 64 values come out as two vectors in
// the order {0-7, 16-23 | 128-135, 144-151} + 32t and {8-15, 24-31 | 136-143, 152-159} + 32t;
// A is stored in that order (permute_a_fp8_pairs, the same gather and conversion), in rows of
// whole super-blocks, so the pairs meet their partners.

#include <immintrin.h>

#include "attain/dtype.hpp"
#include "kernels/cpu/gemm/kernels.hpp"
#include "kernels/cpu/gemm/ukernels/avx512/decode_pairs_avx512.hpp"

namespace attain::gemm::detail {

namespace {

// The 256 e4m3 codes as bf16 (exact; the NaN codes give a quiet NaN), and the low and high
// bytes of the first 128 (the magnitudes) as vpermi2b tables: built once, not per call (the
// packing converts one row of a panel per call).
struct E4m3Tables {
  std::uint16_t bf16[256];
  alignas(64) std::uint8_t lo[128], hi[128];
  explicit E4m3Tables(const float* e4m3) {
    for (int c = 0; c < 256; ++c) bf16[c] = f32_to_bf16(e4m3[c]);
    for (int m = 0; m < 128; ++m) {
      lo[m] = static_cast<std::uint8_t>(bf16[m] & 0xff);
      hi[m] = static_cast<std::uint8_t>(bf16[m] >> 8);
    }
  }
};
const E4m3Tables& e4m3_tables(const float* e4m3) {
  static const E4m3Tables t(e4m3);  // e4m3 is the one decode table (dtype.hpp)
  return t;
}

// The low and high bytes of the bf16 of the 128 e4m3 magnitudes, in registers.
struct E4m3Lookup {
  __m512i lo0, lo1, hi0, hi1;

  explicit E4m3Lookup(const float* e4m3) {
    const E4m3Tables& t = e4m3_tables(e4m3);
    lo0 = _mm512_load_si512(t.lo);
    lo1 = _mm512_load_si512(t.lo + 64);
    hi0 = _mm512_load_si512(t.hi);
    hi1 = _mm512_load_si512(t.hi + 64);
  }
  // 64 e4m3 bytes as bf16 in the interleave's order.
  __attribute__((always_inline)) void convert(__m512i x, __m512i& w0, __m512i& w1) const {
    const __m512i lo = _mm512_permutex2var_epi8(lo0, x, lo1);  // index bit 7 (sign) ignored
    __m512i hi = _mm512_permutex2var_epi8(hi0, x, hi1);
    hi = _mm512_ternarylogic_epi32(hi, x, _mm512_set1_epi8(static_cast<char>(0x80)), 0xf8);
    w0 = _mm512_unpacklo_epi8(lo, hi);
    w1 = _mm512_unpackhi_epi8(lo, hi);
  }
};

// K values of a super-block: two scale blocks.
constexpr std::int64_t kSuper = kFp8PairsSuper;

// Step t (0-3) of the super-block at p, `left` values of the row from p on: bytes 32t.. of
// its first scale block in the low 256 bits, 128 + 32t.. of its second in the high. In a row's
// last super-block (left < 256, a multiple of 64) the pieces past the row read as code 0 (+0),
// as A's padding is.
template <bool kWhole = false>
__attribute__((always_inline)) inline __m512i gather(const std::uint8_t* p, int t,
                                                     std::int64_t left) {
  if (kWhole || left >= kSuper)
    return _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * t))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kFp8Block + 32 * t)), 1);
  const __mmask8 lo = 32 * t + 32 <= left ? 0x0f : 0;
  const __mmask8 hi = kFp8Block + 32 * t + 32 <= left ? 0xf0 : 0;
  const __m512i x = _mm512_maskz_loadu_epi64(lo, p + 32 * t);
  return _mm512_mask_loadu_epi64(x, hi, p + kFp8Block - 32 + 32 * t);  // high half from + 128
}

// s[0] in lanes 0-7, s[1] (read only if `two`, else s[0]: the lanes of a block past K hold sums of
// zeros) in lanes 8-15: a super-block's scales. Two broadcasts from memory, the second merged under
// a mask (faster than a masked load and a lane permute).
__attribute__((always_inline)) inline __m512 scale_pair(const float* s, bool two) {
  const __m512 v = _mm512_set1_ps(s[0]);
  return two ? _mm512_mask_mov_ps(v, 0xff00, _mm512_set1_ps(s[1])) : v;
}

// Rows i0.. of A (MB <= 4 of them) times the four W rows w[0..3] over K values [c0, c1) (c0 a
// multiple of kSuper): each super-block's sums, scaled, added onto tot[i * 4 + j]. W is prefetched
// `ahead` bytes further on in the order the rows are consumed (past a row's end, the row of the
// next group: next[j]), and with `l2` (and ahead) the next group's lines into L2 as fp8_stream
// does. Not inlined: in one function with the driver GCC keeps the totals in registers and spills
// the sums.
template <int MB>
__attribute__((noinline)) void fp8_block(const DecodeArgs& g, const E4m3Lookup& lut,
                                         const std::uint8_t* const* w,
                                         const std::uint8_t* const* next, std::int64_t i0,
                                         std::int64_t c0, std::int64_t c1, const float* ws,
                                         __m512* tot, std::int64_t ahead, bool l2) {
  const std::uint16_t* a[MB];
  for (int i = 0; i < MB; ++i) a[i] = g.a16 + (i0 + i) * g.lda16;
  const std::int64_t blocks = (g.k + kFp8Block - 1) / kFp8Block;
  for (std::int64_t k0 = c0; k0 < c1; k0 += kSuper) {
    const std::int64_t left = g.k - k0;
    const int steps = left >= kFp8Block ? 4 : static_cast<int>(left / 32);
    __m512 part[MB][kDecodeRows];
    zero_sums(part);
    auto step = [&](int t, auto whole) __attribute__((always_inline)) {
      if (ahead > 0) {
        const std::int64_t q = k0 + 64 * t + ahead;
        for (int j = 0; j < kDecodeRows; ++j)
          _mm_prefetch(reinterpret_cast<const char*>(q < g.k ? w[j] + q : next[j] + (q - g.k)),
                       _MM_HINT_T0);
        if (l2)  // the next group's super-block, a line a step (as fp8_stream)
          for (int j = 0; j < kDecodeRows; ++j)
            _mm_prefetch(reinterpret_cast<const char*>(next[j] + k0 + 64 * t), _MM_HINT_T1);
      }
#pragma GCC unroll 4
      for (int j = 0; j < kDecodeRows; ++j) {
        __m512i w0, w1;
        lut.convert(gather<decltype(whole)::value>(w[j] + k0, t, left), w0, w1);
#pragma GCC unroll 4
        for (int i = 0; i < MB; ++i)
          part[i][j] = dot_bf16(dot_bf16(part[i][j], _mm512_loadu_si512(a[i] + k0 + 64 * t), w0),
                                _mm512_loadu_si512(a[i] + k0 + 64 * t + 32), w1);
      }
    };
    if (left >= kSuper) {
#pragma GCC unroll 1
      for (int t = 0; t < 4; ++t) step(t, std::true_type{});
    } else {
#pragma GCC unroll 1
      for (int t = 0; t < steps; ++t) step(t, std::false_type{});
    }
    const std::int64_t kb = k0 / kFp8Block;
    const bool two = kb + 1 < blocks;
    const __m512 sw = scale_pair(ws + kb, two);
#pragma GCC unroll 4
    for (int i = 0; i < MB; ++i) {
      const __m512 sc = _mm512_mul_ps(scale_pair(g.a_scale + (i0 + i) * g.ld_ascale + kb, two), sw);
#pragma GCC unroll 4
      for (int j = 0; j < kDecodeRows; ++j)
        tot[i * kDecodeRows + j] = _mm512_fmadd_ps(part[i][j], sc, tot[i * kDecodeRows + j]);
    }
    asm volatile("" : : "r"(tot) : "memory");  // the totals stay in memory, the sums in registers
  }
}

// One or two rows of A (fp8_pairs_super false: A in the stream order) times the four W rows w[0..3]
// over all of K, 64 values of each row a step in address order, each scale block's sums scaled onto
// totals in registers; the totals end in tot[i * 4 + j]. With so few rows of A per W vector the
// super-blocks' gather (two loads and an insert per 64 values) and their flush through memory cost
// more than they save.
//
// With `l2`, each step also prefetches into L2 the next group's lines at the same place in their
// rows (next[j] + p: one group, 4 rows of W, ahead), beside the L1 prefetch `ahead` bytes on. At
// two dots and two lookups per 64 bytes the loop holds too few loads in flight for the hardware
// prefetcher to keep memory busy (1 x 4096 x 14336, cold: 1.33-1.4x with it), and a distance along
// the rows instead gains less. W already in L2 runs slower with it, so the caller asks for it past
// kDecodeStreamedBytes.
template <int MB>
__attribute__((noinline)) void fp8_stream(const DecodeArgs& g, const E4m3Lookup& lut,
                                          const std::uint8_t* const* w,
                                          const std::uint8_t* const* next, const float* ws,
                                          __m512* tot, std::int64_t ahead, bool l2) {
  const std::uint16_t* a[MB];
  for (int i = 0; i < MB; ++i) a[i] = g.a16 + i * g.lda16;
  __m512 acc[MB][kDecodeRows];
  zero_sums(acc);
  for (std::int64_t k0 = 0; k0 < g.k; k0 += kFp8Block) {
    __m512 part[MB][kDecodeRows];
    zero_sums(part);
    const std::int64_t k1 = std::min(g.k, k0 + kFp8Block);
#pragma GCC unroll 2
    for (std::int64_t p = k0; p < k1; p += 64) {
      if (ahead > 0) {
        const std::int64_t q = p + ahead;
        for (int j = 0; j < kDecodeRows; ++j)
          _mm_prefetch(reinterpret_cast<const char*>(q < g.k ? w[j] + q : next[j] + (q - g.k)),
                       _MM_HINT_T0);
      }
      if (l2)
        for (int j = 0; j < kDecodeRows; ++j)
          _mm_prefetch(reinterpret_cast<const char*>(next[j] + p), _MM_HINT_T1);
      __m512i a0[MB], a1[MB];
      for (int i = 0; i < MB; ++i) {
        a0[i] = _mm512_loadu_si512(a[i] + p);
        a1[i] = _mm512_loadu_si512(a[i] + p + 32);
      }
#pragma GCC unroll 4
      for (int j = 0; j < kDecodeRows; ++j) {
        __m512i w0, w1;
        lut.convert(_mm512_loadu_si512(w[j] + p), w0, w1);
        for (int i = 0; i < MB; ++i)
          part[i][j] = dot_bf16(dot_bf16(part[i][j], a0[i], w0), a1[i], w1);
      }
    }
    const std::int64_t kb = k0 / kFp8Block;
    for (int i = 0; i < MB; ++i) {
      const __m512 sc = _mm512_set1_ps(g.a_scale[i * g.ld_ascale + kb] * ws[kb]);
#pragma GCC unroll 4
      for (int j = 0; j < kDecodeRows; ++j) acc[i][j] = _mm512_fmadd_ps(part[i][j], sc, acc[i][j]);
    }
  }
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < kDecodeRows; ++j) tot[i * kDecodeRows + j] = acc[i][j];
}

// The stream order on W rows stored back to back (ldw = K) of at most kFp8RowOrderMaxK / MB values:
// the group's rows one after another, all of K each, so that the loads run through memory as one
// stream in address order, which the hardware prefetcher follows alone (as the bf16 pairs'
// sum_rows). Four rows side by side are four streams too short for it; longer rows run faster side
// by side. The line kDecodeFarBytes on goes into L2 as well.
constexpr std::int64_t kFp8RowOrderMaxK = 4096;
template <int MB>
__attribute__((noinline)) void fp8_rows(const DecodeArgs& g, const E4m3Lookup& lut,
                                        const std::uint8_t* const* w, int cols, const float* ws,
                                        __m512* tot) {
  const std::uint16_t* a[MB];
  for (int i = 0; i < MB; ++i) a[i] = g.a16 + i * g.lda16;
  const bool far = g.stages > 1;  // the line kDecodeFarBytes on into L2 (kernels.hpp)
  for (int j = 0; j < kDecodeRows; ++j) {
    __m512 acc[MB];
    for (int i = 0; i < MB; ++i) acc[i] = _mm512_setzero_ps();
    for (std::int64_t k0 = 0; j < cols && k0 < g.k; k0 += kFp8Block) {
      __m512 p0[MB], p1[MB];  // two sums a row: chains half as long
      for (int i = 0; i < MB; ++i) p0[i] = p1[i] = _mm512_setzero_ps();
      const std::int64_t k1 = std::min(g.k, k0 + kFp8Block);
#pragma GCC unroll 2
      for (std::int64_t p = k0; p < k1; p += 64) {
        if (far)
          _mm_prefetch(reinterpret_cast<const char*>(w[j] + p + kDecodeFarBytes), _MM_HINT_T1);
        __m512i w0, w1;
        lut.convert(_mm512_loadu_si512(w[j] + p), w0, w1);
        for (int i = 0; i < MB; ++i) {
          p0[i] = dot_bf16(p0[i], _mm512_loadu_si512(a[i] + p), w0);
          p1[i] = dot_bf16(p1[i], _mm512_loadu_si512(a[i] + p + 32), w1);
        }
      }
      const std::int64_t kb = k0 / kFp8Block;
      for (int i = 0; i < MB; ++i)
        acc[i] = _mm512_fmadd_ps(_mm512_add_ps(p0[i], p1[i]),
                                 _mm512_set1_ps(g.a_scale[i * g.ld_ascale + kb] * ws[kb]), acc[i]);
    }
    for (int i = 0; i < MB; ++i) tot[i * kDecodeRows + j] = acc[i];  // (zero past cols)
  }
}

// Rows i0.. (MB) of the totals reduced into the output's columns j0.. (cols <= 4 of them).
template <int MB>
void store_totals(const DecodeArgs& g, std::int64_t i0, std::int64_t j0, int cols,
                  const __m512* t) {
  float* out = g.out + i0 * g.ldo + (j0 - g.n0);
  if constexpr (MB == 4) {
    if (cols == kDecodeRows)
      return store_rows4(out, g.ldo,
                         Avx512::hsum16(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9],
                                        t[10], t[11], t[12], t[13], t[14], t[15]));
  }
  for (int i = 0; i < MB; ++i) {
    alignas(16) float r[kDecodeRows];
    _mm_store_ps(r, Avx512::hsum4(t[i * 4], t[i * 4 + 1], t[i * 4 + 2], t[i * 4 + 3]));
    for (int j = 0; j < cols; ++j) out[i * g.ldo + j] = r[j];
  }
}

// The rows of A in blocks of four, then one block of the 1-3 left: calls block(rows, i0).
template <class Block>
inline __attribute__((always_inline)) void fp8_row_blocks(std::int64_t m, Block&& block) {
  std::int64_t i0 = 0;
  for (; i0 + 4 <= m; i0 += 4) block(std::integral_constant<int, 4>{}, i0);
  switch (m - i0) {
    case 3:
      return block(std::integral_constant<int, 3>{}, i0);
    case 2:
      return block(std::integral_constant<int, 2>{}, i0);
    case 1:
      return block(std::integral_constant<int, 1>{}, i0);
    default:
      return;
  }
}

}  // namespace

// W rows [n0, n1) in groups of four (the last group's missing rows repeat its last row, and are not
// stored), all rows of A against each group. One or two rows of A take the stream order (fp8_rows
// on short rows back to back, else fp8_stream); more the super-blocks (fp8_block, in blocks of four
// rows of A and one of the 1-3 left). With more than one block of rows of A, K runs in chunks of
// k_tile values (rounded up to whole super-blocks), so that the other blocks find the group's chunk
// of W in L1; every block converts W for itself (converting once into bf16 pairs in L1 for all the
// blocks is slower: the converted rows' loads). The prefetch runs 4 KiB per pipeline stage beyond
// the first along each W row, from the first block of rows of A only (the others read the chunk
// from L1).
void decode_fp8_pairs_avx512vbmi(const DecodeArgs& g) {
  const E4m3Lookup lut(g.e4m3);
  const std::int64_t ahead = std::int64_t{4096} * (g.stages - 1);
  const std::int64_t kc = g.m > kDecodeRows ? fp8_pairs_row(g.k_tile) : g.k;
  const auto* base = static_cast<const std::uint8_t*>(g.w);
  alignas(64) __m512 tot[kDecodeMaxM * kDecodeRows];
  for (std::int64_t j0 = g.n0; j0 < g.n1; j0 += kDecodeRows) {
    const int cols = static_cast<int>(std::min<std::int64_t>(kDecodeRows, g.n1 - j0));
    const std::uint8_t* w[kDecodeRows];
    const std::uint8_t* next[kDecodeRows];
    for (int j = 0; j < kDecodeRows; ++j) {
      w[j] = base + (j0 + std::min(j, cols - 1)) * g.ldw;
      // (past the last group: its own rows again, already in cache)
      next[j] = j0 + kDecodeRows + j < g.n1 ? w[j] + kDecodeRows * g.ldw : w[j];
    }
    // The group's rows share one 128-row scale block: g.n0 is a multiple of kDecodeRows (the
    // decode blocks' columns are), and so is j0.
    const float* ws = g.w_scale + (j0 / kFp8Block) * g.ld_wscale;
    const bool l2 = g.stages > 1 && (g.n1 - g.n0) * g.ldw > kDecodeStreamedBytes;
    if (!fp8_pairs_super(g.m)) {
      const bool rows = g.ldw == g.k && g.k * g.m <= kFp8RowOrderMaxK;
      if (g.m == 1) {
        rows ? fp8_rows<1>(g, lut, w, cols, ws, tot)
             : fp8_stream<1>(g, lut, w, next, ws, tot, ahead, l2);
        store_totals<1>(g, 0, j0, cols, tot);
      } else {
        rows ? fp8_rows<2>(g, lut, w, cols, ws, tot)
             : fp8_stream<2>(g, lut, w, next, ws, tot, ahead, l2);
        store_totals<2>(g, 0, j0, cols, tot);
      }
      continue;
    }
    for (std::int64_t q = 0; q < g.m * kDecodeRows; ++q) tot[q] = _mm512_setzero_ps();
    for (std::int64_t c0 = 0; c0 < g.k; c0 += kc)
      fp8_row_blocks(g.m, [&](auto rows, std::int64_t i0) {
        fp8_block<decltype(rows)::value>(g, lut, w, next, i0, c0, std::min(g.k, c0 + kc), ws,
                                         tot + i0 * kDecodeRows, i0 == 0 ? ahead : 0, l2);
      });
    fp8_row_blocks(g.m, [&](auto rows, std::int64_t i0) {
      store_totals<decltype(rows)::value>(g, i0, j0, cols, tot + i0 * kDecodeRows);
    });
  }
}

void e4m3_to_bf16_avx512vbmi(const std::uint8_t* src, std::int64_t n, const float* e4m3,
                             std::uint16_t* dst) {
  const E4m3Lookup lut(e4m3);
  // The interleave gives k = {0-7, 16-23, 32-39, 48-55} and {8-15, ...}: 128-bit lanes back
  // in order by one two-source permute per output vector.
  const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  std::int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512i w0, w1;
    lut.convert(_mm512_loadu_si512(src + i), w0, w1);
    _mm512_storeu_si512(dst + i, _mm512_permutex2var_epi64(w0, first, w1));
    _mm512_storeu_si512(dst + i + 32, _mm512_permutex2var_epi64(w0, second, w1));
  }
  const std::uint16_t* bf = e4m3_tables(e4m3).bf16;
  for (; i < n; ++i) dst[i] = bf[src[i]];
}

void permute_a_fp8_pairs(const std::uint8_t* a, std::int64_t m, std::int64_t lda, std::int64_t k,
                         const float* e4m3, bool super, std::uint16_t* dst) {
  // The order W's values come out of the kernel's loads and conversion in, by the same two.
  const E4m3Lookup lut(e4m3);
  const std::int64_t ld = fp8_pairs_row(k);
  for (std::int64_t i = 0; i < m; ++i, a += lda, dst += ld) {
    if (!super) {
      for (std::int64_t b = 0; b < k; b += 64) {
        __m512i w0, w1;
        lut.convert(_mm512_loadu_si512(a + b), w0, w1);
        _mm512_storeu_si512(dst + b, w0);
        _mm512_storeu_si512(dst + b + 32, w1);
      }
      continue;
    }
    for (std::int64_t b = 0; b < k; b += kSuper)
      for (int t = 0; t < 4; ++t) {
        __m512i w0, w1;
        lut.convert(gather(a + b, t, k - b), w0, w1);
        _mm512_storeu_si512(dst + b + 64 * t, w0);
        _mm512_storeu_si512(dst + b + 64 * t + 32, w1);
      }
  }
}

}  // namespace attain::gemm::detail
