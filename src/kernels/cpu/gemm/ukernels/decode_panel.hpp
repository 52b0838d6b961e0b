// The decode path's panel kernel for 3-8 rows of A (panel_shape), written once over a policy P for
// the ISA and for how W's values meet A's: fp32 FMAs on W converted as loaded (fp32, bf16, fp16 W;
// decode_avx512.cpp, decode_avx2.cpp) or vdpbf16ps on bf16 pairs (bf16 x bf16;
// decode_bf16_avx512bf16.cpp). A's rows are packed interleaved a step at a time, so one pointer
// walks them (eight row pointers and three W rows leave GCC too few registers: it spills them);
// each step loads a vector of three W rows once and multiplies it by the rows of A of a pass
// (P::kPassRows x 3 accumulators, 3 W vectors, 1 A vector: AVX-512's 32 registers take all 8 rows
// in one pass, AVX2's 16 take 4, and a second pass reads the tile's W again from L1).
// Included only by ISA files; everything has internal linkage (kernels.hpp: no inline function of
// a shared header may be picked by the linker for another ISA's code).
//
// P provides: A (the panel's element type), W (a W vector's register type), Acc (an
// accumulator's), kStep (values of K per step and per vector), kBytes (bytes per W value), kMinM
// (the fewest rows of A it takes: panel_shape), kPassRows (rows of A per pass), kNextChunk (a
// second pass fetches the tile's next chunk: kNext), kAhead (values of K the prefetch runs ahead,
// into L1), kFarBytes (0, or the line this many bytes further on in memory from the one loaded,
// prefetched into L2: with W's rows back to back, a later tile's rows), kFarMaxRow (0, or the row
// stride in bytes from which on it is not), kWide (K chunks of kDecodePanelWideBytes of packed A,
// in L2, instead of panel_bytes), kFoldA (each product reads A's vector from memory as its operand,
// not from a register loaded once), pack(g, i, s, dst) (row i's values [kStep s, kStep s + kStep)
// into dst, zeros past K), a_load(p), load(row, p), load(row, p, remaining) (zeros past K),
// dot(acc, a, w), zero() and sums(out, live, add, acc0, acc1, acc2) (the three accumulators' sums
// into out[0, live), added to out[] with add).
#pragma once

#include <cstdint>

#include "kernels/cpu/gemm/kernels.hpp"
#include "kernels/cpu/gemm/ukernels/simd_stream.hpp"  // prefetch_line, prefetch_line_l2

namespace attain::gemm::detail {
namespace {

// The 16-bit routes' kFarBytes (kDecodeFarBytes, kernels.hpp): beside the L1 prefetch half a chunk
// ahead (768 B - 2 KiB, too short to hide memory's latency when the rows are short), the line 16
// KiB on in memory into L2 (up to 2.2x on grouped bf16 experts with K = 768; 8 and 32 KiB are
// slower, 24 KiB level).

// Rows of A, K [k0, k1) (k0 a multiple of P::kStep), packed a step at a time. Each step fetches
// the line 1 KiB on in the packing's order: further along the row, or the next row's first lines
// near the end of one. A cold A as long as W (an MoE router at decode, 8 x 8 x 4096: 128 KiB of
// each) otherwise waits on memory row by row.
template <class P, int MB>
void pack_panel(const DecodeArgs& g, std::int64_t k0, std::int64_t k1, typename P::A* panel) {
  const std::int64_t s0 = k0 / P::kStep, s1 = (k1 + P::kStep - 1) / P::kStep;
  constexpr std::int64_t step_bytes = P::kStep * static_cast<std::int64_t>(sizeof(typename P::A));
  int fi = 0;
  std::int64_t fs = s0 + 1024 / step_bytes;
  for (; fs >= s1 && fi < MB; fs -= s1 - s0) ++fi;
  for (int i = 0; i < MB; ++i)
    for (std::int64_t s = s0; s < s1; ++s) {
      if (fi < MB) prefetch_line(P::a_row(g, fi) + fs * step_bytes);
      if (++fs == s1) fs = s0, ++fi;
      P::pack(g, i, s, panel + ((s - s0) * MB + i) * P::kStep);
    }
}

// acc[i][j] = dot(acc[i][j], A's vector i of this step, x[j]), each A vector loaded once (ap:
// the step's vector of the pass's first row), or with P::kFoldA read by each product.
template <class P, int PM, int NB>
__attribute__((always_inline)) inline void panel_step(typename P::Acc (&acc)[PM][NB],
                                                      const typename P::W (&x)[NB],
                                                      const typename P::A* ap) {
#pragma GCC unroll 8
  for (int i = 0; i < PM; ++i) {
    auto av = P::a_load(ap + i * P::kStep);
    // Opaque to the compiler: otherwise GCC folds the load into each of the NB products (NB
    // loads instead of one; found in the disassembly of the prefetching loops) - which kFoldA
    // wants (Fp32Route, decode_avx512.cpp).
    if constexpr (!P::kFoldA) asm("" : "+v"(av));
#pragma GCC unroll 3
    for (int j = 0; j < NB; ++j) acc[i][j] = P::dot(acc[i][j], av, x[j]);
  }
}

// out(i, j0 + j) for i in [I0, I0 + PM) (a pass over the panel's MB rows), j < NB over K [k0,
// k1) (a chunk: `add` puts the sums on top of the earlier chunks'). The last partial vector of K
// loads W with zeros past K (A's panel is zero there too). kPrefetch: a line of each W row
// P::kAhead values on, in its own row or, near the chunk's end, in the next tile's rows within
// this thread's range. The tile computed next starts at row nj, K index nk (its rows past g.n1
// are not fetched). kNext (a second pass, without kPrefetch): the line k1 - k0 values on in each
// row, the tile's next chunk, into L2.
template <class P, int MB, int I0, int PM, int NB, bool kPrefetch, bool kNext = false>
__attribute__((always_inline)) inline void panel_pass(const DecodeArgs& g,
                                                      const typename P::A* panel, std::int64_t j0,
                                                      std::int64_t k0, std::int64_t k1, bool add,
                                                      std::int64_t nj, std::int64_t nk) {
  constexpr std::int64_t es = P::kBytes, L = P::kStep;
  // At most half a chunk ahead: on short rows (the MoE experts' K = 768) a whole row ahead runs
  // slower than half a row.
  const std::int64_t half = (k1 - k0) / 2 / L * L;
  const std::int64_t ahead = P::kAhead < half ? P::kAhead : half;
  // Steps per line of W (16-bit values converted 16 at a time: a line every other step).
  constexpr std::int64_t line_steps = 64 / (L * es) > 1 ? 64 / (L * es) : 1;
  const std::byte* w[NB];
  for (int j = 0; j < NB; ++j) w[j] = static_cast<const std::byte*>(g.w) + (j0 + j) * g.ldw * es;
  const bool far = P::kFarBytes > 0 && (P::kFarMaxRow == 0 || g.ldw * es < P::kFarMaxRow);
  typename P::Acc acc[PM][NB];
#pragma GCC unroll 8
  for (int i = 0; i < PM; ++i)
#pragma GCC unroll 3
    for (int j = 0; j < NB; ++j) acc[i][j] = P::zero();
  const std::int64_t kv = k1 - (k1 - k0) % L;
  const typename P::A* ap = panel + I0 * L;
  std::int64_t p = k0;
  // x: each step's W vectors, declared in each loop (one array across the loops was kept in
  // memory: a store of every W vector per step, found in the AVX2 disassembly).
  if constexpr (kPrefetch) {
    // Steps whose prefetch stays in their own rows.
#pragma GCC unroll 2
    for (; p + ahead < kv; p += L, ap += MB * L) {
      typename P::W x[NB];
#pragma GCC unroll 3
      for (int j = 0; j < NB; ++j) {
        if ((p / L) % line_steps == 0) {
          prefetch_line(w[j] + (p + ahead) * es);
          if (far) prefetch_line_l2(w[j] + p * es + P::kFarBytes);
        }
        x[j] = P::load(w[j], p);
      }
      panel_step<P, PM, NB>(acc, x, ap);
    }
    // Then the next tile's rows, ahead values on in the tiles' concatenated stream: at step p,
    // value p + ahead - k1 of the next tile (row nj + j from K index nk). A row this thread does
    // not compute is replaced by its own row (lines already loaded). Addresses as integers: they
    // may lie outside W (prefetches do not fault).
    std::uintptr_t next[NB];
    for (int j = 0; j < NB; ++j)
      next[j] = nj + j < g.n1 ? reinterpret_cast<std::uintptr_t>(
                                    static_cast<const std::byte*>(g.w) + (nj + j) * g.ldw * es) +
                                    static_cast<std::uintptr_t>((nk + ahead - k1) * es)
                              : reinterpret_cast<std::uintptr_t>(w[j]);
    for (; p < kv; p += L, ap += MB * L) {
      typename P::W x[NB];
#pragma GCC unroll 3
      for (int j = 0; j < NB; ++j) {
        if ((p / L) % line_steps == 0) {
          prefetch_line(
              reinterpret_cast<const void*>(next[j] + static_cast<std::uintptr_t>(p * es)));
          if (far) prefetch_line_l2(w[j] + p * es + P::kFarBytes);
        }
        x[j] = P::load(w[j], p);
      }
      panel_step<P, PM, NB>(acc, x, ap);
    }
  } else {
    const std::int64_t span = (k1 - k0) * es;
#pragma GCC unroll 2
    for (; p < kv; p += L, ap += MB * L) {
      typename P::W x[NB];
#pragma GCC unroll 3
      for (int j = 0; j < NB; ++j) {
        if constexpr (kNext)
          if ((p / L) % line_steps == 0) prefetch_line_l2(w[j] + p * es + span);
        x[j] = P::load(w[j], p);
      }
      panel_step<P, PM, NB>(acc, x, ap);
    }
  }
  if (p < k1) {
    typename P::W x[NB];
    for (int j = 0; j < NB; ++j) x[j] = P::load(w[j], p, k1 - p);
    panel_step<P, PM, NB>(acc, x, ap);
  }
  // Each row of A's NB sums in one reduction tree, stored together (one masked store per row: NB
  // scalar stores per row are slower on cold short rows).
#pragma GCC unroll 8
  for (int i = 0; i < PM; ++i)
    P::sums(g.out + (I0 + i) * g.ldo + (j0 - g.n0), NB, add, acc[i][0], acc[i][NB > 1 ? 1 : 0],
            acc[i][NB > 2 ? 2 : 0]);
}

// The tile of W rows [j0, j0 + NB) against the panel's MB rows: in passes of P::kPassRows rows,
// the first streaming W (with the prefetches), the second (if any) reading it again from L1
// (with P::kNextChunk, fetching the next chunk of the tile's rows).
template <class P, int MB, int NB, bool kPrefetch>
__attribute__((always_inline)) inline void panel_tile(const DecodeArgs& g,
                                                      const typename P::A* panel, std::int64_t j0,
                                                      std::int64_t k0, std::int64_t k1, bool add,
                                                      std::int64_t nj, std::int64_t nk) {
  constexpr int R = P::kPassRows < MB ? P::kPassRows : MB;
  static_assert(MB <= 2 * R, "at most two passes");
  panel_pass<P, MB, 0, R, NB, kPrefetch>(g, panel, j0, k0, k1, add, nj, nk);
  if constexpr (MB > R)
    panel_pass<P, MB, R, MB - R, NB, false, kPrefetch && P::kNextChunk>(g, panel, j0, k0, k1, add,
                                                                        nj, nk);
}

// Rows [r0, r1) of W over K [k0, k1) (the panel holds A's values from k0); the tile after the
// last starts at row nj, K index nk.
template <class P, int MB, bool kPrefetch>
void panel_tiles(const DecodeArgs& g, const typename P::A* panel, std::int64_t k0, std::int64_t k1,
                 std::int64_t r0, std::int64_t r1, std::int64_t nj, std::int64_t nk) {
  const bool add = k0 > 0;
  std::int64_t j = r0;
  for (; j + 3 <= r1; j += 3) {
    const bool last = j + 3 == r1;
    panel_tile<P, MB, 3, kPrefetch>(g, panel, j, k0, k1, add, last ? nj : j + 3, last ? nk : k0);
  }
  if (r1 - j == 2) panel_tile<P, MB, 2, kPrefetch>(g, panel, j, k0, k1, add, nj, nk);
  if (r1 - j == 1) panel_tile<P, MB, 1, kPrefetch>(g, panel, j, k0, k1, add, nj, nk);
}

// K in equal chunks of whole steps, each at most `bytes` of packed A (DecodeArgs::panel_bytes, at
// most kDecodePanelChunkBytes; panel_rows_in runs a group of W rows over them), so that A stays in
// L1 beside the streaming W (32 KiB: 1024 fp32 values of 8 rows, 2048 bf16; 1536 fp32 values: 768 +
// 768, not 1024 + 512). All of K at once leaves A in L2 from K = 1536 on (8 rows: 48 KiB and more),
// and the A vectors of every step - 8 of them per 3 W vectors - then fill L1 at the L2's rate.
// P::kWide (16-bit W on the fp32 route): chunks of at most kDecodePanelWideBytes instead, A in L2,
// where the L1 chunk cuts W's rows into pieces too short to stream (kernels.hpp).
template <class P>
std::int64_t panel_chunk(std::int64_t k, std::int64_t bytes) {
  constexpr std::int64_t step_bytes =
      kDecodePanelMaxM * P::kStep * static_cast<std::int64_t>(sizeof(typename P::A));
  constexpr std::int64_t most_bytes = P::kWide ? kDecodePanelWideBytes : kDecodePanelChunkBytes;
  static_assert(most_bytes % step_bytes == 0, "a chunk's panel must fit decode_scratch_floats");
  if constexpr (P::kWide) bytes = most_bytes;
  bytes = bytes < step_bytes ? step_bytes : bytes > most_bytes ? most_bytes : bytes;
  const std::int64_t most = bytes / step_bytes * P::kStep;
  const std::int64_t chunks = (k + most - 1) / most;
  return chunks <= 1 ? k : (k + chunks * P::kStep - 1) / (chunks * P::kStep) * P::kStep;
}

// K in spans whose packed A fits the scratch (kDecodePanelWideBytes: A in L2) and each span in
// chunks that keep A in L1 (panel_chunk); W's rows in groups of kDecodePanelGroupRows, each group
// taking the span's chunks one after another, so that its rows stream in address order and the A
// chunk is read from L2 once per group. (All of the thread's rows a chunk at a time would cut every
// row into pieces of 2 KiB read far apart, a pattern that reaches about two thirds of a plain
// stream.) P::kWide: A's chunk is the span.
template <class P, int MB, bool kPrefetch>
void panel_rows_in(const DecodeArgs& g) {
  auto* panel = reinterpret_cast<typename P::A*>(g.scratch);
  constexpr std::int64_t step_bytes =
      kDecodePanelMaxM * P::kStep * static_cast<std::int64_t>(sizeof(typename P::A));
  const std::int64_t chunk = panel_chunk<P>(g.k, g.panel_bytes);
  const std::int64_t span_most = kDecodePanelWideBytes / step_bytes * P::kStep;
  const std::int64_t span = g.k <= span_most ? g.k : span_most / chunk * chunk;
  for (std::int64_t s0 = 0; s0 < g.k; s0 += span) {
    const std::int64_t s1 = s0 + span < g.k ? s0 + span : g.k;
    pack_panel<P, MB>(g, s0, s1, panel);
    for (std::int64_t r0 = g.n0; r0 < g.n1; r0 += kDecodePanelGroupRows) {
      const std::int64_t r1 = r0 + kDecodePanelGroupRows < g.n1 ? r0 + kDecodePanelGroupRows : g.n1;
      for (std::int64_t k0 = s0; k0 < s1; k0 += chunk) {
        const std::int64_t k1 = k0 + chunk < s1 ? k0 + chunk : s1;
        // The tile after the group's last: its next chunk, else the next group's first, else
        // the next span's.
        const bool more = k1 < s1;
        const std::int64_t nj = more ? r0 : r1 < g.n1 ? r1 : g.n0;
        const std::int64_t nk = more ? k1 : r1 < g.n1 ? s0 : s1;
        panel_tiles<P, MB, kPrefetch>(g, panel + (k0 - s0) / P::kStep * MB * P::kStep, k0, k1, r0,
                                      r1, nj, nk);
      }
    }
  }
}

template <class P, int MB>
void panel_rows(const DecodeArgs& g) {
  if (g.stages > 1) return panel_rows_in<P, MB, true>(g);
  panel_rows_in<P, MB, false>(g);
}

// The panel kernel for g.m rows of A (P::kMinM..kDecodePanelMaxM); g.scratch holds the panel
// (decode_scratch_floats).
template <class P>
void decode_panel(const DecodeArgs& g) {
  switch (g.m) {
    case 3:
      if constexpr (P::kMinM <= 3) return panel_rows<P, 3>(g);
      return;
    case 4:
      if constexpr (P::kMinM <= 4) return panel_rows<P, 4>(g);
      return;
    case 5:
      return panel_rows<P, 5>(g);
    case 6:
      return panel_rows<P, 6>(g);
    case 7:
      return panel_rows<P, 7>(g);
    default:
      return panel_rows<P, 8>(g);
  }
}

// run.template operator()<Route<T>>() for W's dtype T of an fp32 route: fp32, bf16 or fp16.
template <template <DType> class Route, class Run>
void with_fp32_route(DType w, Run&& run) {
  switch (w) {
    case DType::bf16:
      return run.template operator()<Route<DType::bf16>>();
    case DType::f16:
      return run.template operator()<Route<DType::f16>>();
    default:
      return run.template operator()<Route<DType::f32>>();
  }
}

// The fp32 routes' kernel for W of any of their dtypes: Route<T> for fp32, bf16 and fp16 W.
template <template <DType> class Route>
void decode_panel_fp32_route(const DecodeArgs& g) {
  with_fp32_route<Route>(g.w_type, [&]<class P>() { decode_panel<P>(g); });
}

}  // namespace
}  // namespace attain::gemm::detail
