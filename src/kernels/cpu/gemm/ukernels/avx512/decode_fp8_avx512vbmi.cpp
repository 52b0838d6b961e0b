// fp8 x fp8 decode (few rows of A) as bf16 pairs, AVX512-BF16 + AVX512-VBMI. Each 64 bytes of
// a W row become 64 bf16 values with two byte lookups (vpermi2b over the 128 e4m3 magnitudes:
// one table for the low byte of the bf16, one for the high byte; the sign bit is or-ed in) and
// two byte interleaves, then two vdpbf16ps per row of A: about 1.75 instructions per 16 values
// where the fp32 route takes 4 to convert, 1 to multiply and a NaN scan. The tables map the
// NaN codes to a bf16 NaN and the subnormals to their exact values, so nothing is checked on
// the way. e4m3 values are exact in bf16 and their products exact in fp32; each 128-wide K
// block's sums go onto the output times a_scale(row, block) * w_scale(rows, block).
//
// The byte interleave works within 128-bit lanes, so the 64 values come out as two vectors
// holding k = {0-7, 16-23, 32-39, 48-55} and {8-15, 24-31, 40-47, 56-63} of the 64; A is
// stored in that order (permute_a_fp8_pairs), so the pairs meet their partners.

#include <immintrin.h>

#include "attain/dtype.hpp"
#include "kernels/cpu/gemm/kernels.hpp"
#include "kernels/cpu/gemm/ukernels/avx512/decode_pairs_avx512.hpp"

namespace attain::gemm::detail {

namespace {

// The 256 e4m3 codes as bf16 (exact; the NaN codes give a quiet NaN), and the low and high
// bytes of the first 128 (the magnitudes) as vpermi2b tables: built once, not per call (the
// packing converts one row of a panel per call).
struct E4m3Tables {
  std::uint16_t bf16[256];
  alignas(64) std::uint8_t lo[128], hi[128];
  explicit E4m3Tables(const float* e4m3) {
    for (int c = 0; c < 256; ++c) bf16[c] = f32_to_bf16(e4m3[c]);
    for (int m = 0; m < 128; ++m) {
      lo[m] = static_cast<std::uint8_t>(bf16[m] & 0xff);
      hi[m] = static_cast<std::uint8_t>(bf16[m] >> 8);
    }
  }
};
const E4m3Tables& e4m3_tables(const float* e4m3) {
  static const E4m3Tables t(e4m3);  // e4m3 is the one decode table (dtype.hpp)
  return t;
}

// fp8 W: 64 e4m3 bytes as bf16 in the interleave's order, by two byte lookups.
struct Fp8Source {
  static constexpr int kBytes = 1, kRows = 2;
  static constexpr bool kScaled = true, kByHalves = false, kConvertOnce = true;
  __m512i lo0, lo1, hi0, hi1;  // low and high bytes of the bf16 of the 128 magnitudes

  explicit Fp8Source(const float* e4m3) {
    const E4m3Tables& t = e4m3_tables(e4m3);
    lo0 = _mm512_load_si512(t.lo);
    lo1 = _mm512_load_si512(t.lo + 64);
    hi0 = _mm512_load_si512(t.hi);
    hi1 = _mm512_load_si512(t.hi + 64);
  }
  void load64(const std::uint8_t* p, __m512i& w0, __m512i& w1) const {
    const __m512i x = _mm512_loadu_si512(p);
    const __m512i lo = _mm512_permutex2var_epi8(lo0, x, lo1);  // index bit 7 (sign) ignored
    __m512i hi = _mm512_permutex2var_epi8(hi0, x, hi1);
    hi = _mm512_ternarylogic_epi32(hi, x, _mm512_set1_epi8(static_cast<char>(0x80)), 0xf8);
    w0 = _mm512_unpacklo_epi8(lo, hi);
    w1 = _mm512_unpackhi_epi8(lo, hi);
  }
};

}  // namespace

void decode_fp8_pairs_avx512vbmi(const DecodeArgs& g) {
  pairs_decode(g, Fp8Source(g.e4m3));
}

void e4m3_to_bf16_avx512vbmi(const std::uint8_t* src, std::int64_t n, const float* e4m3,
                             std::uint16_t* dst) {
  const Fp8Source s(e4m3);
  // The interleave gives k = {0-7, 16-23, 32-39, 48-55} and {8-15, ...}: 128-bit lanes back
  // in order by one two-source permute per output vector.
  const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  std::int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512i w0, w1;
    s.load64(src + i, w0, w1);
    _mm512_storeu_si512(dst + i, _mm512_permutex2var_epi64(w0, first, w1));
    _mm512_storeu_si512(dst + i + 32, _mm512_permutex2var_epi64(w0, second, w1));
  }
  const std::uint16_t* bf = e4m3_tables(e4m3).bf16;
  for (; i < n; ++i) dst[i] = bf[src[i]];
}

void permute_a_fp8_pairs(const std::uint8_t* a, std::int64_t m, std::int64_t lda, std::int64_t k,
                         const float* e4m3, std::uint16_t* dst) {
  // The order W's values come out of load64 in, by the same conversion.
  const Fp8Source s(e4m3);
  for (std::int64_t i = 0; i < m; ++i, a += lda, dst += k)
    for (std::int64_t b = 0; b < k; b += 64) {
      __m512i w0, w1;
      s.load64(a + b, w0, w1);
      _mm512_storeu_si512(dst + b, w0);
      _mm512_storeu_si512(dst + b + 32, w1);
    }
}

}  // namespace attain::gemm::detail
