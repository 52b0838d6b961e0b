// AVX-512 FMA and read loops (this file is compiled with -mavx512f ...). The read loops load
// whole 64-byte lines per instruction; the copy stays AVX2's.
#include <immintrin.h>

#include "device/probe_kernels.hpp"
#include "device/probe_read.hpp"

namespace attain::probe {

namespace {

float fma_avx512(std::int64_t iters) {
  // Different starting values per chain (see the AVX2 loop).
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-6f);
  __m512 c0 = _mm512_set1_ps(1.00f), c1 = _mm512_set1_ps(1.01f), c2 = _mm512_set1_ps(1.02f),
         c3 = _mm512_set1_ps(1.03f), c4 = _mm512_set1_ps(1.04f), c5 = _mm512_set1_ps(1.05f),
         c6 = _mm512_set1_ps(1.06f), c7 = _mm512_set1_ps(1.07f), c8 = _mm512_set1_ps(1.08f),
         c9 = _mm512_set1_ps(1.09f), c10 = _mm512_set1_ps(1.10f), c11 = _mm512_set1_ps(1.11f);
  for (std::int64_t i = 0; i < iters; ++i) {
    c0 = _mm512_fmadd_ps(c0, m, a), c1 = _mm512_fmadd_ps(c1, m, a);
    c2 = _mm512_fmadd_ps(c2, m, a), c3 = _mm512_fmadd_ps(c3, m, a);
    c4 = _mm512_fmadd_ps(c4, m, a), c5 = _mm512_fmadd_ps(c5, m, a);
    c6 = _mm512_fmadd_ps(c6, m, a), c7 = _mm512_fmadd_ps(c7, m, a);
    c8 = _mm512_fmadd_ps(c8, m, a), c9 = _mm512_fmadd_ps(c9, m, a);
    c10 = _mm512_fmadd_ps(c10, m, a), c11 = _mm512_fmadd_ps(c11, m, a);
  }
  const __m512 s =
      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                                  _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7))),
                    _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
  alignas(64) float out[16];  // (GCC 12's _mm512_reduce_add_ps trips -Wuninitialized)
  _mm512_store_ps(out, s);
  float sum = 0;
  for (float x : out) sum += x;
  return sum;
}

// 16 fp32 lanes (the read loops of probe_read.hpp).
struct Zmm {
  using reg = __m512;
  static constexpr std::size_t lanes = 16;
  static reg zero() { return _mm512_setzero_ps(); }
  static reg load(const float* p) { return _mm512_load_ps(p); }
  static reg load_nt(const float* p) {
    return _mm512_castsi512_ps(_mm512_stream_load_si512(const_cast<float*>(p)));
  }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static float sum(reg s) {
    alignas(64) float out[16];
    _mm512_store_ps(out, s);
    float t = 0;
    for (float x : out) t += x;
    return t;
  }
};

}  // namespace

Kernels kernels_avx512() {
  Kernels k = kernels_avx2();
  k.isa = "avx512f";
  k.lanes = 16;
  k.fma = fma_avx512;
  return read_loops::with_reads<Zmm>(k);
}

}  // namespace attain::probe
