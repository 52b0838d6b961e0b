// AVX512-BF16 traits for the templated kernels on bf16 pairs: the fp32 traits with the k step
// as vdpbf16ps, which adds both products of a pair (two bf16 of consecutive k in a 32-bit word)
// to an fp32 lane. Include only from *avx512bf16*.cpp files.
#pragma once

#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"

namespace {

struct Avx512Bf16Pairs : Avx512 {
  static V dot(V a, V b, V c) {
    return _mm512_dpbf16_ps(c, reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(b));
  }
  // bf16 C rounded by vcvtneps2bf16: the bits of Avx512::round16 (round to nearest even; a NaN
  // as its top half | 0x40; infinities and overflow alike) in one instruction, except for fp32
  // denormals, which it reads as zero - a vector holding one takes Avx512::round16. fp16 C:
  // Avx512's. (Warm, 1 thread, 2048 x 512 x 128 bf16 on the swapped direct path: the rounding's
  // integer steps took 3-8% of the time.)
  static __m256i round16(bool bf, V v) {
    if (!bf) return Avx512::round16(bf, v);
    const __m512i mag = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff));
    // 0 < mag < 0x00800000: mag - 1 < 0x007fffff, unsigned
    if (_mm512_cmplt_epu32_mask(_mm512_sub_epi32(mag, _mm512_set1_epi32(1)),
                                _mm512_set1_epi32(0x007fffff)) != 0)
      return Avx512::round16(bf, v);
    return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
  }
  static void store16(bool bf, std::uint16_t* p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), round16(bf, v));
  }
};

}  // namespace
