// Micro-kernels of the MLA decode kernel and its baselines, one table per ISA.
// The driver (mla_decode.cpp) picks the table at run time; every table computes the same
// thing, the scalar one being the portable fallback and the reference for the others.
//
// Layouts (fp32, all counts in floats):
//   kf  [nt][576]    cache rows of one block, dequantized (V = the first 512 of each row)
//   qt  [576][mpad]  the request's queries, scaled, transposed: column m = row qi * h + hi
//   st  [nt][mpad]   scores S^T of the block, overwritten by the probabilities P^T
//   o   [M][512]     running output (unnormalized)
#pragma once

#include <cstdint>

#include "attain/dtype.hpp"

namespace attain::mla {

inline constexpr int kDk = 576, kDv = 512, kRope = 64, kBlock = 64;

struct Ukernels {
  const char* isa;
  // dst[0..n) = src as fp32; n a multiple of 8. bf16 and f32 ignore scale; fp8 (e4m3)
  // values are multiplied by it. Bit-exact with dtype.hpp's conversions.
  void (*convert)(DType dt, const void* src, int n, float scale, float* dst);
  // st[t][m] = sum_k kf[t][k] * qt[k][m]   for t < nt, m < mpad (mpad a multiple of 8)
  void (*qk)(const float* kf, int nt, const float* qt, int mpad, float* st);
  // Online-softmax step over one block, per column m < mpad: keys t < vis[m] are visible.
  // mx[m] := max(mx[m], max_t st), alpha[m] := exp(old mx - new mx), st := exp(st - mx)
  // (0 where masked), l[m] := l[m] * alpha[m] + sum_t st.
  void (*softmax)(float* st, int nt, int mpad, const std::int32_t* vis, float* mx, float* l,
                  float* alpha);
  // o[m][d] = o[m][d] * alpha[m] + sum_t st[t][m] * kf[t][d]   for m < rows, d < 512
  void (*pv)(const float* st, int nt, int mpad, const float* kf, int rows, const float* alpha,
             float* o);
  // Baselines (GEMV style, no register blocking).
  float (*dot)(const float* a, const float* b, int n);          // n a multiple of 8
  void (*axpy)(float a, const float* x, float* y, int n);       // y += a x
  float (*exp_sum)(float* x, int n, float shift);               // x := exp(x - shift), returns sum
};

const Ukernels& scalar_ukernels();
// nullptr when the CPU lacks AVX2/FMA/F16C or the build has no x86 kernels.
const Ukernels* avx2_ukernels();
// The fastest table this CPU runs (ATTAIN_MLA_ISA=scalar forces the fallback).
const Ukernels& best_ukernels();

}  // namespace attain::mla
