// Packing helper, AVX-512: dtype conversion of contiguous runs (16 values per step).
#include <cmath>

#include "attain/dtype.hpp"
#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/simd_stream.hpp"

namespace attain::gemm::detail {

void convert_avx512(const void* src, DType t, std::int64_t n, float scale, const float* e4m3,
                    float* dst) {
  Stream<Avx512Load>::convert(src, t, n, scale, e4m3, dst);
}

void round16_avx512(DType t, const float* src, std::int64_t n, float alpha, float beta,
                    std::uint16_t* dst) {
  const bool bf = t == DType::bf16;
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
  const __m512i quiet = _mm512_set1_epi32(0x40), sign16 = _mm512_set1_epi32(0x8000);
  const __m512i nan16 = _mm512_set1_epi32(0x7e00);
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512 v = _mm512_mul_ps(va, _mm512_loadu_ps(src + j));
    if (beta != 0.0f) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dst + j));
      const __m512 old = bf ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                            : _mm512_cvtph_ps(h);
      v = _mm512_fmadd_ps(vb, old, v);
    }
    const __m512i u = _mm512_castps_si512(v);
    const __m512i hi = _mm512_srli_epi32(u, 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
    __m512i r;
    if (bf) {  // f32_to_bf16: u + 0x7fff + (bit 16 of u), the top half; NaN: the top half, quieted
      r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(bias, _mm512_and_si512(hi, one))),
                            16);
      r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, quiet));
    } else {  // f32_to_f16: vcvtps2ph rounds to nearest even as it does; NaN: sign | 0x7e00
      r = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_and_si512(hi, sign16), nan16));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j), _mm512_cvtepi32_epi16(r));
  }
  for (; j < n; ++j) {
    const float ab = alpha * src[j];
    const float c = bf ? bf16_to_f32(dst[j]) : f16_to_f32(dst[j]);
    const float v = beta != 0.0f ? std::fma(beta, c, ab) : ab;
    dst[j] = bf ? f32_to_bf16(v) : f32_to_f16(v);
  }
}

}  // namespace attain::gemm::detail
