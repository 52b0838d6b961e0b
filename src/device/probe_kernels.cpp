// Baseline probe loops: SSE2 on x86-64 (every x86-64 CPU has it; no FMA, so a multiply and
// an add per step), portable C++ elsewhere.
#include "device/probe_kernels.hpp"
#include "device/probe_read.hpp"

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

// 4 fp32 lanes; SSE2 has no non-temporal load, so its "nt" loop loads as "plain" does.
struct Xmm {
  using reg = __m128;
  static constexpr std::size_t lanes = 4;
  static reg zero() { return _mm_setzero_ps(); }
  static reg load(const float* p) { return _mm_load_ps(p); }
  static reg load_nt(const float* p) { return _mm_load_ps(p); }
  static reg add(reg a, reg b) { return _mm_add_ps(a, b); }
  static float sum(reg s) {
    alignas(16) float out[4];
    _mm_store_ps(out, s);
    return out[0] + out[1] + out[2] + out[3];
  }
};

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

// One float per lane, 8 lanes (portable code: the compiler vectorizes what it can).
struct Scalar8 {
  struct reg {
    float v[8];
  };
  static constexpr std::size_t lanes = 8;
  static reg zero() { return {}; }
  static reg load(const float* p) {
    reg r;
    for (int j = 0; j < 8; ++j) r.v[j] = p[j];
    return r;
  }
  static reg load_nt(const float* p) { return load(p); }
  static reg add(reg a, const reg& b) {
    for (int j = 0; j < 8; ++j) a.v[j] += b.v[j];
    return a;
  }
  static float sum(const reg& s) {
    float t = 0;
    for (float x : s.v) t += x;
    return t;
  }
};

void copy_sse2(float* dst, const float* src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
}
#endif

}  // namespace

const ReadKernel* find_read(const Kernels& k, std::string_view name) {
  for (const ReadKernel& r : k.reads)
    if (r.name != nullptr && name == r.name) return &r;
  return nullptr;
}

Kernels kernels_sse2() {
  Kernels k{};
#if defined(__x86_64__)
  k.isa = "sse2", k.lanes = 4, k.fma = fma_sse2, k.copy = copy_sse2;
  return read_loops::with_reads<Xmm>(k);
#else
  k.isa = "scalar", k.lanes = 1, k.fma = fma_sse2, k.copy = copy_sse2;
  return read_loops::with_reads<Scalar8>(k);
#endif
}

}  // namespace attain::probe
