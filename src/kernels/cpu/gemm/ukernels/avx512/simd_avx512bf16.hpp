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
};

}  // namespace
