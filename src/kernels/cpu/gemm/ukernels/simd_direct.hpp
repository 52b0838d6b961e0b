// The direct kernel (kernels.hpp, DirectKernel), written once over a SIMD traits type S and
// instantiated per ISA like simd_ukernel.hpp: C^T's tile W[R rows] . A^T[P = NV * kLanes rows]
// with the R x NV accumulators in registers. Each k step loads NV vectors of the packed A^T
// panel (L2) and broadcasts one value of each of the R rows of W where W is stored (the rows
// stay in L1 while every panel of A passes), so W is read once from memory and never packed.
// The sums are C transposed (lanes run along M): they leave through a small tile in L1 - or,
// where the caller's C is this product's transpose (`ct`: the direct path run on the swapped
// operands, Schedule::swap), straight from the registers as rows of C.
// On bf16 pairs (S::dot = vdpbf16ps) the "floats" are 32-bit words, two bf16 of consecutive k
// each, k counts pairs and ldw is in words: W's bf16 rows already are rows of pairs.
// simd_direct_any takes panels of any width up to NV vectors (the tail of M: a 64-row kernel
// given 20 rows runs two vectors, not four).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm::detail {

template <class S, int R, int NV>
inline __attribute__((always_inline)) void simd_direct(std::int64_t k, const float* w,
                                                       std::int64_t ldw, int rows, const float* at,
                                                       int m, float alpha, float beta, float* c,
                                                       std::int64_t ldc, bool ct,
                                                       const DirectNext* next) {
  using V = typename S::V;
  constexpr int P = NV * S::kLanes;
  // With one or two vectors per W row, R x NV accumulators are fewer chains than the FMA units
  // keep in flight (latency x units): even and odd k steps go to two sets, added at the end,
  // where the registers hold both (bf16 M=8..16, 2 threads: 1.3x; fp32 1.1-1.15x).
  constexpr int SETS = NV <= 2 && 2 * R * NV + NV + 1 <= S::kRegs ? 2 : 1;
  V acc[SETS][R][NV];
#pragma GCC unroll 2
  for (int h = 0; h < SETS; ++h)
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[h][r][v] = S::zero();
  // Rows past `rows` repeat the last one (always readable); their sums are not written.
  const float* wr[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) wr[r] = w + std::min(r, rows - 1) * ldw;

  auto step = [&](std::int64_t p, int h) __attribute__((always_inline)) {
    V a[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) a[v] = S::load(at + p * P + v * S::kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const V b = S::bcast(wr[r] + p);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[h][r][v] = S::dot(b, a[v], acc[h][r][v]);
    }
  };
  std::int64_t p = 0;
  // C's rows of the tile are written at the end, each to a line far from the last one written
  // (C's rows are N apart): fetch them for writing while the tile computes, a few rows per 16
  // k steps, so that a cold C does not stall the write-back on every store. With `ct` the
  // tile's rows of C are the W rows, NV vectors each: its lines are fetched the same way.
  const int c_lines = ct ? rows * NV : m;
  const int c_rows = static_cast<int>(
      std::max<std::int64_t>(1, (c_lines * 16 + k - 1) / std::max<std::int64_t>(k, 1)));
  int c_next = 0;
  // 16 k steps = one 64-byte line of each W row: fetch the next tile's line of each row.
  for (; p + 16 <= k; p += 16) {
    if (next != nullptr && p * 4 < next->bytes) {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) __builtin_prefetch(next->w + r * next->ld + p * 4, 0, 3);
    }
    for (int e = std::min(c_lines, c_next + c_rows); c_next < e; ++c_next) {
      if (ct) {
        __builtin_prefetch(c + (c_next / NV) * ldc + (c_next % NV) * S::kLanes, 1, 3);
        continue;
      }
      __builtin_prefetch(c + c_next * ldc, 1, 3);
      __builtin_prefetch(c + c_next * ldc + rows - 1, 1, 3);
    }
#pragma GCC unroll 16
    for (int q = 0; q < 16; ++q) step(p + q, q % SETS);
  }
  for (; p < k; ++p) step(p, 0);
  if constexpr (SETS == 2) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[0][r][v] = S::add(acc[0][r][v], acc[1][r][v]);
  }

  // C = alpha * sums + beta * C, rounded once per element as the packed path does
  // (fma(beta, c, alpha * sum); beta 1 is c + alpha * sum, the same bits).
  if (ct && m == P) {  // whole rows of C: vectors, the same operations lane by lane
    const V va = S::set1(alpha), vb = S::set1(beta);
    for (int r = 0; r < rows; ++r) {
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        float* cv = c + r * ldc + v * S::kLanes;
        const V s = S::mul(va, acc[0][r][v]);
        S::store(cv, beta == 0.0f   ? s
                     : beta == 1.0f ? S::add(S::load(cv), s)
                                    : S::fma(vb, S::load(cv), s));
      }
    }
    return;
  }
  alignas(64) float t[R][P];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) S::store(&t[r][v * S::kLanes], acc[0][r][v]);
  if (ct) {  // rows of C shorter than the panel (the tail of the caller's N)
    for (int r = 0; r < rows; ++r) {
      float* cr = c + r * ldc;
      for (int i = 0; i < m; ++i) {
        const float s = alpha * t[r][i];
        cr[i] = beta == 0.0f ? s : beta == 1.0f ? cr[i] + s : S::fma1(beta, cr[i], s);
      }
    }
    return;
  }
  for (int i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    if (beta == 0.0f) {
      for (int r = 0; r < rows; ++r) ci[r] = alpha * t[r][i];
    } else if (beta == 1.0f) {
      for (int r = 0; r < rows; ++r) ci[r] += alpha * t[r][i];
    } else {
      for (int r = 0; r < rows; ++r) ci[r] = S::fma1(beta, ci[r], alpha * t[r][i]);
    }
  }
}

// The panel holds round_up(m, kLanes) rows: the instantiation with that many vectors.
template <class S, int R, int NV>
inline void simd_direct_any(std::int64_t k, const float* w, std::int64_t ldw, int rows,
                            const float* at, int m, float alpha, float beta, float* c,
                            std::int64_t ldc, bool ct, const DirectNext* next) {
  if constexpr (NV > 1) {
    if (m <= (NV - 1) * S::kLanes)
      return simd_direct_any<S, R, NV - 1>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct, next);
  }
  simd_direct<S, R, NV>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct, next);
}

}  // namespace attain::gemm::detail
