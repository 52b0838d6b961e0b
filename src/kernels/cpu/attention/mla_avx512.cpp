// AVX-512 micro-kernels of the MLA decode kernel (compiled with -mavx512f/bw/vl/dq; handed
// out only when the CPU has them). The two products get 512-bit register tiles; conversion
// and softmax, a small share of the work, are the AVX2 ones.
//
// qk: 8 tokens x 32 query rows (16 accumulators): per k, two loads of qt and eight
//     broadcasts of kf feed 16 FMAs; a full 64-token block has no token edge.
// pv: 8 query rows x 32 output columns: per token, two loads of V and eight broadcasts of P.
#include "attain/cpu_features.hpp"
#include "kernels/cpu/attention/mla_ukernels.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace attain::mla {

namespace {

// Accumulators are named variables (not arrays): GCC keeps arrays of vectors on the stack.
#define ATTAIN_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

template <int MR, int NV>
inline void qk_tile(const float* kf, const float* qt, int mpad, float* st, Prefetch& pf) {
#define ATTAIN_DECL(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps();
  ATTAIN_ROWS(ATTAIN_DECL)
#undef ATTAIN_DECL
  const float* q = qt;
  for (int kk = 0; kk < kDk; ++kk, q += mpad) {
    if (kk % 2 == 0) pf.next();
    const __m512 b0 = _mm512_loadu_ps(q);
    const __m512 b1 = NV > 1 ? _mm512_loadu_ps(q + 16) : b0;
#define ATTAIN_FMA(r)                                                \
  if constexpr (MR > r) {                                            \
    const __m512 a = _mm512_set1_ps(kf[r * kDk + kk]);               \
    c##r##0 = _mm512_fmadd_ps(a, b0, c##r##0);                       \
    if constexpr (NV > 1) c##r##1 = _mm512_fmadd_ps(a, b1, c##r##1); \
  }
    ATTAIN_ROWS(ATTAIN_FMA)
#undef ATTAIN_FMA
  }
#define ATTAIN_STORE(r)                                                  \
  if constexpr (MR > r) {                                                \
    _mm512_storeu_ps(st + r * mpad, c##r##0);                            \
    if constexpr (NV > 1) _mm512_storeu_ps(st + r * mpad + 16, c##r##1); \
  }
  ATTAIN_ROWS(ATTAIN_STORE)
#undef ATTAIN_STORE
}

template <int NV>
void qk_panel(const float* kf, int nt, const float* qt, int mpad, float* st, Prefetch& pf) {
  int t = 0;
  for (; t + 8 <= nt; t += 8) qk_tile<8, NV>(kf + t * kDk, qt, mpad, st + t * mpad, pf);
  const float* k = kf + t * kDk;
  float* s = st + t * mpad;
  with_count<7>(nt - t, [&](auto r) { qk_tile<r, NV>(k, qt, mpad, s, pf); });
}

void qk(const float* kf, int nt, const float* qt, int mpad, float* st, const void* pf,
        int pf_lines) {
  Prefetch ahead(pf, pf_lines);
  int m = 0;
  for (; m + 32 <= mpad; m += 32) qk_panel<2>(kf, nt, qt + m, mpad, st + m, ahead);
  if (m < mpad) qk_panel<1>(kf, nt, qt + m, mpad, st + m, ahead);
}

template <int MR>
inline void pv_tile(const float* p, int nt, int mpad, const float* v, const float* alpha,
                    float* o) {
#define ATTAIN_LOAD(r)                                                 \
  __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps(); \
  if constexpr (MR > r) {                                              \
    const __m512 a = _mm512_set1_ps(alpha[r]);                         \
    c##r##0 = _mm512_mul_ps(_mm512_loadu_ps(o + r * kDv), a);          \
    c##r##1 = _mm512_mul_ps(_mm512_loadu_ps(o + r * kDv + 16), a);     \
  }
  ATTAIN_ROWS(ATTAIN_LOAD)
#undef ATTAIN_LOAD
  for (int t = 0; t < nt; ++t, v += kDk, p += mpad) {
    const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
#define ATTAIN_FMA(r)                          \
  if constexpr (MR > r) {                      \
    const __m512 a = _mm512_set1_ps(p[r]);     \
    c##r##0 = _mm512_fmadd_ps(a, v0, c##r##0); \
    c##r##1 = _mm512_fmadd_ps(a, v1, c##r##1); \
  }
    ATTAIN_ROWS(ATTAIN_FMA)
#undef ATTAIN_FMA
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

void pv(const float* st, int nt, int mpad, const float* kf, int rows, const float* alpha,
        float* o) {
  for (int d = 0; d < kDv; d += 32) {
    int m = 0;
    for (; m + 8 <= rows; m += 8) pv_tile<8>(st + m, nt, mpad, kf + d, alpha + m, o + m * kDv + d);
    const float* p = st + m;
    float* od = o + m * kDv + d;
    with_count<7>(rows - m, [&](auto r) { pv_tile<r>(p, nt, mpad, kf + d, alpha + m, od); });
  }
}

float dot(const float* a, const float* b, int n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
  }
  for (; i + 16 <= n; i += 16)
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
  if (i < n) {
    const __mmask16 k = 0xff;  // n is a multiple of 8
    acc1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i), acc1);
  }
  // (GCC 12's _mm512_reduce_add_ps trips -Wuninitialized in its own header.)
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(acc0, acc1));
  float sum = 0;
  for (const float x : lanes) sum += x;
  return sum;
}

void axpy(float a, const float* x, float* y, int n) {
  const __m512 va = _mm512_set1_ps(a);
  int i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 k = 0xff;
    _mm512_mask_storeu_ps(
        y + i, k,
        _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, y + i)));
  }
}

}  // namespace

const Ukernels* avx512_ukernels() {
  static const Ukernels* table = []() -> const Ukernels* {
    const Ukernels* a2 = avx2_ukernels();
    if (a2 == nullptr || isa_level(cpu_features()) < IsaLevel::avx512) return nullptr;
    static const Ukernels k{"avx512", 16, a2->convert, qk, a2->softmax, pv, dot, axpy, a2->exp_sum};
    return &k;
  }();
  return table;
}

}  // namespace attain::mla

#else
namespace attain::mla {
const Ukernels* avx512_ukernels() {
  return nullptr;
}
}  // namespace attain::mla
#endif
