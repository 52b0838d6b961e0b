// Decode path, AVX-512: W rows streamed once and converted in registers (4 W rows x 4 A rows
// of zmm accumulators; see simd_stream.hpp), and fp32 W with 5-8 rows of A in one pass
// (decode_f32_panel below).
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/simd_stream.hpp"

namespace attain::gemm::detail {

namespace {

// Bytes ahead of the loads that each W row's software prefetch runs (stages > 1). 512-1024
// measured best on Zen 5 (8 x 24576 x 1536, 1 thread: none 10.0 ms, 256 B 9.4, 512 B 7.7,
// 1 KiB 7.6; docs/gemm.md, sixteenth session).
constexpr std::int64_t kPanelAheadBytes = 1024;
static_assert(kDecodePanelMinK * 4 >= kPanelAheadBytes, "rows shorter than the distance");

// A's MB rows interleaved a vector at a time: panel[(s * MB + i) * 16 + l] = a(i, 16 s + l),
// zeros past K, so one pointer walks all rows (eight row pointers and three W rows left GCC
// too few registers: it spilled them and ran 1.4x slower).
template <int MB>
void pack_panel(const DecodeArgs& g, float* panel) {
  const std::int64_t steps = (g.k + 15) / 16;
  for (int i = 0; i < MB; ++i) {
    const float* a = g.a + i * g.lda;
    for (std::int64_t s = 0; s < steps; ++s) {
      const std::int64_t p = s * 16;
      const __mmask16 live =
          g.k - p >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (g.k - p)) - 1);
      _mm512_store_ps(panel + (s * MB + i) * 16, _mm512_maskz_loadu_ps(live, a + p));
    }
  }
}

// acc[i][j] += A's vector i of this step (ap) x x[j]: all MB rows of A against the NB W
// vectors, each A vector loaded once into a register.
template <int MB, int NB>
__attribute__((always_inline)) inline void panel_step(__m512 (&acc)[MB][NB], const __m512 (&x)[NB],
                                                      const float* ap) {
#pragma GCC unroll 8
  for (int i = 0; i < MB; ++i) {
    __m512 av = _mm512_load_ps(ap + i * 16);
    // Opaque to the compiler: otherwise GCC folds the load into each of the NB FMAs (NB loads
    // instead of one; found in the disassembly of the prefetching loops).
    asm("" : "+v"(av));
#pragma GCC unroll 3
    for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_fmadd_ps(av, x[j], acc[i][j]);
  }
}

// out(i, j0 + j) for i < MB, j < NB: one pass over the NB W rows, all MB rows of A against
// each loaded vector (MB x NB <= 24 accumulators, NB W vectors and one A vector in registers).
// K's last partial vector loads W masked (A's panel is zero there). kPrefetch: each step
// fetches a line of each W row kPanelAheadBytes on, in its own row or, near its end, in the
// next tile's rows within this thread's range.
template <int MB, int NB, bool kPrefetch>
__attribute__((always_inline)) inline void panel_tile(const DecodeArgs& g, const float* panel,
                                                      std::int64_t j0) {
  const float* w[NB];
  for (int j = 0; j < NB; ++j) w[j] = static_cast<const float*>(g.w) + (j0 + j) * g.ldw;
  constexpr std::int64_t ahead = kPanelAheadBytes / 4;
  __m512 acc[MB][NB];
#pragma GCC unroll 8
  for (int i = 0; i < MB; ++i)
#pragma GCC unroll 3
    for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_setzero_ps();
  const std::int64_t kv = g.k - g.k % 16;
  const float* ap = panel;
  std::int64_t p = 0;
  __m512 x[NB];
  if constexpr (kPrefetch) {
    // Steps whose prefetch stays in their own rows.
#pragma GCC unroll 2
    for (; p + ahead < kv; p += 16, ap += MB * 16) {
#pragma GCC unroll 3
      for (int j = 0; j < NB; ++j) {
        prefetch_line(w[j] + p + ahead);
        x[j] = _mm512_loadu_ps(w[j] + p);
      }
      panel_step<MB, NB>(acc, x, ap);
    }
    // Then the next tile's rows, ahead values on in the rows' concatenated stream: at step p,
    // offset p + ahead - K of row j + NB (K >= ahead: kDecodePanelMinK). A row this thread
    // does not compute is replaced by its own row (lines already loaded). Addresses as
    // integers: they may lie outside W (prefetches do not fault).
    std::uintptr_t next[NB];
    for (int j = 0; j < NB; ++j)
      next[j] = j0 + NB + j < g.n1 ? reinterpret_cast<std::uintptr_t>(w[j] + NB * g.ldw) +
                                         static_cast<std::uintptr_t>((ahead - g.k) * 4)
                                   : reinterpret_cast<std::uintptr_t>(w[j]);
    for (; p < kv; p += 16, ap += MB * 16) {
#pragma GCC unroll 3
      for (int j = 0; j < NB; ++j) {
        prefetch_line(reinterpret_cast<const void*>(next[j] + static_cast<std::uintptr_t>(p * 4)));
        x[j] = _mm512_loadu_ps(w[j] + p);
      }
      panel_step<MB, NB>(acc, x, ap);
    }
  } else {
#pragma GCC unroll 2
    for (; p < kv; p += 16, ap += MB * 16) {
#pragma GCC unroll 3
      for (int j = 0; j < NB; ++j) x[j] = _mm512_loadu_ps(w[j] + p);
      panel_step<MB, NB>(acc, x, ap);
    }
  }
  if (p < g.k) {
    const auto live = static_cast<__mmask16>((1u << (g.k - p)) - 1);
    for (int j = 0; j < NB; ++j) x[j] = _mm512_maskz_loadu_ps(live, w[j] + p);
    panel_step<MB, NB>(acc, x, ap);
  }
  // Each row of A's NB sums in one reduction tree, stored together (one masked store per row:
  // NB scalar stores per row were 1.3x slower on cold short rows, K = 128).
  const __m512 z = _mm512_setzero_ps();
  constexpr auto kLive = static_cast<__mmask8>((1u << NB) - 1);
#pragma GCC unroll 8
  for (int i = 0; i < MB; ++i)
    _mm_mask_storeu_ps(g.out + i * g.ldo + (j0 - g.n0), kLive,
                       Avx512::hsum4(acc[i][0], NB > 1 ? acc[i][NB > 1 ? 1 : 0] : z,
                                     NB > 2 ? acc[i][NB > 2 ? 2 : 0] : z, z));
}

template <int MB, bool kPrefetch>
void panel_tiles(const DecodeArgs& g) {
  std::int64_t j = g.n0;
  for (; j + 3 <= g.n1; j += 3) panel_tile<MB, 3, kPrefetch>(g, g.scratch, j);
  if (g.n1 - j == 2) panel_tile<MB, 2, kPrefetch>(g, g.scratch, j);
  if (g.n1 - j == 1) panel_tile<MB, 1, kPrefetch>(g, g.scratch, j);
}

template <int MB>
void panel_rows(const DecodeArgs& g) {
  pack_panel<MB>(g, g.scratch);
  if (g.stages > 1) return panel_tiles<MB, true>(g);
  panel_tiles<MB, false>(g);
}

// fp32 W with kDecodePanelMinM..kDecodePanelMaxM rows of A: every W vector loaded once and
// multiplied by all rows of A from a packed panel in L1/L2, three W rows at a time, instead of
// the 4 x 4 blocks' two passes (the second re-reading W from L1). The stream and the FMAs
// then overlap: 8 x 24576 x 1536, 1 thread, 10.4 -> 7.5 ms against a 7.1 ms bare read.
void decode_f32_panel(const DecodeArgs& g) {
  switch (g.m) {
    case 5:
      return panel_rows<5>(g);
    case 6:
      return panel_rows<6>(g);
    case 7:
      return panel_rows<7>(g);
    default:
      return panel_rows<8>(g);
  }
}

}  // namespace

void decode_avx512(const DecodeArgs& args) {
  if (args.w_type == DType::f32 && args.m >= kDecodePanelMinM && args.m <= kDecodePanelMaxM &&
      args.k >= kDecodePanelMinK)
    return decode_f32_panel(args);
  Stream<Avx512Load>::decode(args);
}

}  // namespace attain::gemm::detail
