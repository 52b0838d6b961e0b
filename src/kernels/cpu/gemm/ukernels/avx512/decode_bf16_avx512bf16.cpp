// bf16 x bf16 decode (few rows of A) as bf16 pairs, AVX512-BF16: W rows and A rows are already
// pairs of consecutive k, so each 32 values of K are one load of W and one vdpbf16ps per row
// of A, with no conversion (the fp32 route shifts every W value to fp32 and multiplies 16 at a
// time). Products of bf16 values are exact in fp32 and the sums are fp32; vdpbf16ps reads
// denormal inputs as zero, as the packed path's bf16 pairs do. Any K: the last < 64 values
// are read with masks that give zeros beyond K in A and in W.

#include <immintrin.h>

#include "kernels/cpu/gemm/kernels.hpp"
#include "kernels/cpu/gemm/ukernels/avx512/decode_pairs_avx512.hpp"

namespace attain::gemm::detail {

namespace {

struct Bf16Source {
  static constexpr int kBytes = 2, kRows = 4;
  static constexpr bool kScaled = false, kByHalves = true, kConvertOnce = false;
  static __m512i load32(const std::uint8_t* p) { return _mm512_loadu_si512(p); }
  static void load_tail(const std::uint8_t* p, __mmask32 m0, __mmask32 m1, __m512i& w0,
                        __m512i& w1) {
    w0 = _mm512_maskz_loadu_epi16(m0, p);
    w1 = _mm512_maskz_loadu_epi16(m1, p + 64);
  }
};

}  // namespace

void decode_bf16_pairs_avx512bf16(const DecodeArgs& g) {
  pairs_decode(g, Bf16Source{});
}

}  // namespace attain::gemm::detail
