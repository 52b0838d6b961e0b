// AVX2 + FMA probe loops (this file is compiled with -mavx2 -mfma).
#include <immintrin.h>

#include "device/probe_kernels.hpp"
#include "device/probe_read.hpp"

namespace attain::probe {

namespace {

float fma_avx2(std::int64_t iters) {
  // Each chain starts at a different value, so the compiler cannot prove two chains equal
  // and merge them; m < 1 keeps every value bounded and normal.
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-6f);
  __m256 c0 = _mm256_set1_ps(1.00f), c1 = _mm256_set1_ps(1.01f), c2 = _mm256_set1_ps(1.02f),
         c3 = _mm256_set1_ps(1.03f), c4 = _mm256_set1_ps(1.04f), c5 = _mm256_set1_ps(1.05f),
         c6 = _mm256_set1_ps(1.06f), c7 = _mm256_set1_ps(1.07f), c8 = _mm256_set1_ps(1.08f),
         c9 = _mm256_set1_ps(1.09f), c10 = _mm256_set1_ps(1.10f), c11 = _mm256_set1_ps(1.11f);
  for (std::int64_t i = 0; i < iters; ++i) {
    c0 = _mm256_fmadd_ps(c0, m, a), c1 = _mm256_fmadd_ps(c1, m, a);
    c2 = _mm256_fmadd_ps(c2, m, a), c3 = _mm256_fmadd_ps(c3, m, a);
    c4 = _mm256_fmadd_ps(c4, m, a), c5 = _mm256_fmadd_ps(c5, m, a);
    c6 = _mm256_fmadd_ps(c6, m, a), c7 = _mm256_fmadd_ps(c7, m, a);
    c8 = _mm256_fmadd_ps(c8, m, a), c9 = _mm256_fmadd_ps(c9, m, a);
    c10 = _mm256_fmadd_ps(c10, m, a), c11 = _mm256_fmadd_ps(c11, m, a);
  }
  const __m256 s =
      _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                                  _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7))),
                    _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

// 8 fp32 lanes (the read loops of probe_read.hpp).
struct Ymm {
  using reg = __m256;
  static constexpr std::size_t lanes = 8;
  static reg zero() { return _mm256_setzero_ps(); }
  static reg load(const float* p) { return _mm256_load_ps(p); }
  static reg load_nt(const float* p) {
    return _mm256_castsi256_ps(_mm256_stream_load_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static float sum(reg s) {
    alignas(32) float out[8];
    _mm256_store_ps(out, s);
    return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
  }
};

void copy_avx2(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 32) {
    const __m256 x0 = _mm256_load_ps(src + i), x1 = _mm256_load_ps(src + i + 8);
    const __m256 x2 = _mm256_load_ps(src + i + 16), x3 = _mm256_load_ps(src + i + 24);
    _mm256_store_ps(dst + i, x0), _mm256_store_ps(dst + i + 8, x1);
    _mm256_store_ps(dst + i + 16, x2), _mm256_store_ps(dst + i + 24, x3);
  }
}

}  // namespace

Kernels kernels_avx2() {
  Kernels k{};
  k.isa = "avx2", k.lanes = 8, k.fma = fma_avx2, k.copy = copy_avx2;
  return read_loops::with_reads<Ymm>(k);
}

}  // namespace attain::probe
