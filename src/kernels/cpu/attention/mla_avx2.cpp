// AVX2 + FMA micro-kernels of the MLA decode kernel (this file is compiled with -mavx2 -mfma
// -mf16c; best_ukernels() only hands it out when the CPU has them).
//
// qk: register tile of 6 tokens x 16 query rows (12 accumulators): per k, two loads of qt
//     and six broadcasts of kf feed 12 FMAs.
// pv: register tile of 6 query rows x 16 output columns: per token, two loads of V and six
//     broadcasts of P feed 12 FMAs; the running output is rescaled by alpha on load.
#include "attain/device.hpp"
#include "kernels/cpu/attention/mla_ukernels.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace attain::mla {

namespace {

// exp(x) for x <= 88.3, relative error ~2 ulp (Cephes polynomial); x below -87.3 gives ~0.
inline __m256 exp256(__m256 x) {
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f));
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3365478515625f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 8 e4m3 bytes -> fp32, exact: the e4m3 bits placed in an fp32's exponent/mantissa field
// give value * 2^-120 (subnormals included), so one exact multiply by 2^120 restores it.
// 0x7f / 0xff are NaN as in e4m3_to_f32.
inline __m256 e4m3x8(const std::uint8_t* p) {
  std::int64_t raw;
  std::memcpy(&raw, p, sizeof raw);
  const __m256i v = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(raw));
  const __m256i mag = _mm256_and_si256(v, _mm256_set1_epi32(0x7f));
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x80)), 24);
  const __m256 f =
      _mm256_mul_ps(_mm256_castsi256_ps(_mm256_or_si256(_mm256_slli_epi32(mag, 20), sign)),
                    _mm256_set1_ps(1.329227995784916e36f));  // 2^120
  const __m256 nan_mask = _mm256_castsi256_ps(_mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7f)));
  return _mm256_blendv_ps(f, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), nan_mask);
}

void convert(DType dt, const void* src, int n, float scale, float* dst) {
  switch (dt) {
    case DType::f32:
      std::memcpy(dst, src, sizeof(float) * static_cast<std::size_t>(n));
      break;
    case DType::bf16: {
      const auto* p = static_cast<const std::uint16_t*>(src);
      for (int i = 0; i < n; i += 8) {
        const __m256i w =
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
      }
      break;
    }
    case DType::fp8: {
      const auto* p = static_cast<const std::uint8_t*>(src);
      const __m256 s = _mm256_set1_ps(scale);
      for (int i = 0; i < n; i += 8) _mm256_storeu_ps(dst + i, _mm256_mul_ps(e4m3x8(p + i), s));
      break;
    }
    default:
      break;
  }
}

// Accumulators are named variables (not arrays): GCC keeps arrays of __m256 on the stack.
#define ATTAIN_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

template <int MR, int NV>
inline void qk_tile(const float* kf, const float* qt, int mpad, float* st, Prefetch& pf) {
#define ATTAIN_DECL(r) __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = _mm256_setzero_ps();
  ATTAIN_ROWS(ATTAIN_DECL)
#undef ATTAIN_DECL
  const float* q = qt;
  for (int kk = 0; kk < kDk; ++kk, q += mpad) {
    if (kk % 2 == 0) pf.next();
    const __m256 b0 = _mm256_loadu_ps(q);
    const __m256 b1 = NV > 1 ? _mm256_loadu_ps(q + 8) : b0;
#define ATTAIN_FMA(r)                                                \
  if constexpr (MR > r) {                                            \
    const __m256 a = _mm256_broadcast_ss(kf + r * kDk + kk);         \
    c##r##0 = _mm256_fmadd_ps(a, b0, c##r##0);                       \
    if constexpr (NV > 1) c##r##1 = _mm256_fmadd_ps(a, b1, c##r##1); \
  }
    ATTAIN_ROWS(ATTAIN_FMA)
#undef ATTAIN_FMA
  }
#define ATTAIN_STORE(r)                                                 \
  if constexpr (MR > r) {                                               \
    _mm256_storeu_ps(st + r * mpad, c##r##0);                           \
    if constexpr (NV > 1) _mm256_storeu_ps(st + r * mpad + 8, c##r##1); \
  }
  ATTAIN_ROWS(ATTAIN_STORE)
#undef ATTAIN_STORE
}

template <int NV>
void qk_panel(const float* kf, int nt, const float* qt, int mpad, float* st, Prefetch& pf) {
  int t = 0;
  for (; t + 6 <= nt; t += 6) qk_tile<6, NV>(kf + t * kDk, qt, mpad, st + t * mpad, pf);
  const float* k = kf + t * kDk;
  float* s = st + t * mpad;
  with_count<5>(nt - t, [&](auto r) { qk_tile<r, NV>(k, qt, mpad, s, pf); });
}

void qk(const float* kf, int nt, const float* qt, int mpad, float* st, const void* pf,
        int pf_lines) {
  Prefetch ahead(pf, pf_lines);
  int m = 0;
  for (; m + 16 <= mpad; m += 16) qk_panel<2>(kf, nt, qt + m, mpad, st + m, ahead);
  if (m < mpad) qk_panel<1>(kf, nt, qt + m, mpad, st + m, ahead);
}

void softmax(float* st, int nt, int mpad, const std::int32_t* vis, float* mx, float* l,
             float* alpha) {
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (int m = 0; m < mpad; m += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(vis + m));
    __m256 bmax = ninf;
    for (int t = 0; t < nt; ++t) {
      const __m256 on = _mm256_castsi256_ps(_mm256_cmpgt_epi32(v, _mm256_set1_epi32(t)));
      bmax = _mm256_max_ps(bmax, _mm256_blendv_ps(ninf, _mm256_loadu_ps(st + t * mpad + m), on));
    }
    const __m256 mold = _mm256_loadu_ps(mx + m);
    const __m256 mnew = _mm256_max_ps(mold, bmax);
    const __m256 muse =
        _mm256_blendv_ps(mnew, _mm256_setzero_ps(), _mm256_cmp_ps(mnew, ninf, _CMP_EQ_OQ));
    // exp(-inf - muse) is clamped to ~1e-38 by exp256: the running sums it scales are 0 then.
    const __m256 a = exp256(_mm256_sub_ps(mold, muse));
    __m256 sum = _mm256_setzero_ps();
    for (int t = 0; t < nt; ++t) {
      const __m256 on = _mm256_castsi256_ps(_mm256_cmpgt_epi32(v, _mm256_set1_epi32(t)));
      float* s = st + t * mpad + m;
      const __m256 p = _mm256_and_ps(exp256(_mm256_sub_ps(_mm256_loadu_ps(s), muse)), on);
      _mm256_storeu_ps(s, p);
      sum = _mm256_add_ps(sum, p);
    }
    _mm256_storeu_ps(alpha + m, a);
    _mm256_storeu_ps(l + m, _mm256_fmadd_ps(_mm256_loadu_ps(l + m), a, sum));
    _mm256_storeu_ps(mx + m, mnew);
  }
}

template <int MR>
inline void pv_tile(const float* p, int nt, int mpad, const float* v, const float* alpha,
                    float* o) {
#define ATTAIN_LOAD(r)                                                 \
  __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = _mm256_setzero_ps(); \
  if constexpr (MR > r) {                                              \
    const __m256 a = _mm256_broadcast_ss(alpha + r);                   \
    c##r##0 = _mm256_mul_ps(_mm256_loadu_ps(o + r * kDv), a);          \
    c##r##1 = _mm256_mul_ps(_mm256_loadu_ps(o + r * kDv + 8), a);      \
  }
  ATTAIN_ROWS(ATTAIN_LOAD)
#undef ATTAIN_LOAD
  for (int t = 0; t < nt; ++t, v += kDk, p += mpad) {
    const __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8);
#define ATTAIN_FMA(r)                            \
  if constexpr (MR > r) {                        \
    const __m256 a = _mm256_broadcast_ss(p + r); \
    c##r##0 = _mm256_fmadd_ps(a, v0, c##r##0);   \
    c##r##1 = _mm256_fmadd_ps(a, v1, c##r##1);   \
  }
    ATTAIN_ROWS(ATTAIN_FMA)
#undef ATTAIN_FMA
  }
#define ATTAIN_STORE(r)                         \
  if constexpr (MR > r) {                       \
    _mm256_storeu_ps(o + r * kDv, c##r##0);     \
    _mm256_storeu_ps(o + r * kDv + 8, c##r##1); \
  }
  ATTAIN_ROWS(ATTAIN_STORE)
#undef ATTAIN_STORE
}
#undef ATTAIN_ROWS

void pv(const float* st, int nt, int mpad, const float* kf, int rows, const float* alpha,
        float* o) {
  for (int d = 0; d < kDv; d += 16) {
    int m = 0;
    for (; m + 6 <= rows; m += 6) pv_tile<6>(st + m, nt, mpad, kf + d, alpha + m, o + m * kDv + d);
    const float* p = st + m;
    float* od = o + m * kDv + d;
    with_count<5>(rows - m, [&](auto r) { pv_tile<r>(p, nt, mpad, kf + d, alpha + m, od); });
  }
}

float dot(const float* a, const float* b, int n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  if (i < n) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  return hsum(_mm256_add_ps(acc0, acc1));
}

void axpy(float a, const float* x, float* y, int n) {
  const __m256 va = _mm256_set1_ps(a);
  for (int i = 0; i < n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
}

float exp_sum(float* x, int n, float shift) {
  const __m256 s = _mm256_set1_ps(shift);
  __m256 acc = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(x + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum(acc);
  for (; i < n; ++i) sum += (x[i] = std::exp(x[i] - shift));
  return sum;
}

}  // namespace

const Ukernels* avx2_ukernels() {
  static const Ukernels k{"avx2", 8, convert, qk, softmax, pv, dot, axpy, exp_sum};
  return isa_level(cpu_features()) >= IsaLevel::avx2 ? &k : nullptr;
}

}  // namespace attain::mla

#else
namespace attain::mla {
const Ukernels* avx2_ukernels() {
  return nullptr;
}
}  // namespace attain::mla
#endif
