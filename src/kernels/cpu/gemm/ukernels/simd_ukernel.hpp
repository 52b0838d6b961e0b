// The register-blocked micro-kernel, written once over a SIMD traits type S and instantiated
// per ISA (ukernels/<isa>/sgemm_*.cpp, where S lives in an anonymous namespace so each
// instantiation stays local to its ISA's object file).
//
// S provides: V, kLanes, zero(), load(p), store(p, v), bcast(p), fma(a, b, c) = a*b + c, mul,
// and dot(a, b, c): the k step's product into the accumulators (fma on fp32 panels; on panels
// of bf16 pairs, vdpbf16ps, with k counting pairs and the panels' values 32-bit words).
// The MR x NV accumulators stay in registers (MR*NV + NV + 1 <= the register file); check
// the disassembly of a new shape: the loop body must be MR*NV FMAs with no spills.
#pragma once

#include <cstdint>

#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm::detail {

template <class S, int MR, int NV>
inline __attribute__((always_inline)) void simd_ukernel(std::int64_t k, const float* alpha,
                                                        const float* a, const float* b,
                                                        const float* beta, float* c,
                                                        std::int64_t rs_c, std::int64_t cs_c,
                                                        const UkAux* aux) {
  using V = typename S::V;
  constexpr int NR = NV * S::kLanes;
  V acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[i][j] = S::zero();

  // 16-bit C written here (UkAux::c16), where the traits round it.
  constexpr bool kRounds16 = requires(std::uint16_t * q) {
    S::store16(true, q, S::zero());
  };
  std::uint16_t* c16 = kRounds16 && aux != nullptr ? aux->c16 : nullptr;
  // C written with non-temporal stores (UkAux::stream_c), where the traits have them.
  constexpr bool kStreams = requires(float* q) {
    S::stream(q, S::zero());
  };
  const bool streams = kStreams && aux != nullptr && aux->stream_c;
  // The C tile is written at the end: start its lines on the way now (not those streamed: their
  // stores do not read them).
  if (c16 != nullptr) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      __builtin_prefetch(c16 + i * rs_c, 1, 3);
      __builtin_prefetch(c16 + i * rs_c + NR - 1, 1, 3);
    }
  } else if (cs_c == 1 && !streams) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      __builtin_prefetch(c + i * rs_c, 1, 3);
      __builtin_prefetch(c + i * rs_c + NR - 1, 1, 3);
    }
  }

  auto step = [&](const float* ap, const float* bp) __attribute__((always_inline)) {
    V bv[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) bv[j] = S::load(bp + j * S::kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const V av = S::bcast(ap + i);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = S::dot(av, bv[j], acc[i][j]);
    }
  };

  std::int64_t p = 0;
  // A streams from L2: prefetch every line of the A panel kPfA k-steps ahead (B stays in L1).
  constexpr int kPfA = 12;
  constexpr int kABytes = 4 * MR * 4;  // A bytes per unrolled iteration
  // AVX2's 6 x 16 tile: the same loop in asm (Avx2::steps4_6x16: GCC spilled it).
  if constexpr (MR == 6 && NV == 2 && requires { S::steps4_6x16(acc, a, b, p); }) {
    if (k >= 4) S::steps4_6x16(acc, a, b, k / 4);
    p = k - k % 4;
  }
  for (; p + 4 <= k; p += 4) {
#pragma GCC unroll 4
    for (int l = 0; l < kABytes; l += 64)
      __builtin_prefetch(reinterpret_cast<const char*>(a + kPfA * MR) + l, 0, 3);
    step(a, b);
    step(a + MR, b + NR);
    step(a + 2 * MR, b + 2 * NR);
    step(a + 3 * MR, b + 3 * NR);
    a += 4 * MR;
    b += 4 * NR;
  }
  for (; p < k; ++p) {
    step(a, b);
    a += MR;
    b += NR;
  }
  if (aux != nullptr) {
    if (aux->a_next != nullptr) __builtin_prefetch(aux->a_next, 0, 3);
    if (aux->b_next != nullptr) __builtin_prefetch(aux->b_next, 0, 3);
  }

  // C = alpha * acc + beta * C, rounded once per element (fma(beta, c, alpha * acc)).
  const V va = S::bcast(alpha);
  const bool read_c = *beta != 0.0f;
  const V vb = S::bcast(beta);
  const float* row_scale = aux != nullptr ? aux->row_scale : nullptr;
  if constexpr (kRounds16) {
    if (c16 != nullptr) {  // write_row's operations, vector by vector
      const bool bf = aux->c16_bf;
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        std::uint16_t* ci = c16 + i * rs_c;
        const V vai = row_scale != nullptr ? S::bcast(row_scale + i) : va;
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) {
          const V r = S::mul(vai, acc[i][j]);
          S::store16(bf, ci + j * S::kLanes,
                     read_c ? S::fma(vb, S::load16(bf, ci + j * S::kLanes), r) : r);
        }
      }
      return;
    }
  }
  if constexpr (kStreams) {
    if (streams) {  // beta 0, alpha for every row
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        float* ci = c + i * rs_c;
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) S::stream(ci + j * S::kLanes, S::mul(va, acc[i][j]));
      }
      return;
    }
  }
  if (cs_c == 1) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      float* ci = c + i * rs_c;
      const V vai = row_scale != nullptr ? S::bcast(row_scale + i) : va;
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) {
        const V r = S::mul(vai, acc[i][j]);
        S::store(ci + j * S::kLanes, read_c ? S::fma(vb, S::load(ci + j * S::kLanes), r) : r);
      }
    }
    return;
  }
  alignas(64) float t[S::kLanes];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) {
      S::store(t, S::mul(row_scale != nullptr ? S::bcast(row_scale + i) : va, acc[i][j]));
      for (int l = 0; l < S::kLanes; ++l) {
        float& dst = c[i * rs_c + (j * S::kLanes + l) * cs_c];
        dst = read_c ? S::fma1(*beta, dst, t[l]) : t[l];
      }
    }
}

}  // namespace attain::gemm::detail
