// Decode path, AVX2: W rows streamed once and converted in registers (4 W rows x 2 A rows of
// ymm accumulators; see simd_stream.hpp), and fp32 / bf16 / fp16 W with 3-8 rows of A on the
// panel kernel (decode_panel.hpp) in passes of up to 4 rows (panel_shape: K >= 384, 16-bit W
// from 128).
#include <cstdint>
#include <cstring>

#include "kernels/cpu/gemm/ukernels/avx2/simd_avx2.hpp"
#include "kernels/cpu/gemm/ukernels/decode_panel.hpp"
#include "kernels/cpu/gemm/ukernels/simd_stream.hpp"

namespace attain::gemm::detail {

namespace {

// The panel kernel's fp32 route on AVX2: ymm accumulators, passes of 4 rows of A (4 x 3
// accumulators, 3 W vectors and an A vector fill the 16 registers; 7 loads per 12 FMAs where
// the 4 x 4 blocks of 2 rows (Stream) take 6 per 8 and read the W tile four times for M = 8).
// W of storage dtype T is converted to fp32 as each vector of 8 values is loaded; the prefetch
// distances are the AVX-512 route's (decode_avx512.cpp).
template <DType T>
struct Fp32Route {
  using A = float;
  using W = __m256;
  using Acc = __m256;
  static constexpr int kMinM = kDecodePanelMinMAvx2, kPassRows = 4;
  static constexpr std::int64_t kStep = 8, kBytes = T == DType::f32 ? 4 : 2,
                                kAhead = T == DType::f32 ? 256 : 384;
  static constexpr bool kWide = T != DType::f32;
  // A loaded once for the pass (decode_panel.hpp): folded into the FMAs as on AVX-512's fp32
  // route, fp32 W ran level (0.99-1.03x, M 6-8, forced on the Zen 5 guest).
  static constexpr bool kFoldA = false;
  // The line 16 KiB on into L2 (kDecodeFarBytes) for all W, where AVX-512's fp32 route has none;
  // for fp32 W only in rows shorter than that: a longer row's line 16 KiB on is one of its group's
  // rows, already streaming. fp32 W: the second pass of 4 rows (W from L1) fetches the tile's next
  // chunk into L2, so that memory is not idle while it runs (bf16, whose far prefetch already runs
  // ahead, does not).
  static constexpr bool kNextChunk = T == DType::f32;
  static constexpr std::int64_t kFarBytes = kDecodeFarBytes,
                                kFarMaxRow = T == DType::f32 ? kDecodeFarBytes : 0;
  static const char* a_row(const DecodeArgs& g, int i) {
    return reinterpret_cast<const char*>(g.a + i * g.lda);
  }
  static void pack(const DecodeArgs& g, int i, std::int64_t s, float* dst) {
    const std::int64_t p = s * kStep, left = g.k - p;
    const float* src = g.a + i * g.lda + p;
    if (left >= kStep) return _mm256_store_ps(dst, _mm256_loadu_ps(src));
    for (std::int64_t q = 0; q < kStep; ++q) dst[q] = q < left ? src[q] : 0.0f;
  }
  static __m256 a_load(const float* p) { return _mm256_load_ps(p); }
  static __m256 load(const std::byte* row, std::int64_t p) {
    return Stream<Avx2Load>::vec<T>(row, p);
  }
  // The last `left` (< 8) values of a row, zeros past them.
  static __m256 load(const std::byte* row, std::int64_t p, std::int64_t left) {
    alignas(32) std::byte tail[kStep * kBytes] = {};
    std::memcpy(tail, row + p * kBytes, static_cast<std::size_t>(left * kBytes));
    return load(tail, 0);
  }
  static __m256 dot(__m256 acc, __m256 a, __m256 w) { return _mm256_fmadd_ps(a, w, acc); }
  static __m256 zero() { return _mm256_setzero_ps(); }
  static void sums(float* out, int live, bool add, __m256 a0, __m256 a1, __m256 a2) {
    const __m128i mask = _mm_cmpgt_epi32(_mm_set1_epi32(live), _mm_setr_epi32(0, 1, 2, 3));
    __m128 s = Avx2::hsum4(a0, a1, a2, a2);
    if (add) s = _mm_add_ps(s, _mm_maskload_ps(out, mask));
    _mm_maskstore_ps(out, mask, s);
  }
};

}  // namespace

void decode_avx2(const DecodeArgs& args) {
  if (panel_shape(args.w_type, args.m, args.k, kDecodePanelMinMAvx2, kDecodePanelMinK16Avx2))
    return decode_panel_fp32_route<Fp32Route>(args);
  Stream<Avx2Load>::decode(args);
}

}  // namespace attain::gemm::detail
