// AVX512_BF16 dot-product loop (compiled with -mavx512bf16): the bf16 compute ceiling of CPUs
// that multiply bf16 natively. One vdpbf16ps = 16 lanes x 2 products x 2 FLOPs = 64 FLOPs.
#include <immintrin.h>

#include "device/probe_kernels.hpp"

namespace attain::probe {

float bf16_dot_avx512(std::int64_t iters) {
  // Operands are bf16 pairs of small values; each chain starts elsewhere so none folds.
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3c00);  // bf16 2^-7
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3c00);
  __m512 c[kBf16Chains];
  for (int i = 0; i < kBf16Chains; ++i) c[i] = _mm512_set1_ps(1.0f + 0.01f * static_cast<float>(i));
  for (std::int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kBf16Chains; ++i) c[i] = _mm512_dpbf16_ps(c[i], a, b);
  }
  __m512 s = c[0];
  for (int i = 1; i < kBf16Chains; ++i) s = _mm512_add_ps(s, c[i]);
  alignas(64) float out[16];
  _mm512_store_ps(out, s);
  float sum = 0;
  for (float x : out) sum += x;
  return sum;
}

}  // namespace attain::probe
