// AVX2 + FMA traits for the templated kernels. Include only from *avx2*.cpp files, inside
// nothing: the struct lives in an anonymous namespace so instantiations stay file-local.
#pragma once

#include <immintrin.h>

#include <cstdint>

// The 6 x 16 tiles' asm (Avx2::steps4_6x16, the packed micro-kernel, and Avx2::direct_6x16, the
// direct kernel), a k step each: two vectors into ymm12-13, then for each of the six rows a value
// broadcast into ymm14 or ymm15 (alternating) and its two FMAs into the row's accumulators.
// Addresses are asm operand strings. Packed: B's vectors at byte offsets B0 and B1 of b, A's six
// values at A0 + 4 r of a. Direct: A^T's vectors at A0 and A1 of at, the value W bytes on from
// each W row's place (r8, r9, r10, r11, rsi, rdi, plus o).
// clang-format off
#define ATTAIN_ASM_6X16_LOADS(V0, V1)            \
  "vmovups " V0 ", %%ymm12\n\t"                 \
  "vmovups " V1 ", %%ymm13\n\t"
#define ATTAIN_ASM_6X16_ROW(ADDR, YB, C0, C1)    \
  "vbroadcastss " ADDR ", %%" YB "\n\t"         \
  "vfmadd231ps %%ymm12, %%" YB ", %[" C0 "]\n\t" \
  "vfmadd231ps %%ymm13, %%" YB ", %[" C1 "]\n\t"
#define ATTAIN_PACKED_STEP_6X16(B0, B1, A0)                   \
  ATTAIN_ASM_6X16_LOADS(#B0 "(%[b])", #B1 "(%[b])")           \
  ATTAIN_ASM_6X16_ROW(#A0 "+0(%[a])", "ymm14", "c00", "c01")  \
  ATTAIN_ASM_6X16_ROW(#A0 "+4(%[a])", "ymm15", "c10", "c11")  \
  ATTAIN_ASM_6X16_ROW(#A0 "+8(%[a])", "ymm14", "c20", "c21")  \
  ATTAIN_ASM_6X16_ROW(#A0 "+12(%[a])", "ymm15", "c30", "c31") \
  ATTAIN_ASM_6X16_ROW(#A0 "+16(%[a])", "ymm14", "c40", "c41") \
  ATTAIN_ASM_6X16_ROW(#A0 "+20(%[a])", "ymm15", "c50", "c51")
#define ATTAIN_DIRECT_STEP_6X16(A0, A1, W)                       \
  ATTAIN_ASM_6X16_LOADS(#A0 "(%[at])", #A1 "(%[at])")            \
  ATTAIN_ASM_6X16_ROW(#W "(%%r8,%[o])", "ymm14", "c00", "c01")   \
  ATTAIN_ASM_6X16_ROW(#W "(%%r9,%[o])", "ymm15", "c10", "c11")   \
  ATTAIN_ASM_6X16_ROW(#W "(%%r10,%[o])", "ymm14", "c20", "c21")  \
  ATTAIN_ASM_6X16_ROW(#W "(%%r11,%[o])", "ymm15", "c30", "c31")  \
  ATTAIN_ASM_6X16_ROW(#W "(%%rsi,%[o])", "ymm14", "c40", "c41")  \
  ATTAIN_ASM_6X16_ROW(#W "(%%rdi,%[o])", "ymm15", "c50", "c51")
// clang-format on

namespace {

struct Avx2 {
  using V = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kRegs = 16;  // vector registers
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  // The micro-kernel's k-step product (simd_ukernel): an FMA on fp32 panels.
  static V dot(V a, V b, V c) { return fma(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static float fma1(float a, float b, float c) {
    return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
  }
  // The 6 x 16 micro-kernel's k loop (simd_ukernel), n4 > 0 iterations of four k steps, in
  // inline asm: with 16 ymm registers the 12 accumulators, two B vectors and a broadcast fill
  // the file, and GCC's code for the generic loop kept the accumulators on the stack across
  // each iteration (twelve stores and loads per four steps: 0.66 of the FMA peak on 2048^3 at 1
  // thread, Zen 4 forced to AVX2). Here they are asm operands held in registers for the whole
  // loop; the B vectors live in ymm12-13 and the broadcasts alternate ymm14-15. The A panel is
  // prefetched 12 k steps ahead as the generic loop does (two lines per four steps). a and b
  // end past the steps done.
  static __attribute__((always_inline)) void steps4_6x16(V (&c)[6][2], const float*& a,
                                                         const float*& b, std::int64_t n4) {
    // clang-format off
    asm volatile(
        "1:\n\t"
        "prefetcht0 288(%[a])\n\t"
        "prefetcht0 352(%[a])\n\t"
        ATTAIN_PACKED_STEP_6X16(0, 32, 0)
        ATTAIN_PACKED_STEP_6X16(64, 96, 24)
        ATTAIN_PACKED_STEP_6X16(128, 160, 48)
        ATTAIN_PACKED_STEP_6X16(192, 224, 72)
        "add $96, %[a]\n\t"
        "add $256, %[b]\n\t"
        "dec %[n]\n\t"
        "jnz 1b\n\t"
        : [a] "+r"(a), [b] "+r"(b), [n] "+r"(n4), [c00] "+x"(c[0][0]), [c01] "+x"(c[0][1]),
          [c10] "+x"(c[1][0]), [c11] "+x"(c[1][1]), [c20] "+x"(c[2][0]), [c21] "+x"(c[2][1]),
          [c30] "+x"(c[3][0]), [c31] "+x"(c[3][1]), [c40] "+x"(c[4][0]), [c41] "+x"(c[4][1]),
          [c50] "+x"(c[5][0]), [c51] "+x"(c[5][1])
        :
        : "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory");
    // clang-format on
  }
  // The direct kernel's 6 x 16 tile (simd_direct, R = 6, NV = 2): k steps [p, e) in blocks of
  // 16 while 16 remain, each after before(p), in inline asm, for the reason steps4_6x16 is asm
  // (GCC kept the twelve accumulators on the stack; here they are locals, in registers across
  // the blocks, where the array kept them in memory from one block to the next). Step p loads
  // A^T's two vectors at at + 16 p and broadcasts value p of each W row w[r] (a row past the
  // tile's repeats the last one). The row pointers are read into scratch registers: as operands
  // they and the accumulators' in / out pairs would pass GCC's limit of 30. Returns the steps
  // done.
  template <class F>
  static __attribute__((always_inline)) std::int64_t direct_6x16(V (&c)[6][2],
                                                                 const float* const (&w)[6],
                                                                 const float* at, std::int64_t p,
                                                                 std::int64_t e, F&& before) {
    V c00 = c[0][0], c01 = c[0][1], c10 = c[1][0], c11 = c[1][1], c20 = c[2][0], c21 = c[2][1];
    V c30 = c[3][0], c31 = c[3][1], c40 = c[4][0], c41 = c[4][1], c50 = c[5][0], c51 = c[5][1];
    for (; p + 16 <= e; p += 16) {
      before(p);
      const float* a = at + p * 16;
      const std::int64_t off = p * 4;
      // clang-format off
      asm volatile(
          "mov 0(%[w]), %%r8\n\t"
          "mov 8(%[w]), %%r9\n\t"
          "mov 16(%[w]), %%r10\n\t"
          "mov 24(%[w]), %%r11\n\t"
          "mov 32(%[w]), %%rsi\n\t"
          "mov 40(%[w]), %%rdi\n\t"
          ATTAIN_DIRECT_STEP_6X16(0, 32, 0)
          ATTAIN_DIRECT_STEP_6X16(64, 96, 4)
          ATTAIN_DIRECT_STEP_6X16(128, 160, 8)
          ATTAIN_DIRECT_STEP_6X16(192, 224, 12)
          ATTAIN_DIRECT_STEP_6X16(256, 288, 16)
          ATTAIN_DIRECT_STEP_6X16(320, 352, 20)
          ATTAIN_DIRECT_STEP_6X16(384, 416, 24)
          ATTAIN_DIRECT_STEP_6X16(448, 480, 28)
          ATTAIN_DIRECT_STEP_6X16(512, 544, 32)
          ATTAIN_DIRECT_STEP_6X16(576, 608, 36)
          ATTAIN_DIRECT_STEP_6X16(640, 672, 40)
          ATTAIN_DIRECT_STEP_6X16(704, 736, 44)
          ATTAIN_DIRECT_STEP_6X16(768, 800, 48)
          ATTAIN_DIRECT_STEP_6X16(832, 864, 52)
          ATTAIN_DIRECT_STEP_6X16(896, 928, 56)
          ATTAIN_DIRECT_STEP_6X16(960, 992, 60)
          : [c00] "+x"(c00), [c01] "+x"(c01), [c10] "+x"(c10), [c11] "+x"(c11), [c20] "+x"(c20),
            [c21] "+x"(c21), [c30] "+x"(c30), [c31] "+x"(c31), [c40] "+x"(c40), [c41] "+x"(c41),
            [c50] "+x"(c50), [c51] "+x"(c51)
          : [at] "r"(a), [o] "r"(off), [w] "r"(w)
          : "r8", "r9", "r10", "r11", "rsi", "rdi", "xmm12", "xmm13", "xmm14", "xmm15", "memory");
      // clang-format on
    }
    c[0][0] = c00, c[0][1] = c01, c[1][0] = c10, c[1][1] = c11, c[2][0] = c20, c[2][1] = c21;
    c[3][0] = c30, c[3][1] = c31, c[4][0] = c40, c[4][1] = c41, c[5][0] = c50, c[5][1] = c51;
    return p;
  }
  static float hsum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // 16-bit C (bf16 when bf, else fp16), 8 values: as Avx512::load16 / store16.
  static V load16(bool bf, const std::uint16_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return bf ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
              : _mm256_cvtph_ps(h);
  }
  static void store16(bool bf, std::uint16_t* p, V v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i hi = _mm256_srli_epi32(u, 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    __m256i r, r_nan;
    if (bf) {
      const __m256i bias =
          _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
      r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
      r_nan = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
    } else {
      r = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      r_nan = _mm256_or_si256(_mm256_and_si256(hi, _mm256_set1_epi32(0x8000)),
                              _mm256_set1_epi32(0x7e00));
    }
    r = _mm256_blendv_epi8(r, r_nan, nan);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
  }
  // The four sums {hsum(a), hsum(b), hsum(c), hsum(d)} in one reduction tree.
  static __m128 hsum4(V a, V b, V c, V d) {
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
  }
};

}  // namespace

namespace {

// Storage -> fp32 loads of kLanes values (bitwise the same as attain's scalar conversions).
struct Avx2Load : Avx2 {
  static V f32(const void* p) { return _mm256_loadu_ps(static_cast<const float*>(p)); }
  static V bf16(const void* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  static V f16(const void* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
  // e4m3 -> fp32, exact (see Avx512Load::fp8_finite: the pattern of value * 2^-120, then an
  // exact multiply by 2^120). The NaN codes come out as 480: callers find them with fp8_nan,
  // or use fp8.
  // As an FMA onto -0 (the same value, -0 and +0 kept): a multiply of an e4m3 subnormal's pattern,
  // an fp32 denormal, takes Zen 4's slow path; an FMA does not.
  static V fp8_finite(const void* p) {
    return _mm256_fmadd_ps(fp8_raw(p), _mm256_set1_ps(0x1p120f), _mm256_set1_ps(-0.0f));
  }
  // The pattern alone: value * 2^-120 (Stream's folded fp8 decode, whose A is scaled up).
  static V fp8_raw(const void* p) {
    __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p)));
    v = _mm256_slli_epi32(v, 20);
    return _mm256_castsi256_ps(
        _mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0x87f00000u))));
  }
  // The same with the NaN codes as NaN.
  static V fp8(const void* p) {
    const __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p)));
    const __m256i mag = _mm256_set1_epi32(0x7f);
    const __m256i nan = _mm256_cmpeq_epi32(_mm256_and_si256(v, mag), mag);
    return _mm256_or_ps(fp8_finite(p), _mm256_castsi256_ps(nan));
  }
  // NaN-code scan (see Avx512Load): byte-wise maximum of the magnitudes seen.
  using NanAcc = __m256i;
  static constexpr int kNanSpan = 32;  // bytes per fp8_nan
  static NanAcc nan_none() { return _mm256_setzero_si256(); }
  static NanAcc fp8_nan(NanAcc acc, const void* p, std::int64_t n) {  // n <= 32, multiple of 4
    __m256i v;
    if (n >= 32) {
      v = _mm256_loadu_si256(static_cast<const __m256i*>(p));
    } else {
      const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n / 4)), lane);
      v = _mm256_maskload_epi32(static_cast<const int*>(p), live);
    }
    return _mm256_max_epu8(acc, _mm256_and_si256(v, _mm256_set1_epi8(0x7f)));
  }
  static bool nan_any(NanAcc acc) {
    return _mm256_movemask_epi8(_mm256_cmpeq_epi8(acc, _mm256_set1_epi8(0x7f))) != 0;
  }
  static float f16_scalar(std::uint16_t h) { return _cvtsh_ss(h); }
  static constexpr int kDecodeMB = 2;  // A rows per register tile in the decode kernel
  // Stream::row_order for one row of A only (from 4 rows of A each W vector's A loads cost more
  // than the single stream saves).
  static constexpr int kRowOrderMaxMB = 1;
};

}  // namespace
