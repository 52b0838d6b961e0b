// The panel kernel's AVX-512 part (decode_panel.hpp): zmm accumulators, all 8 rows of A in one
// pass (8 x 3 accumulators, 3 W vectors and an A vector of the 32 registers), and the sums of a
// row's accumulators stored with one masked store. The AVX-512 routes derive from Avx512Panel.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/decode_panel.hpp"

namespace attain::gemm::detail {
namespace {

struct Avx512Panel {
  using Acc = __m512;
  static constexpr int kMinM = kDecodePanelMinM, kPassRows = kDecodePanelMaxM;
  static constexpr std::int64_t kFarMaxRow = 0;
  static constexpr bool kNextChunk = false, kFoldA = false;
  static __m512 zero() { return _mm512_setzero_ps(); }
  static void sums(float* out, int live, bool add, __m512 a0, __m512 a1, __m512 a2) {
    const auto mask = static_cast<__mmask8>((1u << live) - 1);
    __m128 s = Avx512::hsum4(a0, a1, a2, a2);
    if (add) s = _mm_add_ps(s, _mm_maskz_loadu_ps(mask, out));
    _mm_mask_storeu_ps(out, mask, s);
  }
};

}  // namespace
}  // namespace attain::gemm::detail
