// AVX-512F traits for the templated kernels. Include only from *avx512*.cpp files.
#pragma once

// GCC 12 reports the _mm512_undefined_*() inside its own intrinsics (cvtph, reductions) as
// (maybe-)uninitialized; the values are fully defined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace {

struct Avx512 {
  using V = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kRegs = 32;  // vector registers
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  // A non-temporal store (UkAux::stream_c): p 64-byte aligned.
  static void stream(float* p, V v) { _mm512_stream_ps(p, v); }
  static V bcast(const float* p) { return _mm512_set1_ps(*p); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  // The micro-kernel's k-step product (simd_ukernel): an FMA on fp32 panels.
  static V dot(V a, V b, V c) { return fma(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  // The paired direct kernel (simd_direct_k2): the two floats at p in every pair of lanes;
  // the one float at p in the even lanes, zeros in the odd (the end of K: nothing is read past
  // p + 1); each pair of lanes' sum in both.
  static V bcast_pair(const float* p) {  // p is 4-byte aligned only: copied, not a double*
    double d;
    std::memcpy(&d, p, sizeof d);
    return _mm512_castpd_ps(_mm512_set1_pd(d));
  }
  static V bcast_pair_first(const float* p) {
    return _mm512_maskz_mov_ps(0x5555, _mm512_set1_ps(*p));
  }
  static V sum_pairs(V v) { return _mm512_add_ps(v, _mm512_permute_ps(v, 0xb1)); }
  static float fma1(float a, float b, float c) {
    return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
  }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  // 16-bit C (bf16 when bf, else fp16), 16 values: widened to fp32; and rounded from fp32 as
  // dtype.hpp's scalar conversions round (bf16 by integer round to nearest even, fp16 by
  // vcvtps2ph; a NaN lane as they set it), bit for bit.
  static V load16(bool bf, const std::uint16_t* p) {
    return widen16(bf, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static V widen16(bool bf, __m256i h) { return bf ? bf16_widen(h) : _mm512_cvtph_ps(h); }
  // 16 bf16 values (loaded, or masked loads) as fp32: each shifted into the high half.
  static V bf16_widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m256i round16(bool bf, V v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i hi = _mm512_srli_epi32(u, 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(
        _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    __m512i r;
    if (bf) {  // u + 0x7fff + (bit 16 of u), the top half; NaN: the top half, quieted
      const __m512i bias =
          _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
      r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
      r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    } else {  // NaN: sign | 0x7e00
      r = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      r = _mm512_mask_mov_epi32(r, nan,
                                _mm512_or_si512(_mm512_and_si512(hi, _mm512_set1_epi32(0x8000)),
                                                _mm512_set1_epi32(0x7e00)));
    }
    return _mm512_cvtepi32_epi16(r);
  }
  static void store16(bool bf, std::uint16_t* p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), round16(bf, v));
  }
  // The direct kernel's write of C not transposed (simd_direct): lane i of x[r] is C(i, r) for
  // r < rows (<= R <= kColsMax) and i < lanes; C(i, r) = alpha * x[r][i] (+ beta * C(i, r), as
  // direct_write computes it), 16-bit C (c16; bf16 when bf) rounded as store16. The vectors are
  // transposed in registers (8 x 16 -> 16 rows of 8: 24 shuffles), two rows of C to a register,
  // each written with a masked store - a row's values are contiguous in C - instead of the 6 x
  // 16 scalar stores of direct_write.
  static constexpr int kColsMax = 8;
  static constexpr bool kCols16 = true;
  template <int R, class Self = Avx512>  // Self: the traits whose round16 rounds 16-bit C
  static __attribute__((always_inline)) void store_cols(const V (&x)[R], int rows, int lanes,
                                                        float alpha, float beta, void* c,
                                                        std::int64_t ldc, bool c16, bool bf) {
    static_assert(R <= kColsMax, "eight columns of C per transposed row");
    V y[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) y[r] = r < R ? x[r] : zero();
    // Per 128-bit chunk j: t[2q] = {y[2q][4j], y[2q+1][4j], y[2q][4j+1], y[2q+1][4j+1]}, t[2q+1]
    // the same of lanes 4j+2, 4j+3.
    V t[8];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      t[2 * q] = _mm512_unpacklo_ps(y[2 * q], y[2 * q + 1]);
      t[2 * q + 1] = _mm512_unpackhi_ps(y[2 * q], y[2 * q + 1]);
    }
    // u[e] (e < 4): chunk j holds row 4j + e's columns 0-3; u[4 + e] its columns 4-7.
    const V u[8] = {_mm512_shuffle_ps(t[0], t[2], 0x44), _mm512_shuffle_ps(t[0], t[2], 0xee),
                    _mm512_shuffle_ps(t[1], t[3], 0x44), _mm512_shuffle_ps(t[1], t[3], 0xee),
                    _mm512_shuffle_ps(t[4], t[6], 0x44), _mm512_shuffle_ps(t[4], t[6], 0xee),
                    _mm512_shuffle_ps(t[5], t[7], 0x44), _mm512_shuffle_ps(t[5], t[7], 0xee)};
    // Rows e and 4 + e (chunks 0, 1), 8 + e and 12 + e (chunks 2, 3), eight columns each.
    const __m512i lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i hi =
        _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    const auto cols = static_cast<__mmask16>((1u << rows) - 1);
    const V va = set1(alpha), vb = set1(beta);
    // Row b's store is the register's upper half written 8 values before the row (masked
    // lanes are neither read nor written, nor fault).
    const auto es = static_cast<std::uintptr_t>(c16 ? 2 : 4);
    auto at = [&](int row, int back) {
      return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(c) +
                                     (static_cast<std::uintptr_t>(row * ldc) - back) * es);
    };
    auto put = [&](V z, int a, int b) __attribute__((always_inline)) {
      const __mmask16 ma = a < lanes ? cols : 0;
      const __mmask16 mb = b < lanes ? static_cast<__mmask16>(cols << 8) : 0;
      if ((ma | mb) == 0) return;
      V v = mul(va, z);
      void *pa = at(a, 0), *pb = at(b, 8);
      if (!c16) {
        if (beta != 0.0f) {
          const V old = _mm512_mask_loadu_ps(_mm512_maskz_loadu_ps(ma, pa), mb, pb);
          v = beta == 1.0f ? add(old, v) : fma(vb, old, v);
        }
        _mm512_mask_storeu_ps(pa, ma, v);
        _mm512_mask_storeu_ps(pb, mb, v);
        return;
      }
      if (beta != 0.0f) {
        const __m256i h = _mm256_mask_loadu_epi16(_mm256_maskz_loadu_epi16(ma, pa), mb, pb);
        v = fma(vb, widen16(bf, h), v);
      }
      const __m256i h = Self::round16(bf, v);
      _mm256_mask_storeu_epi16(pa, ma, h);
      _mm256_mask_storeu_epi16(pb, mb, h);
    };
#pragma GCC unroll 4
    for (int e = 0; e < 4; ++e) {
      put(_mm512_permutex2var_ps(u[e], lo, u[4 + e]), e, 4 + e);
      put(_mm512_permutex2var_ps(u[e], hi, u[4 + e]), 8 + e, 12 + e);
    }
  }
  // The four sums {hsum(a), hsum(b), hsum(c), hsum(d)} in one reduction tree: 128-bit chunks
  // of pairs folded twice, then the four lanes of each chunk.
  static __m128 hsum4(V a, V b, V c, V d) {
    const V ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xee));
    const V cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xee));
    V x = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xdd));
    x = _mm512_add_ps(x, _mm512_permute_ps(x, 0x4e));
    x = _mm512_add_ps(x, _mm512_permute_ps(x, 0xb1));
    const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(idx, x));
  }
  // The sixteen sums of row i's four accumulators (r{i}0..r{i}3) as one vector, lane 4 i + j: pairs
  // folded within 128-bit lanes (unpack, then shuffle), then across them - 15 adds and 30 shuffles
  // where four hsum4 trees take 56 operations (with K = 128, two k steps per row, the reduction is
  // half the work). The values come by value: taking the caller's array by reference keeps that
  // array in memory through the caller's loop (GCC 12).
  static __attribute__((always_inline)) V hsum16(V r00, V r01, V r02, V r03, V r10, V r11, V r12,
                                                 V r13, V r20, V r21, V r22, V r23, V r30, V r31,
                                                 V r32, V r33) {
    // each 128-bit chunk of pair(a, b): {a0 + a2, b0 + b2, a1 + a3, b1 + b3}
    auto pair = [](V a, V b) {
      return _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
    };
    // row(t0, t1), 128-bit chunk L: the row's four sums over chunk L's lanes
    auto row = [](V t0, V t1) {
      return _mm512_add_ps(_mm512_shuffle_ps(t0, t1, 0x44), _mm512_shuffle_ps(t0, t1, 0xee));
    };
    const V u0 = row(pair(r00, r01), pair(r02, r03)), u1 = row(pair(r10, r11), pair(r12, r13));
    const V u2 = row(pair(r20, r21), pair(r22, r23)), u3 = row(pair(r30, r31), pair(r32, r33));
    const V w0 =
        _mm512_add_ps(_mm512_shuffle_f32x4(u0, u1, 0x44), _mm512_shuffle_f32x4(u0, u1, 0xee));
    const V w1 =
        _mm512_add_ps(_mm512_shuffle_f32x4(u2, u3, 0x44), _mm512_shuffle_f32x4(u2, u3, 0xee));
    return _mm512_add_ps(_mm512_shuffle_f32x4(w0, w1, 0x88), _mm512_shuffle_f32x4(w0, w1, 0xdd));
  }
};

}  // namespace

namespace {

// Storage -> fp32 loads of 16 values.
struct Avx512Load : Avx512 {
  static V f32(const void* p) { return _mm512_loadu_ps(p); }
  static V bf16(const void* p) {
    return bf16_widen(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  static V f16(const void* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  // e4m3 -> fp32, exact, in three integer operations and one multiply: the byte sign-extended
  // to 32 bits and shifted left by 20 puts the 7 magnitude bits on fp32's low 4 exponent bits
  // and the mantissa, and copies of the sign on bits 27..31; the mask keeps bit 31. That is
  // the fp32 pattern of value * 2^-120 (e4m3 subnormals land on fp32 subnormals, exactly), and
  // the multiply by 2^120 is exact. The NaN codes (magnitude 0x7f) come out as 480: callers
  // find them with fp8_nan, or use fp8.
  // As an FMA onto -0 (the same value, -0 and +0 kept): a multiply of an e4m3 subnormal's pattern,
  // an fp32 denormal, takes Zen 4's slow path; an FMA does not.
  static V fp8_finite(const void* p) {
    return _mm512_fmadd_ps(fp8_raw(p), _mm512_set1_ps(0x1p120f), _mm512_set1_ps(-0.0f));
  }
  // The pattern alone: value * 2^-120 (Stream's folded fp8 decode, whose A is scaled up).
  static V fp8_raw(const void* p) {
    __m512i v = _mm512_cvtepi8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    v = _mm512_slli_epi32(v, 20);
    return _mm512_castsi512_ps(
        _mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0x87f00000u))));
  }
  // The same with the NaN codes as NaN.
  static V fp8(const void* p) {
    const __m128i b = _mm_loadu_si128(static_cast<const __m128i*>(p));
    const __mmask16 nan = _mm_cmpeq_epi8_mask(
        _mm_or_si128(b, _mm_set1_epi8(static_cast<char>(0x80))), _mm_set1_epi8(-1));
    return _mm512_mask_mov_ps(fp8_finite(p), nan, _mm512_set1_ps(__builtin_nanf("")));
  }
  // NaN-code scan: the byte-wise maximum of the magnitudes (low 7 bits) of every byte seen;
  // an e4m3 NaN code (0x7f, 0xff) was among them exactly when a lane holds 0x7f.
  using NanAcc = __m512i;
  static constexpr int kNanSpan = 64;  // bytes per fp8_nan
  static NanAcc nan_none() { return _mm512_setzero_si512(); }
  static NanAcc fp8_nan(NanAcc acc, const void* p, std::int64_t n) {  // n <= kNanSpan bytes
    const __mmask64 live = n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
    const __m512i v = _mm512_maskz_loadu_epi8(live, p);
    return _mm512_max_epu8(acc, _mm512_and_si512(v, _mm512_set1_epi8(0x7f)));
  }
  static bool nan_any(NanAcc acc) {
    return _mm512_cmpeq_epi8_mask(acc, _mm512_set1_epi8(0x7f)) != 0;
  }
  static float f16_scalar(std::uint16_t h) { return _cvtsh_ss(h); }
  static constexpr int kDecodeMB = 4;
  // Short fp32 rows of W read one row after another up to this many rows of A a block
  // (Stream::row_order; M = 8 runs as two blocks of 4).
  static constexpr int kRowOrderMaxMB = 4;
};

}  // namespace
