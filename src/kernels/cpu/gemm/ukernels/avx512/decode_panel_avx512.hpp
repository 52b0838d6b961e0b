// The panel kernel's AVX-512 part (decode_panel.hpp): zmm accumulators, all 8 rows of A in one
// pass (8 x 3 accumulators, 3 W vectors and an A vector of the 32 registers), and the sums of a
// row's accumulators stored with one masked store. The AVX-512 routes derive from Avx512Panel.
// Their policies also drive the short rows (decode_short, below).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/decode_panel.hpp"

namespace attain::gemm::detail {
namespace {

struct Avx512Panel {
  using Acc = __m512;
  static constexpr int kMinM = kDecodePanelMinM, kPassRows = kDecodePanelMaxM;
  static constexpr std::int64_t kFarMaxRow = 0;
  static constexpr bool kNextChunk = false, kFoldA = false;
  static __m512 zero() { return _mm512_setzero_ps(); }
  static void sums(float* out, int live, bool add, __m512 a0, __m512 a1, __m512 a2) {
    const auto mask = static_cast<__mmask8>((1u << live) - 1);
    __m128 s = Avx512::hsum4(a0, a1, a2, a2);
    if (add) s = _mm_add_ps(s, _mm_maskz_loadu_ps(mask, out));
    _mm_mask_storeu_ps(out, mask, s);
  }
};

// ---- Short rows ----
// W rows of at most kDecodeShortMaxK values (attention's products at decode: K = 64-128) against
// at most kDecodePanelMaxM rows of A, written once over a panel policy P (the fp32 route's
// Fp32Route<T>, decode_avx512.cpp; bf16 pairs, decode_bf16_avx512bf16.cpp): K a whole number of
// P::kStep. The 4 x 4 blocks (Stream::block, pairs_block) spend more of such a row's time on what
// surrounds its few steps than on them: per group of four W rows a pipeline tile or a call per
// block of rows of A, the row and prefetch pointers (more than the integer registers: GCC keeps
// them in vector registers), the prefetch rules' tests, and four hsum4 trees. decode_short runs
// every group in one loop: A packed interleaved a step at a time (one pointer; 5-8 rows as two
// blocks, the second reading the group from L1), the group's sixteen sums in one tree
// (Avx512::hsum16), and the group kDecodeShortAheadBytes on fetched into L1, a share of its lines
// with each step (--stages 1: none). Batched 256 x (4 x 2048 x 128) runs 1.8x faster so in fp16,
// 1.2x in bf16 pairs.
inline constexpr std::int64_t kDecodeShortMaxK = 256;
// Three batched K = 128 products, geomean against 8 KiB: 4 KiB 0.86x, 16 KiB 0.95x, 32 KiB 0.92x.
inline constexpr std::int64_t kDecodeShortAheadBytes = 8 * 1024;

// Whether m rows of A over K = k take the short rows, for a policy of `step` values a vector, from
// min_m rows of A: fp32 W and bf16 pairs with one or two rows of A keep their kernels' rows in
// address order (Stream::row_order, pairs_block's sum_rows; on the short rows fp32 2 x 65536 x
// 64 ran 0.76x, bf16 batched 64 x (2 x 2048 x 128) 0.86-0.90x).
inline bool decodes_short(std::int64_t m, std::int64_t k, std::int64_t step, std::int64_t min_m) {
  return k > 0 && k % step == 0 && k <= kDecodeShortMaxK && m >= min_m && m <= kDecodePanelMaxM;
}

// Rows [i0, i0 + MBc) of A (packed: ap[(s MBc + i) P::kStep + l] = A(i0 + i, s P::kStep + l))
// against the W rows `rows` (nb of them valid) over all of K, the sums into g.out; with `pf`, the
// lines [s per_step, (s + 1) per_step) of the group at pf (line l: row l % 4, bytes 64 (l / 4)
// on) with step s.
template <class P, int MBc>
void short_block(const DecodeArgs& g, const typename P::A* ap, std::int64_t i0, std::int64_t j0,
                 int nb, const std::byte* const (&rows)[4], const char* pf, std::int64_t pf_ld,
                 std::int64_t lines, std::int64_t per_step) {
  __m512 acc[4][4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) acc[i][j] = P::zero();
  const std::int64_t steps = g.k / P::kStep;
  std::int64_t line = 0;
#pragma GCC unroll 2
  for (std::int64_t s = 0; s < steps; ++s) {
    if (pf != nullptr)
      for (std::int64_t e = line + per_step; line < e && line < lines; ++line)
        prefetch_line(pf + (line % 4) * pf_ld + (line / 4) * 64);
    typename P::W w[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) w[j] = P::load(rows[j], s * P::kStep);
#pragma GCC unroll 4
    for (int i = 0; i < MBc; ++i) {
      const auto a = P::a_load(ap + (s * MBc + i) * P::kStep);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc[i][j] = P::dot(acc[i][j], a, w[j]);
    }
  }
  // Lane 4 i + j of the tree holds the sums (i, j): 128 bits a row of A, the W rows past nb masked.
  const __m512 r = Avx512::hsum16(acc[0][0], acc[0][1], acc[0][2], acc[0][3], acc[1][0], acc[1][1],
                                  acc[1][2], acc[1][3], acc[2][0], acc[2][1], acc[2][2], acc[2][3],
                                  acc[3][0], acc[3][1], acc[3][2], acc[3][3]);
  float* out = g.out + i0 * g.ldo + (j0 - g.n0);
  const auto live = static_cast<__mmask8>((1u << nb) - 1);
  _mm_mask_storeu_ps(out, live, _mm512_extractf32x4_ps(r, 0));
  if constexpr (MBc > 1) _mm_mask_storeu_ps(out + g.ldo, live, _mm512_extractf32x4_ps(r, 1));
  if constexpr (MBc > 2) _mm_mask_storeu_ps(out + 2 * g.ldo, live, _mm512_extractf32x4_ps(r, 2));
  if constexpr (MBc > 3) _mm_mask_storeu_ps(out + 3 * g.ldo, live, _mm512_extractf32x4_ps(r, 3));
}

// Columns [n0, n1) of the out rows over all of K (decodes_short holds).
template <class P>
void decode_short(const DecodeArgs& g) {
  using A = typename P::A;
  constexpr std::int64_t MB = 4;
  const std::int64_t steps = g.k / P::kStep, es = P::kBytes, ld = g.ldw * es;
  // A in blocks of MB rows, each packed interleaved (short_block).
  alignas(64) A ap[kDecodePanelMaxM * kDecodeShortMaxK];
  const std::int64_t blocks = (g.m + MB - 1) / MB;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t r = std::min(MB, g.m - b * MB);
    for (std::int64_t s = 0; s < steps; ++s)
      for (std::int64_t i = 0; i < r; ++i)
        P::pack(g, static_cast<int>(b * MB + i), s, ap + b * MB * g.k + (s * r + i) * P::kStep);
  }
  // The group `ahead` rows on (whole groups), four rows of ceil(K es / 64) lines, a share with
  // each step.
  const std::int64_t ahead =
      g.stages > 1
          ? 4 * std::max<std::int64_t>(1, kDecodeShortAheadBytes * (g.stages - 1) / (4 * g.k * es))
          : 0;
  const std::int64_t lines = 4 * ((g.k * es + 63) / 64), per_step = (lines + steps - 1) / steps;
  const auto* w = static_cast<const std::byte*>(g.w);
  for (std::int64_t j0 = g.n0; j0 < g.n1; j0 += 4) {
    const int nb = static_cast<int>(std::min<std::int64_t>(4, g.n1 - j0));
    const std::byte* rows[4];
    for (int j = 0; j < 4; ++j) rows[j] = w + (j0 + std::min(j, nb - 1)) * ld;
    const char* pf = ahead > 0 && j0 + ahead + 4 <= g.n1
                         ? reinterpret_cast<const char*>(w + (j0 + ahead) * ld)
                         : nullptr;
    for (std::int64_t b = 0; b < blocks; ++b) {
      const A* apb = ap + b * MB * g.k;
      const char* pfb = b == 0 ? pf : nullptr;  // the other block reads the group from L1
      switch (std::min(MB, g.m - b * MB)) {
        case 1:
          short_block<P, 1>(g, apb, b * MB, j0, nb, rows, pfb, ld, lines, per_step);
          break;
        case 2:
          short_block<P, 2>(g, apb, b * MB, j0, nb, rows, pfb, ld, lines, per_step);
          break;
        case 3:
          short_block<P, 3>(g, apb, b * MB, j0, nb, rows, pfb, ld, lines, per_step);
          break;
        default:
          short_block<P, 4>(g, apb, b * MB, j0, nb, rows, pfb, ld, lines, per_step);
      }
    }
  }
}

}  // namespace
}  // namespace attain::gemm::detail
