// The bf16 x bf16 decode loop on AVX512-BF16 (decode_bf16_avx512bf16.cpp), and the pieces the
// fp8 x fp8 decode shares with it (decode_fp8_avx512vbmi.cpp): rows of A in blocks of up to
// Source::kRows, W rows in groups of four, all of K per group, one vdpbf16ps per 32 values of
// K per row of A, the W stream prefetched ahead in the order the rows are consumed. Included
// only by ISA files compiled with AVX512-BF16; every function has internal linkage
// (kernels.hpp: no inline function of a shared header may be picked by the linker for another
// ISA's code).
//
// A Source says how a W row's values become vectors of 32 bf16 (A's rows are read as-is from g.a16
// with stride g.lda16): load32 loads 32 values as one; load_tail reads a row's last < 64 values;
// kBytes is the bytes per W value. The loop keeps one vector of A per row live, 32 values a step:
// at 64 values a step the 4 x 4 block's 16 sums, 8 A vectors and the W vectors of two unrolled
// steps do not fit the 32 registers and GCC spills inside the loop.
#pragma once

// (GCC 12's (maybe-)uninitialized reports from inside its own reduction intrinsics are silenced
// by simd_avx512.hpp, included below for the reduction trees.)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/gemm/kernels.hpp"
#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"

namespace attain::gemm::detail {
namespace {

inline __m512 dot_bf16(__m512 acc, __m512i a, __m512i w) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(w));
}

// Lanes of the two 32-value vectors that hold the `r` (< 64) values left at a row's end.
inline __mmask32 tail_mask(std::int64_t r, int half) {
  const std::int64_t n = std::clamp<std::int64_t>(r - 32 * half, 0, 32);
  return n == 32 ? ~__mmask32{0} : static_cast<__mmask32>((std::uint32_t{1} << n) - 1);
}

// Accumulators zeroed one register at a time: with `= {}` (and the lambdas below not inlined) GCC
// keeps them in a stack array cleared by `rep stos` for every block, a third of the time of a K =
// 128 decode. Every loop that indexes the sums is unrolled for the same reason: one that is not
// (the row order's loop over W rows, the K tail's) leaves all sixteen in a stack array, zeroed,
// stored and reloaded around every block.
template <int MB, int NB>
inline __attribute__((always_inline)) void zero_sums(__m512 (&v)[MB][NB]) {
#pragma GCC unroll 4
  for (int i = 0; i < MB; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) v[i][j] = _mm512_setzero_ps();
}

// A 4 x 4 block's sixteen sums in one tree (Avx512::hsum16): lane 4 i + j holds sums (i, j).
inline __attribute__((always_inline)) __m512 hsum_block(const __m512 (&s)[4][4]) {
  return Avx512::hsum16(s[0][0], s[0][1], s[0][2], s[0][3], s[1][0], s[1][1], s[1][2], s[1][3],
                        s[2][0], s[2][1], s[2][2], s[2][3], s[3][0], s[3][1], s[3][2], s[3][3]);
}

// Such a reduction's four rows (128 bits each) into out, rows ldo apart (the chunk index of the
// extract must be an immediate, so the four are written out).
inline __attribute__((always_inline)) void store_rows4(float* out, std::int64_t ldo, __m512 r) {
  _mm_storeu_ps(out, _mm512_extractf32x4_ps(r, 0));
  _mm_storeu_ps(out + ldo, _mm512_extractf32x4_ps(r, 1));
  _mm_storeu_ps(out + 2 * ldo, _mm512_extractf32x4_ps(r, 2));
  _mm_storeu_ps(out + 3 * ldo, _mm512_extractf32x4_ps(r, 3));
}

// Not read (pairs_block's `carry`; the fp8 decode, which carried sums between chunks of K, lives in
// decode_fp8_avx512vbmi.cpp). Dropping the parameter changes GCC 12's inlining of the one-row
// blocks and slows them; kept until that is understood.
struct Carry {
  __m512* sums = nullptr;
  bool load = false, save = false;
};

// A block's share of a group of W rows further on (pairs_decode_spread): lines [first, last)
// of that group, numbered across its four rows (line l: row l % 4, bytes 64 (l / 4) on),
// per_step of them with each step of 64 values of K.
struct GroupPrefetch {
  const std::uint8_t* row[kDecodeRows] = {};
  std::int64_t first = 0, last = 0;
  int per_step = 0;
};

// One block of rows of A (M <= Source::kRows) against W rows longer than a page: the hardware
// prefetcher streams the rows, and the far line and the next group's rows in L2 (pairs_block's
// far and kL2) only slow it (without them, M 2-4, K 2880-14336: 1.01-1.6x, Zen 5 guest). Rows of
// a page or less need them: the hardware prefetcher stops at each page's end (M 2, K 1536-2048:
// 0.60-0.73x without).
template <class Source>
bool streams_alone(const DecodeArgs& g) {
  return g.m <= Source::kRows && g.k * Source::kBytes > kDecodePageBytes;
}

// Rows i0.. of A (MB of them) times W rows j0.. (NB of them) over all of K. The W prefetch runs
// `ahead` bytes along the rows, or (kSpread) over gp's lines. (A template parameter: a test of gp
// in every step slows the one-row blocks.)
//
// With kL2 (the caller's W past the L2, more than one row of A, not streams_alone), the first
// block of rows of A also prefetches the next group's rows into L2 at the place in them it reads in
// its own (next[j] + row_bytes + the offset; the last group, the rows after it), as the fp8
// decode's loops do: the hardware prefetcher alone leaves memory idle while the dots run. One row
// of A (one dot per 64 bytes) keeps the hardware prefetcher alone. (A template parameter too: the
// test in the loop, never taken, slows short in-cache products.)
template <class Source, int MB, int NB, bool kSpread = false, bool kL2 = false>
void pairs_block(const DecodeArgs& g, const Source& src, std::int64_t i0, std::int64_t j0,
                 std::int64_t ahead, [[maybe_unused]] const Carry& carry = {},
                 const GroupPrefetch* gp = nullptr) {
  constexpr std::int64_t es = Source::kBytes;
  const auto* base = static_cast<const std::uint8_t*>(g.w);
  const std::uint8_t* w[NB];
  for (int j = 0; j < NB; ++j) w[j] = base + (j0 + j) * g.ldw * es;
  // Prefetch `ahead` bytes ahead in the order the rows are consumed: further along these rows,
  // and past their end the next group's rows (the rows after j0 + NB, where there are any).
  const std::int64_t row_bytes = g.k * es;
  const std::uint8_t* next[NB];
  for (int j = 0; j < NB; ++j)
    next[j] = j0 + NB + j < g.n1 ? w[j] + NB * g.ldw * es - row_bytes : w[j];
  const std::uint16_t* a[MB];
  for (int i = 0; i < MB; ++i) a[i] = g.a16 + (i0 + i) * g.lda16;
  std::int64_t line = kSpread ? gp->first : 0;
  // From two rows of A the first block also prefetches the line kDecodeFarBytes on in each row into
  // L2 (kernels.hpp), beside the next group's lines (kL2); the far line alone, without kL2, does
  // not pay. Not where one block's W rows stream on the hardware prefetcher (streams_alone).
  const bool far = MB > 1 && !kSpread && i0 == 0 && g.stages > 1 && !streams_alone<Source>(g);
  // Sums of K values [b0, b1) (multiples of 64) into part.
  auto sum = [&](std::int64_t b0, std::int64_t b1, __m512(&part)[MB][NB])
      __attribute__((always_inline)) {
#pragma GCC unroll 1
    for (std::int64_t p = b0; p < b1; p += 64) {
      if constexpr (kSpread)
        for (int n = 0; n < gp->per_step && line < gp->last; ++n, ++line)
          _mm_prefetch(reinterpret_cast<const char*>(gp->row[line & 3] + (line >> 2) * 64),
                       _MM_HINT_T0);
      if (far)
        for (std::int64_t q = p * es; q < (p + 64) * es; q += 64)
          for (int j = 0; j < NB; ++j)
            _mm_prefetch(reinterpret_cast<const char*>(w[j] + q + kDecodeFarBytes), _MM_HINT_T1);
      if (kL2 && i0 == 0)
        for (std::int64_t q = p * es; q < (p + 64) * es; q += 64)
          for (int j = 0; j < NB; ++j)
            _mm_prefetch(reinterpret_cast<const char*>(next[j] + row_bytes + q), _MM_HINT_T1);
      if (ahead > 0)  // every line of the 64 values `ahead` bytes further on
        for (std::int64_t q = p * es + ahead; q < (p + 64) * es + ahead; q += 64)
          for (int j = 0; j < NB; ++j)
            _mm_prefetch(reinterpret_cast<const char*>((q < row_bytes ? w[j] : next[j]) + q),
                         _MM_HINT_T0);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {  // 32 values at a time: MB + 1 vectors live
        __m512i a0[MB];
#pragma GCC unroll 4
        for (int i = 0; i < MB; ++i) a0[i] = _mm512_loadu_si512(a[i] + p + 32 * h);
#pragma GCC unroll 4
        for (int j = 0; j < NB; ++j) {
          const __m512i w0 = src.load32(w[j] + (p + 32 * h) * es);
#pragma GCC unroll 4
          for (int i = 0; i < MB; ++i) part[i][j] = dot_bf16(part[i][j], a0[i], w0);
        }
      }
    }
  };
  // Short rows that lie back to back (ldw = K) one after another, 32 values a step, so that the
  // loads reach memory as one stream in address order (Stream::row_order_pays, fp32: a vector of
  // each row in turn is four streams too short for the prefetchers). With more rows of A only the
  // first block of them (the one that reads W from memory; the others find it in L1 and would only
  // pay more A loads). Two or more rows of A also prefetch the line kDecodeFarBytes on into L2
  // (`far`, kernels.hpp). (Called for the first block of rows of A only.)
  auto sum_rows = [&](std::int64_t k64, __m512(&part)[MB][NB]) __attribute__((always_inline)) {
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
#pragma GCC unroll 2
      for (std::int64_t p = 0; p < k64; p += 32) {
        if (ahead > 0)  // the line `ahead` bytes further on in address order (the rows are)
          _mm_prefetch(reinterpret_cast<const char*>(w[j] + p * es + ahead), _MM_HINT_T0);
        if (far)
          _mm_prefetch(reinterpret_cast<const char*>(w[j] + p * es + kDecodeFarBytes), _MM_HINT_T1);
        const __m512i w0 = src.load32(w[j] + p * es);
#pragma GCC unroll 4
        for (int i = 0; i < MB; ++i)
          part[i][j] = dot_bf16(part[i][j], _mm512_loadu_si512(a[i] + p), w0);
      }
    }
  };
  // The sums reduce in trees (Avx512::hsum16 and hsum4), not one horizontal sum each: with a short
  // K (attention's K = 128: two k steps per row) the reduction costs as much as the products.
  auto store = [&](__m512(&sums)[MB][NB]) __attribute__((always_inline)) {
    if constexpr (MB == 4 && NB == 4) {  // all sixteen in one tree, a row of A per 128 bits
      store_rows4(g.out + i0 * g.ldo + (j0 - g.n0), g.ldo, hsum_block(sums));
      return;
    }
#pragma GCC unroll 4
    for (int i = 0; i < MB; ++i) {
      float* out = g.out + (i0 + i) * g.ldo + (j0 - g.n0);
      if constexpr (NB == 4) {
        _mm_storeu_ps(out, Avx512::hsum4(sums[i][0], sums[i][1], sums[i][2], sums[i][3]));
      } else {
#pragma GCC unroll 4
        for (int j = 0; j < NB; ++j) out[j] = _mm512_reduce_add_ps(sums[i][j]);
      }
    }
  };
  // All of K in one sum; the last < 64 values with zeros beyond K on both sides.
  __m512 part[MB][NB];
  zero_sums(part);
  const std::int64_t k64 = g.k - g.k % 64;
  // Two rows of A (M = 2) take the rows in order up to 4 KiB where this call's W is past the L2
  // (streamed from memory); in cache the chains of one sum per row of A are slower, so small W
  // stays here.
  if (!kSpread && i0 == 0 &&
      (short_rows_in_order(g.ldw, g.k, row_bytes, MB == 1) ||
       (MB == 2 && g.m == 2 && g.ldw == g.k && row_bytes <= 4096 &&
        (g.n1 - g.n0) * row_bytes > kDecodeStreamedBytes)))
    sum_rows(k64, part);
  else
    sum(0, k64, part);
  if (k64 < g.k) {
    const std::int64_t r = g.k - k64;
    const __mmask32 m0 = tail_mask(r, 0), m1 = tail_mask(r, 1);
    __m512i a0[MB], a1[MB];
#pragma GCC unroll 4
    for (int i = 0; i < MB; ++i) {
      a0[i] = _mm512_maskz_loadu_epi16(m0, a[i] + k64);
      a1[i] = _mm512_maskz_loadu_epi16(m1, a[i] + k64 + 32);
    }
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      __m512i w0, w1;
      src.load_tail(w[j] + k64 * es, m0, m1, w0, w1);
#pragma GCC unroll 4
      for (int i = 0; i < MB; ++i)
        part[i][j] = dot_bf16(dot_bf16(part[i][j], a0[i], w0), a1[i], w1);
    }
  }
  store(part);
}

// The blocks of rows of A, in order: R rows at a time, then (R >= 4) two, then one. Calls
// block(std::integral_constant<int, rows>, first row, block index) for each; returns the count.
template <int R, class Block>
inline __attribute__((always_inline)) std::int64_t for_row_blocks(std::int64_t m, Block&& block) {
  std::int64_t i0 = 0, b = 0;
  for (; i0 + R <= m; i0 += R) block(std::integral_constant<int, R>{}, i0, b++);
  if constexpr (R >= 4)
    if (i0 + 2 <= m) {
      block(std::integral_constant<int, 2>{}, i0, b++);
      i0 += 2;
    }
  if (i0 < m) block(std::integral_constant<int, 1>{}, i0, b++);
  return b;
}

// (carry: see Carry.)
template <class Source, int NB, bool kL2 = false>
void pairs_rows_of_a(const DecodeArgs& g, const Source& src, std::int64_t j0, std::int64_t ahead,
                     const Carry& carry = {}) {
  for_row_blocks<Source::kRows>(g.m, [&](auto rows, std::int64_t i0, std::int64_t) {
    Carry c = carry;
    if (c.sums != nullptr) c.sums += i0 * kDecodeRows;
    pairs_block<Source, decltype(rows)::value, NB, false, kL2>(g, src, i0, j0, i0 == 0 ? ahead : 0,
                                                               c);
  });
}

// Unscaled sources (bf16) with more than one block of rows of A and W rows of 1-3 KiB: the group of
// four W rows `groups_ahead` groups on is prefetched by every block of rows of A, each a share of
// its lines, so that memory streams while each block computes. With the prefetch in the first block
// only (the others read the group from L1), the weight stream stops while they run (an MoE layer's
// experts at 8 rows, K = 768: 15.4 -> 9.5 ms). Shorter rows (attention's K = 128-256) and longer
// ones (K >= 2048) keep the first block's prefetch along the rows.
inline bool spreads_prefetch(std::int64_t m, std::int64_t row_bytes, int block_rows) {
  return m > block_rows && row_bytes >= 1024 && row_bytes <= 3072;
}

// The full groups of four W rows from g.n0; returns the first row it left (pairs_decode's tail).
template <class Source>
std::int64_t pairs_decode_spread(const DecodeArgs& g, const Source& src,
                                 std::int64_t groups_ahead) {
  constexpr std::int64_t es = Source::kBytes;
  const auto* base = static_cast<const std::uint8_t*>(g.w);
  const std::int64_t blocks = for_row_blocks<Source::kRows>(g.m, [](auto, auto, auto) {});
  const std::int64_t row_bytes = g.k * es;
  const std::int64_t lines = kDecodeRows * ((row_bytes + 63) / 64);  // of a group
  const std::int64_t steps = (g.k + 63) / 64;                        // of a block
  std::int64_t j0 = g.n0;
  for (; j0 + kDecodeRows <= g.n1; j0 += kDecodeRows) {
    GroupPrefetch gp;
    const std::int64_t t0 = j0 + groups_ahead * kDecodeRows;  // past the last rows: none
    const std::int64_t rows = std::clamp<std::int64_t>(g.n1 - t0, 0, kDecodeRows);
    for (int j = 0; j < kDecodeRows; ++j)
      gp.row[j] = base + (rows > 0 ? t0 + std::min<std::int64_t>(j, rows - 1) : j0) * g.ldw * es;
    const std::int64_t total = rows > 0 ? lines : 0;
    for_row_blocks<Source::kRows>(g.m, [&](auto mb, std::int64_t i0, std::int64_t b) {
      gp.first = total * b / blocks;
      gp.last = total * (b + 1) / blocks;
      gp.per_step = static_cast<int>((gp.last - gp.first + steps - 1) / steps);
      pairs_block<Source, decltype(mb)::value, kDecodeRows, true>(g, src, i0, j0, 0, {}, &gp);
    });
  }
  return j0;
}

// Columns [n0, n1) in groups of four W rows. The prefetch runs 4 KiB per pipeline stage beyond the
// first ahead along each W row (--stages 1: none, the hardware prefetcher alone) - except for bf16
// W against one block of rows of A (M <= 4), a plain stream the hardware prefetcher follows, as the
// fp32 decode with fewer rows of A than a register block (simd_stream.hpp); from M = 8 the prefetch
// pays. The fp8 decode (converted in registers, more work per byte) needs it wherever it reads rows
// side by side; its short rows at M = 1-2 run in address order without it.
template <class Source>
void pairs_decode(const DecodeArgs& g, const Source& src) {
  const bool hardware_only = g.m <= Source::kRows;
  const std::int64_t ahead = hardware_only ? 0 : std::int64_t{4096} * (g.stages - 1);
  std::int64_t j0 = g.n0;
  // --stages: 6 KiB of each W row per stage beyond the first (K = 768: four groups on).
  const std::int64_t row_bytes = g.k * Source::kBytes;
  const bool spread = g.stages > 1 && spreads_prefetch(g.m, row_bytes, Source::kRows);
  if (spread)
    j0 = pairs_decode_spread(g, src, (6144 * (g.stages - 1) + row_bytes - 1) / row_bytes);
  else if (g.m > 1 && g.stages > 1 && !streams_alone<Source>(g) &&
           (g.n1 - g.n0) * row_bytes > kDecodeStreamedBytes)
    for (; j0 + 4 <= g.n1; j0 += 4) pairs_rows_of_a<Source, 4, true>(g, src, j0, ahead);
  else
    for (; j0 + 4 <= g.n1; j0 += 4) pairs_rows_of_a<Source, 4>(g, src, j0, ahead);
  for (; j0 < g.n1; ++j0) pairs_rows_of_a<Source, 1>(g, src, j0, ahead);
}

}  // namespace
}  // namespace attain::gemm::detail
