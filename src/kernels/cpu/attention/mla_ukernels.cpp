// Portable micro-kernels (the fallback) and the run-time choice of a table.
#include "kernels/cpu/attention/mla_ukernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "attain/gemm.hpp"
#include "attain/op.hpp"

namespace attain::mla {

namespace {

void convert(DType dt, const void* src, int n, float scale, float* dst) {
  switch (dt) {
    case DType::f32:
      std::memcpy(dst, src, sizeof(float) * static_cast<std::size_t>(n));
      break;
    case DType::bf16: {
      const auto* p = static_cast<const std::uint16_t*>(src);
      for (int i = 0; i < n; ++i) dst[i] = bf16_to_f32(p[i]);
      break;
    }
    case DType::fp8: {
      const auto* p = static_cast<const std::uint8_t*>(src);
      const float* tab = e4m3_table();
      for (int i = 0; i < n; ++i) dst[i] = tab[p[i]] * scale;
      break;
    }
    default:
      break;
  }
}

void qk(const float* kf, int nt, const float* qt, int mpad, float* st, const void* pf,
        int pf_lines) {
  const char* line = static_cast<const char*>(pf);
  for (int i = 0; i < pf_lines; ++i) __builtin_prefetch(line + 64 * i);
  for (int t = 0; t < nt; ++t) {
    float* row = st + static_cast<std::ptrdiff_t>(t) * mpad;
    std::fill(row, row + mpad, 0.0f);
    const float* k = kf + static_cast<std::ptrdiff_t>(t) * kDk;
    for (int kk = 0; kk < kDk; ++kk) {
      const float a = k[kk];
      const float* q = qt + static_cast<std::ptrdiff_t>(kk) * mpad;
      for (int m = 0; m < mpad; ++m) row[m] += a * q[m];
    }
  }
}

void softmax(float* st, int nt, int mpad, const std::int32_t* vis, float* mx, float* l,
             float* alpha) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (int m = 0; m < mpad; ++m) {
    const int v = std::min(vis[m], nt);
    float bmax = -kInf;
    for (int t = 0; t < v; ++t) bmax = std::max(bmax, st[t * mpad + m]);
    const float mnew = std::max(mx[m], bmax);
    const float muse = mnew == -kInf ? 0.0f : mnew;
    alpha[m] = std::exp(mx[m] - muse);
    float sum = 0;
    for (int t = 0; t < nt; ++t) {
      float& s = st[t * mpad + m];
      s = t < v ? std::exp(s - muse) : 0.0f;
      sum += s;
    }
    l[m] = l[m] * alpha[m] + sum;
    mx[m] = mnew;
  }
}

void pv(const float* st, int nt, int mpad, const float* kf, int rows, const float* alpha,
        float* o) {
  for (int m = 0; m < rows; ++m) {
    float* orow = o + static_cast<std::ptrdiff_t>(m) * kDv;
    for (int d = 0; d < kDv; ++d) orow[d] *= alpha[m];
    for (int t = 0; t < nt; ++t) {
      const float p = st[t * mpad + m];
      const float* v = kf + static_cast<std::ptrdiff_t>(t) * kDk;
      for (int d = 0; d < kDv; ++d) orow[d] += p * v[d];
    }
  }
}

float dot(const float* a, const float* b, int n) {
  float acc[8] = {};
  for (int i = 0; i < n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void axpy(float a, const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

float exp_sum(float* x, int n, float shift) {
  float sum = 0;
  for (int i = 0; i < n; ++i) sum += (x[i] = std::exp(x[i] - shift));
  return sum;
}

}  // namespace

const Ukernels& scalar_ukernels() {
  static const Ukernels k{"scalar", 8, convert, qk, softmax, pv, dot, axpy, exp_sum};
  return k;
}

const Ukernels& best_ukernels() {
  // ATTAIN_ISA caps every kernel family (core/cpu_features): each table checks its level there.
  static const Ukernels* best = [] {
    if (const Ukernels* a = avx512bf16_ukernels()) return a;
    if (const Ukernels* a = avx512_ukernels()) return a;
    if (const Ukernels* a = avx2_ukernels()) return a;
    return &scalar_ukernels();
  }();
  return *best;
}

}  // namespace attain::mla
