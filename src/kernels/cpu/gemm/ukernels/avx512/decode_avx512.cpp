// Decode path, AVX-512: W rows streamed once and converted in registers (4 W rows x 4 A rows
// of zmm accumulators; see simd_stream.hpp), and fp32 / bf16 / fp16 W with 5-8 rows of A in
// one pass (decode_panel below).
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/simd_stream.hpp"

namespace attain::gemm::detail {

namespace {

// Values of K ahead of the loads that each W row's software prefetch runs (stages > 1): 1 KiB of
// fp32, the best of 256 B - 1 KiB on Zen 5 (8 x 24576 x 1536, 1 thread: none 10.0 ms, 256 B
// 9.4, 512 B 7.7, 1 KiB 7.6; docs/gemm.md, sixteenth session).
constexpr std::int64_t kPanelAhead = 256;
static_assert(kDecodePanelMinK >= kPanelAhead, "rows shorter than the distance");

// L values of K of a W row in storage dtype T as fp32 (all, or those in `live`, zeros past).
template <DType T>
__attribute__((always_inline)) inline __m512 w_load(const std::byte* row, std::int64_t p) {
  if constexpr (T == DType::f32) return Avx512Load::f32(row + p * 4);
  if constexpr (T == DType::bf16) return Avx512Load::bf16(row + p * 2);
  if constexpr (T == DType::f16) return Avx512Load::f16(row + p * 2);
}
template <DType T>
__attribute__((always_inline)) inline __m512 w_load(const std::byte* row, std::int64_t p,
                                                    __mmask16 live) {
  if constexpr (T == DType::f32) return _mm512_maskz_loadu_ps(live, row + p * 4);
  const __m256i h = _mm256_maskz_loadu_epi16(live, row + p * 2);
  if constexpr (T == DType::bf16)
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  if constexpr (T == DType::f16) return _mm512_cvtph_ps(h);
}

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
// each loaded vector (MB x NB <= 24 accumulators, NB W vectors and one A vector in registers),
// W converted to fp32 as it is loaded. K's last partial vector loads W masked (A's panel is
// zero there). kPrefetch: each step fetches a line of each W row kPanelAhead values on, in its
// own row or, near its end, in the next tile's rows within this thread's range (16-bit rows:
// a line every other step).
template <DType T, int MB, int NB, bool kPrefetch>
__attribute__((always_inline)) inline void panel_tile(const DecodeArgs& g, const float* panel,
                                                      std::int64_t j0) {
  constexpr std::int64_t es = T == DType::f32 ? 4 : 2;
  const std::byte* w[NB];
  for (int j = 0; j < NB; ++j) w[j] = static_cast<const std::byte*>(g.w) + (j0 + j) * g.ldw * es;
  constexpr std::int64_t ahead = kPanelAhead;
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
        if (es == 4 || (p & 31) == 0) prefetch_line(w[j] + (p + ahead) * es);
        x[j] = w_load<T>(w[j], p);
      }
      panel_step<MB, NB>(acc, x, ap);
    }
    // Then the next tile's rows, ahead values on in the rows' concatenated stream: at step p,
    // offset p + ahead - K of row j + NB (K >= ahead: kDecodePanelMinK). A row this thread
    // does not compute is replaced by its own row (lines already loaded). Addresses as
    // integers: they may lie outside W (prefetches do not fault).
    std::uintptr_t next[NB];
    for (int j = 0; j < NB; ++j)
      next[j] = j0 + NB + j < g.n1 ? reinterpret_cast<std::uintptr_t>(w[j] + NB * g.ldw * es) +
                                         static_cast<std::uintptr_t>((ahead - g.k) * es)
                                   : reinterpret_cast<std::uintptr_t>(w[j]);
    for (; p < kv; p += 16, ap += MB * 16) {
#pragma GCC unroll 3
      for (int j = 0; j < NB; ++j) {
        if (es == 4 || (p & 31) == 0)
          prefetch_line(
              reinterpret_cast<const void*>(next[j] + static_cast<std::uintptr_t>(p * es)));
        x[j] = w_load<T>(w[j], p);
      }
      panel_step<MB, NB>(acc, x, ap);
    }
  } else {
#pragma GCC unroll 2
    for (; p < kv; p += 16, ap += MB * 16) {
#pragma GCC unroll 3
      for (int j = 0; j < NB; ++j) x[j] = w_load<T>(w[j], p);
      panel_step<MB, NB>(acc, x, ap);
    }
  }
  if (p < g.k) {
    const auto live = static_cast<__mmask16>((1u << (g.k - p)) - 1);
    for (int j = 0; j < NB; ++j) x[j] = w_load<T>(w[j], p, live);
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

template <DType T, int MB, bool kPrefetch>
void panel_tiles(const DecodeArgs& g) {
  std::int64_t j = g.n0;
  for (; j + 3 <= g.n1; j += 3) panel_tile<T, MB, 3, kPrefetch>(g, g.scratch, j);
  if (g.n1 - j == 2) panel_tile<T, MB, 2, kPrefetch>(g, g.scratch, j);
  if (g.n1 - j == 1) panel_tile<T, MB, 1, kPrefetch>(g, g.scratch, j);
}

template <DType T, int MB>
void panel_rows(const DecodeArgs& g) {
  pack_panel<MB>(g, g.scratch);
  if (g.stages > 1) return panel_tiles<T, MB, true>(g);
  panel_tiles<T, MB, false>(g);
}

template <DType T>
void panel_typed(const DecodeArgs& g) {
  switch (g.m) {
    case 5:
      return panel_rows<T, 5>(g);
    case 6:
      return panel_rows<T, 6>(g);
    case 7:
      return panel_rows<T, 7>(g);
    default:
      return panel_rows<T, 8>(g);
  }
}

// fp32 / bf16 / fp16 W with kDecodePanelMinM..kDecodePanelMaxM rows of A and K from
// kDecodePanelMinK: every W vector loaded (and converted) once and multiplied by all rows of A
// from a packed panel in L1 / L2, three W rows at a time, instead of the 4 x 4 blocks' two
// passes (the second re-reading W, or its converted copy, from L1). fp32 8 x 24576 x 1536,
// 1 thread: 10.4 -> 7.5 ms.
void decode_panel(const DecodeArgs& g) {
  switch (g.w_type) {
    case DType::bf16:
      return panel_typed<DType::bf16>(g);
    case DType::f16:
      return panel_typed<DType::f16>(g);
    default:
      return panel_typed<DType::f32>(g);
  }
}

}  // namespace

void decode_avx512(const DecodeArgs& args) {
  if (panel_shape(args.w_type, args.m, args.k)) return decode_panel(args);
  Stream<Avx512Load>::decode(args);
}

}  // namespace attain::gemm::detail
