// The direct kernel (kernels.hpp, DirectKernel), written once over a SIMD traits type S and
// instantiated per ISA like simd_ukernel.hpp: C^T's tile W[R rows] . A^T[P = NV * kLanes rows]
// with the R x NV accumulators in registers. Each k step loads NV vectors of the packed A^T
// panel (L2) and broadcasts one value of each of the R rows of W where W is stored (the rows
// stay in L1 while every panel of A passes), so W is read once from memory and never packed.
// The sums are C transposed (lanes run along M): where the traits have store_cols they are
// transposed in registers and leave as rows of C (S::kCols16: 16-bit C too), otherwise through
// a small tile in L1 (direct_write); where the caller's C is this product's transpose (`ct`: the
// direct path run on the swapped operands, Schedule::swap), straight from the registers as rows
// of C.
// On bf16 pairs (S::dot = vdpbf16ps) the "floats" are 32-bit words, two bf16 of consecutive k
// each, k counts pairs and ldw is in words: W's bf16 rows already are rows of pairs.
// simd_direct_any takes panels of any width up to NV vectors (the tail of M: a 64-row kernel
// given 20 rows runs two vectors, not four).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm::detail {

// The kernels' write-back from their tile of sums in L1: C(i, r) = alpha * t[r * tld + i * ts] +
// beta * C(i, r) for i < m, r < rows, rounded once (fma(beta, c, alpha * sum); beta 1 is c +
// alpha * sum, the same bits), then to 16 bits where C is bf16 / fp16 (kernels.hpp,
// DirectKernel). ct: C(i, r) at c[r * ldc + i], else c[i * ldc + r].
template <class S>
inline void direct_write(const float* t, int tld, int ts, int rows, int m, float alpha, float beta,
                         void* cv, std::int64_t ldc, bool ct, DType c_type) {
  if (c_type != DType::f32) {
    const bool bf = c_type == DType::bf16;
    auto* c = static_cast<std::uint16_t*>(cv);
    for (int r = 0; r < rows; ++r) {
      int i = 0;
      if (ct && ts == 1) {  // a row of C: whole vectors as write_row rounds them
        const typename S::V va = S::set1(alpha), vb = S::set1(beta);
        for (; i + S::kLanes <= m; i += S::kLanes) {
          std::uint16_t* d = c + r * ldc + i;
          typename S::V v = S::mul(va, S::load(t + r * tld + i));
          if (beta != 0.0f) v = S::fma(vb, S::load16(bf, d), v);
          S::store16(bf, d, v);
        }
      }
      for (; i < m; ++i) {
        std::uint16_t& d = ct ? c[r * ldc + i] : c[i * ldc + r];
        float v = alpha * t[r * tld + i * ts];
        if (beta != 0.0f) v = S::fma1(beta, bf ? bf16_to_f32(d) : f16_to_f32(d), v);
        d = bf ? f32_to_bf16(v) : f32_to_f16(v);
      }
    }
    return;
  }
  auto* c = static_cast<float*>(cv);
  if (ct) {  // rows of C shorter than the panel (the tail of the caller's N)
    for (int r = 0; r < rows; ++r) {
      float* cr = c + r * ldc;
      for (int i = 0; i < m; ++i) {
        const float s = alpha * t[r * tld + i * ts];
        cr[i] = beta == 0.0f ? s : beta == 1.0f ? cr[i] + s : S::fma1(beta, cr[i], s);
      }
    }
    return;
  }
  for (int i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    const float* ti = t + i * ts;
    if (beta == 0.0f) {
      for (int r = 0; r < rows; ++r) ci[r] = alpha * ti[r * tld];
    } else if (beta == 1.0f) {
      for (int r = 0; r < rows; ++r) ci[r] += alpha * ti[r * tld];
    } else {
      for (int r = 0; r < rows; ++r) ci[r] = S::fma1(beta, ci[r], alpha * ti[r * tld]);
    }
  }
}

// C's lines of a tile, fetched for writing while the tile computes: each of C's rows is written
// at the end to a line far from the last one written (C's rows are N apart), so a cold C would
// stall the write-back on every store. `steps` k steps in rounds of 16, a few lines a round:
// with ct the tile's rows of C are the W rows, `vectors` vectors of `lanes` values each, a
// prefetch per 64 bytes of each (16-bit C: half as many as vectors); otherwise its m rows of
// `rows` values, their first and last value. The place of the next line is carried from one
// round to the next (a division per line costs a visible share of a short-K kernel). (Internal
// linkage: each ISA's files compile their own.)
namespace {
struct CFetch {
  const char* row;   // the row of C the next line is in
  std::int64_t ldc;  // bytes
  bool ct;
  int span, per_row, lines, per_round, next = 0, at = 0;  // at: the line's offset in its row
  CFetch(void* c_, std::int64_t ldc_, bool ct_, DType c_type, int rows_, int m, int vectors_,
         int lanes_, std::int64_t steps)
      : row(static_cast<const char*>(c_)),
        ldc(ldc_ * (c_type == DType::f32 ? 4 : 2)),
        ct(ct_),
        span((ct_ ? vectors_ * lanes_ : rows_) * (c_type == DType::f32 ? 4 : 2)),
        per_row(ct_ ? (span + 63) / 64 : 1),
        lines(ct_ ? rows_ * per_row : m),
        per_round(static_cast<int>(std::max<std::int64_t>(
            1, (lines * 16 + steps - 1) / std::max<std::int64_t>(steps, 1)))) {}
  void round() {
    for (const int e = std::min(lines, next + per_round); next < e; ++next) {
      if (!ct) {
        __builtin_prefetch(row, 1, 3);
        __builtin_prefetch(row + span - 2, 1, 3);  // the row's last value (2 or 4 bytes)
        row += ldc;
        continue;
      }
      __builtin_prefetch(row + at, 1, 3);
      at += 64;
      if (at >= span) {
        at = 0;
        row += ldc;
      }
    }
  }
};
}  // namespace

// Traits whose store_cols writes R columns of C's rows from R vectors of sums (S::kColsMax),
// fp32 C or, with S::kCols16, 16-bit C too.
template <class S, int R>
concept StoresCols = (R <= S::kColsMax);  // false where S has no kColsMax

// Scaled: fp8 block scales on the sums (kernels.hpp, DirectScales), K in blocks of sc->steps.
template <class S, int R, int NV, bool Scaled = false>
inline __attribute__((always_inline)) void simd_direct(std::int64_t k, const float* w,
                                                       std::int64_t ldw, int rows, const float* at,
                                                       int m, float alpha, float beta, void* c,
                                                       std::int64_t ldc, bool ct, DType c_type,
                                                       const DirectNext* next,
                                                       const DirectScales* sc = nullptr) {
  using V = typename S::V;
  constexpr int P = NV * S::kLanes;
  // With one or two vectors per W row, R x NV accumulators are fewer chains than the FMA units keep
  // in flight (latency x units): even and odd k steps go to two sets, added at the end, where the
  // registers hold both.
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
  CFetch cf(c, ldc, ct, c_type, rows, m, NV, S::kLanes, k);
  // K in one block, or (Scaled) in the scale blocks: each block's sums times its scales go onto
  // a running sum in L1 (`run`), the last block's into the registers the write-back reads.
  const std::int64_t block = Scaled ? sc->steps : k;
  alignas(64) float run[Scaled ? R * P : 1];
  for (std::int64_t p = 0, b = 0; p < k; ++b) {
    const std::int64_t e = std::min(k, p + block);
    // 16 k steps = one 64-byte line of each W row: fetch the next tile's line of each row.
    auto fetch = [&](std::int64_t q) __attribute__((always_inline)) {
      if (next != nullptr && q * 4 < next->bytes) {
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) __builtin_prefetch(next->w + r * next->ld + q * 4, 0, 3);
      }
      cf.round();
    };
    if constexpr (R == 6 && NV == 2 && SETS == 1 && !Scaled &&
                  requires { S::direct_6x16(acc[0], wr, at, p, e, fetch); }) {
      p = S::direct_6x16(acc[0], wr, at, p, e, fetch);  // AVX2's 6 x 16 tile (asm)
    }
    for (; p + 16 <= e; p += 16) {
      fetch(p);
#pragma GCC unroll 16
      for (int q = 0; q < 16; ++q) step(p + q, q % SETS);
    }
    for (; p < e; ++p) step(p, 0);
    if constexpr (Scaled) {
      const bool first = b == 0, last = e == k;
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const V ws = S::set1(sc->w[b * R + r]);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
          V s = acc[0][r][v];
          if constexpr (SETS == 2) s = S::add(s, acc[1][r][v]);
          const V scale = S::mul(S::load(sc->a + b * P + v * S::kLanes), ws);
          float* rv = run + r * P + v * S::kLanes;
          if (last) {
            acc[0][r][v] = first ? S::mul(s, scale) : S::fma(s, scale, S::load(rv));
          } else {
            S::store(rv, first ? S::mul(s, scale) : S::fma(s, scale, S::load(rv)));
#pragma GCC unroll 2
            for (int h = 0; h < SETS; ++h) acc[h][r][v] = S::zero();
          }
        }
      }
    }
  }
  if constexpr (SETS == 2 && !Scaled) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[0][r][v] = S::add(acc[0][r][v], acc[1][r][v]);
  }

  // C = alpha * sums + beta * C, rounded once per element as the packed path does
  // (fma(beta, c, alpha * sum); beta 1 is c + alpha * sum, the same bits).
  if (ct && m == P && c_type != DType::f32) {  // whole rows of 16-bit C, as direct_write
    const bool bf = c_type == DType::bf16;
    auto* c16 = static_cast<std::uint16_t*>(c);
    // r runs to the constant R (and stops at rows): a loop to `rows` indexed the accumulators
    // at run time, and GCC kept all of them on the stack for it (batched 8 x (2048x512x128)
    // bf16: the epilogue's multiplies read their sums from memory). alpha 1 and beta 0 (the
    // usual call) leave the sums as they are: the same bits without a multiply each.
    if (alpha != 1.0f || beta != 0.0f) {
      const V va = S::set1(alpha), vb = S::set1(beta);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        if (r >= rows) break;
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
          V s = S::mul(va, acc[0][r][v]);
          if (beta != 0.0f) s = S::fma(vb, S::load16(bf, c16 + r * ldc + v * S::kLanes), s);
          acc[0][r][v] = s;
        }
      }
    }
    if constexpr (requires { S::template store16_rows<R, NV>; }) {
      S::template store16_rows<R, NV>(bf, c16, ldc, acc[0], rows);
    } else {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        if (r >= rows) break;
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) S::store16(bf, c16 + r * ldc + v * S::kLanes, acc[0][r][v]);
      }
    }
    return;
  }
  if (ct && m == P) {  // whole rows of C: vectors, the same operations lane by lane
    const V va = S::set1(alpha), vb = S::set1(beta);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      if (r >= rows) break;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        float* cv = static_cast<float*>(c) + r * ldc + v * S::kLanes;
        const V s = S::mul(va, acc[0][r][v]);
        S::store(cv, beta == 0.0f   ? s
                     : beta == 1.0f ? S::add(S::load(cv), s)
                                    : S::fma(vb, S::load(cv), s));
      }
    }
    return;
  }
  if constexpr (StoresCols<S, R>) {  // C's rows from registers, a vector of rows at a time
    if (!ct && (c_type == DType::f32 || S::kCols16)) {
      const bool c16 = c_type != DType::f32;
      const std::int64_t es = c16 ? 2 : 4;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        if (v * S::kLanes >= m) break;
        V x[R];
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) x[r] = acc[0][r][v];
        S::template store_cols<R, S>(x, rows, std::min(S::kLanes, m - v * S::kLanes), alpha, beta,
                                     static_cast<char*>(c) + v * S::kLanes * ldc * es, ldc, c16,
                                     c_type == DType::bf16);
      }
      return;
    }
  }
  alignas(64) float t[R][P];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) S::store(&t[r][v * S::kLanes], acc[0][r][v]);
  direct_write<S>(&t[0][0], P, 1, rows, m, alpha, beta, c, ldc, ct, c_type);
}

// The panel holds round_up(m, kLanes) rows: the instantiation with that many vectors.
template <class S, int R, int NV, bool Scaled = false>
inline void simd_direct_any(std::int64_t k, const float* w, std::int64_t ldw, int rows,
                            const float* at, int m, float alpha, float beta, void* c,
                            std::int64_t ldc, bool ct, DType c_type, const DirectNext* next,
                            const DirectScales* sc = nullptr) {
  if constexpr (NV > 1) {
    if (m <= (NV - 1) * S::kLanes)
      return simd_direct_any<S, R, NV - 1, Scaled>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct,
                                                   c_type, next, sc);
  }
  simd_direct<S, R, NV, Scaled>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct, c_type, next, sc);
}

// The direct kernel for panels of at most NV * kLanes / 2 rows of A (8 or 16 rows of zmm), where
// the plain kernel would leave half its lanes or more idle, or (one vector) load a broadcast for
// every FMA: each pair of lanes holds two consecutive k of one row of A, at[s * NV * kLanes + 2 i
// + e] = A(i, 2 s + e) (zeros past m and past k), and each step broadcasts two consecutive values
// of every W row (S::bcast_pair), so an FMA does two k steps of kLanes / 2 rows. The pairs' lanes
// are summed at the end (S::sum_pairs). Same contract as simd_direct otherwise (C(i, r), alpha,
// beta, ct, next); an odd k reads its last value alone (nothing past the rows' ends). One vector
// keeps two sets of accumulators (R chains are fewer than the FMA units keep in flight); two
// vectors have 2 R chains in one set.
template <class S, int R, int NV = 1>
inline __attribute__((always_inline)) void simd_direct_k2(
    std::int64_t k, const float* w, std::int64_t ldw, int rows, const float* at, int m, float alpha,
    float beta, void* c, std::int64_t ldc, bool ct, DType c_type, const DirectNext* next) {
  using V = typename S::V;
  constexpr int L = S::kLanes, W = NV * L, SETS = NV == 1 ? 2 : 1;
  static_assert(SETS * R * NV + NV + 1 <= S::kRegs, "the accumulators, A's vectors, a broadcast");
  V acc[SETS][R][NV];
#pragma GCC unroll 2
  for (int h = 0; h < SETS; ++h)
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[h][r][v] = S::zero();
  const float* wr[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) wr[r] = w + std::min(r, rows - 1) * ldw;
  auto step = [&](std::int64_t s, int h) __attribute__((always_inline)) {
    V a[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) a[v] = S::load(at + s * W + v * L);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const V b = S::bcast_pair(wr[r] + 2 * s);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[h][r][v] = S::fma(b, a[v], acc[h][r][v]);
    }
  };
  const std::int64_t steps = k / 2;
  std::int64_t s = 0;
  CFetch cf(c, ldc, ct, c_type, rows, m, NV, L, steps);
  // 16 steps = two lines of each W row: fetch the next tile's two lines of each row.
  for (; s + 16 <= steps; s += 16) {
    if (next != nullptr && s * 8 < next->bytes) {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        __builtin_prefetch(next->w + r * next->ld + s * 8, 0, 3);
        __builtin_prefetch(next->w + r * next->ld + s * 8 + 64, 0, 3);
      }
    }
    cf.round();
#pragma GCC unroll 16
    for (int q = 0; q < 16; ++q) step(s + q, q % SETS);
  }
  for (; s < steps; ++s) step(s, 0);
  if (k % 2 != 0) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const V a = S::load(at + steps * W + v * L);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r)
        acc[SETS - 1][r][v] =
            S::fma(S::bcast_pair_first(wr[r] + 2 * steps), a, acc[SETS - 1][r][v]);
    }
  }
  alignas(64) float t[R][W];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      V x = acc[0][r][v];
      if constexpr (SETS == 2) x = S::add(x, acc[1][r][v]);
      S::store(t[r] + v * L, S::sum_pairs(x));
    }
  direct_write<S>(&t[0][0], W, 2, rows, m, alpha, beta, c, ldc, ct, c_type);
}

}  // namespace attain::gemm::detail
