// AVX512-BF16 products of the MLA decode kernel (compiled with -mavx512bf16; handed out only
// when the CPU has it). A bf16 cache is multiplied as stored: vdpbf16ps takes 16 pairs of bf16
// from each operand and adds both products of each pair to an fp32 lane, twice the values per
// instruction of an fp32 FMA, and no conversion of the cache block at all.
//
// qk16: 8 tokens x 32 query rows; per pair of k, two loads of query pairs and eight broadcasts
//       of a cache row's pair (one 32-bit word of the row as stored) feed 16 vdpbf16ps.
// pv16: 8 query rows x 32 output columns; per pair of tokens, two loads of value pairs and
//       eight broadcasts of probability pairs. The value pairs are interleaved from two cache
//       rows once per block (pack16), so every query row of the request reuses them.
#include "attain/cpu_features.hpp"
#include "kernels/cpu/attention/mla_ukernels.hpp"

#if defined(__x86_64__) || defined(_M_X64)
// GCC 12 reports the _mm512_undefined_*() inside its own intrinsics (cvtepi8, shifts) as
// maybe-uninitialized; the values are fully defined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cmath>
#include <cstring>

namespace attain::mla {

namespace {

constexpr int kDk2 = kDk / 2;  // 32-bit words (bf16 pairs) per cache row

inline __m512bh as_bh(__m512i v) {
  return reinterpret_cast<__m512bh>(v);
}

#define ATTAIN_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

template <int MR, int NV>
inline void qk16_tile(const std::uint32_t* k32, const std::uint32_t* q2, int mpad, float scale,
                      float* st, Prefetch& pf) {
#define ATTAIN_DECL(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps();
  ATTAIN_ROWS(ATTAIN_DECL)
#undef ATTAIN_DECL
  const std::uint32_t* q = q2;
  for (int k2 = 0; k2 < kDk2; ++k2, q += mpad) {
    pf.next();
    const __m512bh b0 = as_bh(_mm512_loadu_si512(q));
    const __m512bh b1 = NV > 1 ? as_bh(_mm512_loadu_si512(q + 16)) : b0;
#define ATTAIN_DOT(r)                                                                  \
  if constexpr (MR > r) {                                                              \
    const __m512bh a = as_bh(_mm512_set1_epi32(static_cast<int>(k32[r * kDk2 + k2]))); \
    c##r##0 = _mm512_dpbf16_ps(c##r##0, a, b0);                                        \
    if constexpr (NV > 1) c##r##1 = _mm512_dpbf16_ps(c##r##1, a, b1);                  \
  }
    ATTAIN_ROWS(ATTAIN_DOT)
#undef ATTAIN_DOT
  }
  const __m512 s = _mm512_set1_ps(scale);
#define ATTAIN_STORE(r)                                                                    \
  if constexpr (MR > r) {                                                                  \
    _mm512_storeu_ps(st + r * mpad, _mm512_mul_ps(c##r##0, s));                            \
    if constexpr (NV > 1) _mm512_storeu_ps(st + r * mpad + 16, _mm512_mul_ps(c##r##1, s)); \
  }
  ATTAIN_ROWS(ATTAIN_STORE)
#undef ATTAIN_STORE
}

template <int NV>
void qk16_panel(const std::uint32_t* k32, int nt, const std::uint32_t* q2, int mpad, float scale,
                float* st, Prefetch& pf) {
  int t = 0;
  for (; t + 8 <= nt; t += 8) qk16_tile<8, NV>(k32 + t * kDk2, q2, mpad, scale, st + t * mpad, pf);
  const std::uint32_t* k = k32 + t * kDk2;
  float* s = st + t * mpad;
  with_count<7>(nt - t, [&](auto r) { qk16_tile<r, NV>(k, q2, mpad, scale, s, pf); });
}

void qk16(const std::uint16_t* kb, int nt, const std::uint32_t* q2, int mpad, float scale,
          float* st, const void* pf, int pf_lines) {
  Prefetch ahead(pf, pf_lines);
  // A cache row of 576 bf16 is 288 aligned 32-bit words (rows are 1152 bytes apart).
  const auto* k32 = reinterpret_cast<const std::uint32_t*>(kb);
  int m = 0;
  for (; m + 32 <= mpad; m += 32) qk16_panel<2>(k32, nt, q2 + m, mpad, scale, st + m, ahead);
  if (m < mpad) qk16_panel<1>(k32, nt, q2 + m, mpad, scale, st + m, ahead);
}

void pack16(const float* st, int nt, int mpad, const std::uint16_t* kb, std::uint32_t* p2,
            std::uint32_t* v2) {
  // (a_i, b_i) word pairs from 32 bf16 [a_0..a_15, b_0..b_15] (P) or from two rows (V).
  const __m512i pair = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24,
                                        8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8,
                                      39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
  const __m512 zero = _mm512_setzero_ps();
  for (int t = 0; t < nt; t += 2) {
    const bool odd = t + 1 == nt;  // the pad token: P = 0, V = 0
    const float* a = st + t * mpad;
    const float* b = st + (t + 1) * mpad;
    std::uint32_t* pd = p2 + (t / 2) * mpad;
    for (int m = 0; m < mpad; m += 16) {
      const __m512 x = _mm512_loadu_ps(a + m), y = odd ? zero : _mm512_loadu_ps(b + m);
      const __m512i h = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(y, x));  // x low, y high
      _mm512_storeu_si512(pd + m, _mm512_permutexvar_epi16(pair, h));
    }
    const std::uint16_t* r0 = kb + t * kDk;
    const std::uint16_t* r1 = kb + (t + 1) * kDk;
    std::uint32_t* vd = v2 + (t / 2) * kDv;
    for (int d = 0; d < kDv; d += 32) {
      const __m512i x = _mm512_loadu_si512(r0 + d);
      const __m512i y = odd ? _mm512_setzero_si512() : _mm512_loadu_si512(r1 + d);
      _mm512_storeu_si512(vd + d, _mm512_permutex2var_epi16(x, lo, y));
      _mm512_storeu_si512(vd + d + 16, _mm512_permutex2var_epi16(x, hi, y));
    }
  }
}

void fp8_to_bf16(const std::byte* src, int rows, std::uint16_t* dst) {
  // e4m3 -> fp32 as the GEMM kernels do it: the byte sign-extended and shifted left by 20,
  // masked, is the fp32 pattern of value * 2^-120; times 2^120 (exact), then times the scale
  // (rounded once, as e4m3_to_f32(x) * scale), then to bf16 (rounded once more).
  const __m512i mask = _mm512_set1_epi32(static_cast<int>(0x87F00000u));
  const __m512i mag = _mm512_set1_epi32(0x7f);
  const __m512 nan = _mm512_set1_ps(__builtin_nanf(""));
  for (int r = 0; r < rows; ++r) {
    const std::byte* row = src + r * 656;
    float scales[4];
    std::memcpy(scales, row + kDv, sizeof scales);
    std::uint16_t* out = dst + r * kDk;
    for (int g = 0; g < 4; ++g) {
      // (v * 2^120) * scale in one multiply by 2^120 * scale where that is finite: v * 2^120 is
      // exact, so both round the same exact product once.
      const float s = scales[g];
      const bool one = std::fabs(s) < 0x1p7f;
      const __m512 s1 = _mm512_set1_ps(one ? s * 0x1p120f : 0x1p120f);
      const __m512 s2 = _mm512_set1_ps(s);
      for (int i = g * 128; i < (g + 1) * 128; i += 16) {
        const __m512i b =
            _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i)));
        __m512 v = _mm512_mul_ps(
            _mm512_castsi512_ps(_mm512_and_si512(_mm512_slli_epi32(b, 20), mask)), s1);
        if (!one) v = _mm512_mul_ps(v, s2);
        const __mmask16 is_nan = _mm512_cmpeq_epi32_mask(_mm512_and_si512(b, mag), mag);
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(out + i),
            reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_mask_mov_ps(v, is_nan, nan))));
      }
    }
    std::memcpy(out + kDv, row + kDv + sizeof scales, kRope * sizeof(std::uint16_t));
  }
}

template <int MR>
inline void pv16_tile(const std::uint32_t* p, int nt2, int mpad, const std::uint32_t* v,
                      const float* alpha, float* o) {
#define ATTAIN_LOAD(r)                                                 \
  __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps(); \
  if constexpr (MR > r) {                                              \
    const __m512 a = _mm512_set1_ps(alpha[r]);                         \
    c##r##0 = _mm512_mul_ps(_mm512_loadu_ps(o + r * kDv), a);          \
    c##r##1 = _mm512_mul_ps(_mm512_loadu_ps(o + r * kDv + 16), a);     \
  }
  ATTAIN_ROWS(ATTAIN_LOAD)
#undef ATTAIN_LOAD
  for (int t2 = 0; t2 < nt2; ++t2, v += kDv, p += mpad) {
    const __m512bh v0 = as_bh(_mm512_loadu_si512(v)), v1 = as_bh(_mm512_loadu_si512(v + 16));
#define ATTAIN_DOT(r)                                                    \
  if constexpr (MR > r) {                                                \
    const __m512bh a = as_bh(_mm512_set1_epi32(static_cast<int>(p[r]))); \
    c##r##0 = _mm512_dpbf16_ps(c##r##0, a, v0);                          \
    c##r##1 = _mm512_dpbf16_ps(c##r##1, a, v1);                          \
  }
    ATTAIN_ROWS(ATTAIN_DOT)
#undef ATTAIN_DOT
  }
#define ATTAIN_STORE(r)                          \
  if constexpr (MR > r) {                        \
    _mm512_storeu_ps(o + r * kDv, c##r##0);      \
    _mm512_storeu_ps(o + r * kDv + 16, c##r##1); \
  }
  ATTAIN_ROWS(ATTAIN_STORE)
#undef ATTAIN_STORE
}
#undef ATTAIN_ROWS

void pv16(const std::uint32_t* p2, int ntp, int mpad, const std::uint32_t* v2, int rows,
          const float* alpha, float* o) {
  const int nt2 = ntp / 2;
  for (int d = 0; d < kDv; d += 32) {
    int m = 0;
    for (; m + 8 <= rows; m += 8)
      pv16_tile<8>(p2 + m, nt2, mpad, v2 + d, alpha + m, o + m * kDv + d);
    const std::uint32_t* p = p2 + m;
    float* od = o + m * kDv + d;
    with_count<7>(rows - m, [&](auto r) { pv16_tile<r>(p, nt2, mpad, v2 + d, alpha + m, od); });
  }
}

}  // namespace

const Ukernels* avx512bf16_ukernels() {
  static const Ukernels* table = []() -> const Ukernels* {
    const Ukernels* a5 = avx512_ukernels();
    if (a5 == nullptr || !cpu_features().avx512_bf16) return nullptr;
    static Ukernels k = *a5;
    k.isa = "avx512_bf16";
    k.qk16 = qk16;
    k.pack16 = pack16;
    k.fp8_to_bf16 = fp8_to_bf16;
    k.pv16 = pv16;
    return &k;
  }();
  return table;
}

}  // namespace attain::mla

#else
namespace attain::mla {
const Ukernels* avx512bf16_ukernels() {
  return nullptr;
}
}  // namespace attain::mla
#endif
