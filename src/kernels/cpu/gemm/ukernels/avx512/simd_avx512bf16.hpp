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
  // Avx512's. (The integer steps it replaces are a visible share of a short-K product's time.)
  static __m256i round16(bool bf, V v) {
    if (!bf || denormals(v) != 0) return Avx512::round16(bf, v);
    return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
  }
  static void store16(bool bf, std::uint16_t* p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), round16(bf, v));
  }
  // The lanes of v that hold an fp32 denormal (vfpclassps, AVX512DQ).
  static __mmask16 denormals(V v) { return _mm512_fpclass_ps_mask(v, 0x20); }
  // The direct kernel's rows of 16-bit C (simd_direct, ct): x[r][v] at c + r * ldc + v * 16 for
  // r < rows, as store16, with one test for denormals over the whole tile instead of one per
  // vector (the epilogue of a K = 128 tile was a tenth of the kernel's samples).
  template <int R, int NV>
  static __attribute__((always_inline)) void store16_rows(bool bf, std::uint16_t* c,
                                                          std::int64_t ldc, const V (&x)[R][NV],
                                                          int rows) {
    __mmask16 tiny = 0;
    if (bf) {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        if (r >= rows) break;
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) tiny |= denormals(x[r][v]);
      }
    }
    const bool cvt = bf && tiny == 0;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      if (r >= rows) break;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        auto* p = reinterpret_cast<__m256i*>(c + r * ldc + v * kLanes);
        if (cvt)
          _mm256_storeu_si256(p, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x[r][v])));
        else
          _mm256_storeu_si256(p, Avx512::round16(bf, x[r][v]));
      }
    }
  }
};

}  // namespace
