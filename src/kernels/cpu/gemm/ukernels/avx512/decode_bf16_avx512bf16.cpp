// bf16 x bf16 decode (few rows of A) as bf16 pairs, AVX512-BF16: W rows and A rows are already
// pairs of consecutive k, so each 32 values of K are one load of W and one vdpbf16ps per row
// of A, with no conversion (the fp32 route shifts every W value to fp32 and multiplies 16 at a
// time). Products of bf16 values are exact in fp32 and the sums are fp32; vdpbf16ps reads
// denormal inputs as zero, as the packed path's bf16 pairs do. Any K: the last < 64 values
// are read with masks that give zeros beyond K in A and in W.

#include <immintrin.h>

#include "kernels/cpu/gemm/kernels.hpp"
#include "kernels/cpu/gemm/ukernels/avx512/decode_pairs_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/avx512/decode_panel_avx512.hpp"

namespace attain::gemm::detail {

namespace {

struct Bf16Source {
  static constexpr int kBytes = 2, kRows = 4;
  static __m512i load32(const std::uint8_t* p) { return _mm512_loadu_si512(p); }
  static void load_tail(const std::uint8_t* p, __mmask32 m0, __mmask32 m1, __m512i& w0,
                        __m512i& w1) {
    w0 = _mm512_maskz_loadu_epi16(m0, p);
    w1 = _mm512_maskz_loadu_epi16(m1, p + 64);
  }
};

// The panel kernel on bf16 pairs: 32 values of K a step, A's rows packed as bf16 (g.a16), W loaded
// as it is stored, one vdpbf16ps per row of A and W vector (about 1.12x faster than the 4 x 4
// blocks at 8 rows). The prefetch runs 1024 values (2 KiB) ahead: 384 and 1536 are slower, 768 in
// between.
struct Bf16Pairs : Avx512Panel {
  using A = std::uint16_t;
  using W = __m512i;
  static constexpr std::int64_t kStep = 32, kBytes = 2, kAhead = 1024;
  static constexpr bool kWide = false;
  static constexpr std::int64_t kFarBytes = kDecodeFarBytes;
  static const char* a_row(const DecodeArgs& g, int i) {
    return reinterpret_cast<const char*>(g.a16 + i * g.lda16);
  }
  static void pack(const DecodeArgs& g, int i, std::int64_t s, std::uint16_t* dst) {
    const std::int64_t p = s * kStep, left = g.k - p;
    const __mmask32 live = left >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((1u << left) - 1);
    _mm512_store_si512(dst, _mm512_maskz_loadu_epi16(live, g.a16 + i * g.lda16 + p));
  }
  static __m512i a_load(const std::uint16_t* p) { return _mm512_load_si512(p); }
  static __m512i load(const std::byte* row, std::int64_t p) {
    return _mm512_loadu_si512(row + p * 2);
  }
  static __m512i load(const std::byte* row, std::int64_t p, std::int64_t left) {
    return _mm512_maskz_loadu_epi16(static_cast<__mmask32>((1u << left) - 1), row + p * 2);
  }
  static __m512 dot(__m512 acc, __m512i a, __m512i w) { return dot_bf16(acc, a, w); }
};

}  // namespace

void decode_bf16_pairs_avx512bf16(const DecodeArgs& g) {
  if (decodes_short(g.m, g.k, Bf16Pairs::kStep, 3)) return decode_short<Bf16Pairs>(g);
  if (panel_shape(DType::bf16, g.m, g.k)) return decode_panel<Bf16Pairs>(g);
  pairs_decode(g, Bf16Source{});
}

}  // namespace attain::gemm::detail
