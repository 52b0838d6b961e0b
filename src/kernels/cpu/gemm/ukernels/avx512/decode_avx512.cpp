// Decode path, AVX-512: W rows streamed once and converted in registers (4 W rows x 4 A rows
// of zmm accumulators; see simd_stream.hpp), and fp32 / bf16 / fp16 W with 5-8 rows of A in
// one pass (the panel kernel, decode_panel_avx512.hpp).
#include <cstdint>

#include "kernels/cpu/gemm/ukernels/avx512/decode_panel_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/simd_stream.hpp"

namespace attain::gemm::detail {

namespace {

// The panel kernel's fp32 route: W of storage dtype T converted to fp32 as each vector of 16 values
// is loaded, multiplied by fp32 A with FMAs. The prefetch runs 256 values ahead in fp32 rows: 1
// KiB, the best of 256 B - 1.5 KiB on Zen 5; 384 in 16-bit rows (768 B).
template <DType T>
struct Fp32Route : Avx512Panel {
  using A = float;
  using W = __m512;
  static constexpr std::int64_t kStep = 16, kBytes = T == DType::f32 ? 4 : 2,
                                kAhead = T == DType::f32 ? 256 : 384;
  static constexpr bool kWide = T != DType::f32;  // 16-bit W: long pieces of each row
  // fp32 W: A's vector as a memory operand of each of the three FMAs, one operation where a load
  // and an FMA were two. The W stream runs only as fast as the core holds its lines in flight, and
  // the core's window counts operations (docs/gemm.md, "Known gaps"): batched 128 x (8 x 128 x
  // 2048) fp32 runs 1.05x faster so; 16-bit W gains nothing.
  static constexpr bool kFoldA = T == DType::f32;
  // 16-bit W: also the line 16 KiB on into L2 (kDecodeFarBytes); fp32 W: not (it gains on some
  // shapes and loses on others).
  static constexpr std::int64_t kFarBytes = T == DType::f32 ? 0 : kDecodeFarBytes;
  static const char* a_row(const DecodeArgs& g, int i) {
    return reinterpret_cast<const char*>(g.a + i * g.lda);
  }
  static void pack(const DecodeArgs& g, int i, std::int64_t s, float* dst) {
    const std::int64_t p = s * kStep, left = g.k - p;
    const __mmask16 live =
        left >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << left) - 1);
    _mm512_store_ps(dst, _mm512_maskz_loadu_ps(live, g.a + i * g.lda + p));
  }
  static __m512 a_load(const float* p) { return _mm512_load_ps(p); }
  static __m512 load(const std::byte* row, std::int64_t p) {
    return Stream<Avx512Load>::vec<T>(row, p);
  }
  static __m512 load(const std::byte* row, std::int64_t p, std::int64_t left) {
    const auto live = static_cast<__mmask16>((1u << left) - 1);
    if constexpr (T == DType::f32) return _mm512_maskz_loadu_ps(live, row + p * 4);
    const __m256i h = _mm256_maskz_loadu_epi16(live, row + p * 2);
    if constexpr (T == DType::bf16) return Avx512Load::bf16_widen(h);
    if constexpr (T == DType::f16) return _mm512_cvtph_ps(h);
  }
  static __m512 dot(__m512 acc, __m512 a, __m512 w) { return _mm512_fmadd_ps(a, w, acc); }
};

}  // namespace

void decode_avx512(const DecodeArgs& args) {
  // The short rows and the panel kernel read W once for all rows of A where the 4 x 4 blocks take
  // two passes.
  if (args.w_type != DType::fp8 &&
      decodes_short(args.m, args.k, 16, args.w_type == DType::f32 ? 3 : 1))
    return with_fp32_route<Fp32Route>(args.w_type, [&]<class P>() { decode_short<P>(args); });
  if (panel_shape(args.w_type, args.m, args.k)) return decode_panel_fp32_route<Fp32Route>(args);
  Stream<Avx512Load>::decode(args);
}

}  // namespace attain::gemm::detail
