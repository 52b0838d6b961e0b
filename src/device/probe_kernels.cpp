// Baseline probe loops: SSE2 on x86-64 (every x86-64 CPU has it; no FMA, so a multiply and
// an add per step), portable C++ elsewhere.
#include "device/probe_kernels.hpp"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace attain::probe {

namespace {

#if defined(__x86_64__)
float fma_sse2(std::int64_t iters) {
  const __m128 m = _mm_set1_ps(0.999999f), a = _mm_set1_ps(1e-6f);
  __m128 c[kFmaChains];
  for (int j = 0; j < kFmaChains; ++j) c[j] = _mm_set1_ps(1.0f + 0.01f * static_cast<float>(j));
  for (std::int64_t i = 0; i < iters; ++i)
    for (int j = 0; j < kFmaChains; ++j) c[j] = _mm_add_ps(_mm_mul_ps(c[j], m), a);
  __m128 s = c[0];
  for (int j = 1; j < kFmaChains; ++j) s = _mm_add_ps(s, c[j]);
  alignas(16) float out[4];
  _mm_store_ps(out, s);
  return out[0] + out[1] + out[2] + out[3];
}

float read_sse2(const float* p, std::size_t n) {
  __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (std::size_t i = 0; i < n; i += 16) {
    s0 = _mm_add_ps(s0, _mm_load_ps(p + i));
    s1 = _mm_add_ps(s1, _mm_load_ps(p + i + 4));
    s2 = _mm_add_ps(s2, _mm_load_ps(p + i + 8));
    s3 = _mm_add_ps(s3, _mm_load_ps(p + i + 12));
  }
  alignas(16) float out[4];
  _mm_store_ps(out, _mm_add_ps(_mm_add_ps(s0, s1), _mm_add_ps(s2, s3)));
  return out[0] + out[1] + out[2] + out[3];
}

void copy_sse2(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16) {
    const __m128 x0 = _mm_load_ps(src + i), x1 = _mm_load_ps(src + i + 4);
    const __m128 x2 = _mm_load_ps(src + i + 8), x3 = _mm_load_ps(src + i + 12);
    _mm_store_ps(dst + i, x0), _mm_store_ps(dst + i + 4, x1);
    _mm_store_ps(dst + i + 8, x2), _mm_store_ps(dst + i + 12, x3);
  }
}
#else
float fma_sse2(std::int64_t iters) {
  float c[kFmaChains];
  for (int j = 0; j < kFmaChains; ++j) c[j] = 1.0f + 0.01f * static_cast<float>(j);
  for (std::int64_t i = 0; i < iters; ++i)
    for (auto& x : c) x = x * 0.999999f + 1e-6f;
  float s = 0;
  for (float x : c) s += x;
  return s;
}

float read_sse2(const float* p, std::size_t n) {
  float s[8] = {};
  for (std::size_t i = 0; i < n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += p[i + j];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

void copy_sse2(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
}
#endif

}  // namespace

Kernels kernels_sse2() {
#if defined(__x86_64__)
  return {"sse2", 4, fma_sse2, read_sse2, copy_sse2};
#else
  return {"scalar", 1, fma_sse2, read_sse2, copy_sse2};
#endif
}

}  // namespace attain::probe
