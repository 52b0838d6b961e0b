// bf16 micro-kernel, AVX512-BF16: 12 rows x 32 columns like sgemm_avx512_12x32, but A and B
// stay bf16. The panels hold 32-bit words, each two bf16 of consecutive k (A: word (k/2, i),
// B: word (k/2, j)); per pair of k, two loads of B words and twelve broadcasts of A words feed
// 24 vdpbf16ps, each adding both products of a pair to an fp32 lane: twice the k of an fp32
// FMA per instruction. Products of bf16 values are exact; the sums are fp32 (vdpbf16ps reads
// denormals as zero and flushes denormal sums).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/gemm/kernels.hpp"

// GCC 12 reports the _mm512_undefined_*() inside its own intrinsics as maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace attain::gemm::detail {

namespace {

constexpr int MR = 12, NV = 2, NR = 32;

inline __m512bh as_bh(__m512i v) {
  return reinterpret_cast<__m512bh>(v);
}

}  // namespace

void bgemm_avx512bf16_12x32(std::int64_t k2, const float* alpha, const float* a_words,
                            const float* b_words, const float* beta, float* c, std::int64_t rs_c,
                            std::int64_t cs_c, const UkAux* aux) {
  const auto* a = reinterpret_cast<const std::uint32_t*>(a_words);
  const auto* b = reinterpret_cast<const std::uint32_t*>(b_words);
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_setzero_ps();

  if (cs_c == 1) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      __builtin_prefetch(c + i * rs_c, 1, 3);
      __builtin_prefetch(c + i * rs_c + NR - 1, 1, 3);
    }
  }

  auto step = [&](const std::uint32_t* ap, const std::uint32_t* bp) __attribute__((always_inline)) {
    const __m512bh b0 = as_bh(_mm512_loadu_si512(bp)), b1 = as_bh(_mm512_loadu_si512(bp + 16));
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512bh av = as_bh(_mm512_set1_epi32(static_cast<int>(ap[i])));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
    }
  };

  std::int64_t p = 0;
  constexpr int kPfA = 12;  // A words kPfA pair-steps ahead (A streams from L2)
  for (; p + 4 <= k2; p += 4) {
#pragma GCC unroll 4
    for (int l = 0; l < 4 * MR * 4; l += 64)
      __builtin_prefetch(reinterpret_cast<const char*>(a + kPfA * MR) + l, 0, 3);
    step(a, b);
    step(a + MR, b + NR);
    step(a + 2 * MR, b + 2 * NR);
    step(a + 3 * MR, b + 3 * NR);
    a += 4 * MR;
    b += 4 * NR;
  }
  for (; p < k2; ++p) {
    step(a, b);
    a += MR;
    b += NR;
  }
  if (aux != nullptr) {
    if (aux->a_next != nullptr) __builtin_prefetch(aux->a_next, 0, 3);
    if (aux->b_next != nullptr) __builtin_prefetch(aux->b_next, 0, 3);
  }

  // C = alpha * acc + beta * C, as the fp32 kernel does it.
  const __m512 va = _mm512_set1_ps(*alpha);
  const bool read_c = *beta != 0.0f;
  const __m512 vb = _mm512_set1_ps(*beta);
  if (cs_c == 1) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      float* ci = c + i * rs_c;
#pragma GCC unroll 2
      for (int j = 0; j < NV; ++j) {
        const __m512 r = _mm512_mul_ps(va, acc[i][j]);
        _mm512_storeu_ps(ci + j * 16,
                         read_c ? _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci + j * 16), r) : r);
      }
    }
    return;
  }
  alignas(64) float t[16];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) {
      _mm512_store_ps(t, _mm512_mul_ps(va, acc[i][j]));
      for (int l = 0; l < 16; ++l) {
        float& dst = c[i * rs_c + (j * 16 + l) * cs_c];
        dst =
            read_c
                ? _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(*beta), _mm_set_ss(dst), _mm_set_ss(t[l])))
                : t[l];
      }
    }
}

}  // namespace attain::gemm::detail
