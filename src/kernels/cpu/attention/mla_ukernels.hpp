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
  int mpad_align;  // qk/softmax need mpad (the padded row count) a multiple of this
  // dst[0..n) = src as fp32; n a multiple of 8. bf16 and f32 ignore scale; fp8 (e4m3)
  // values are multiplied by it. Bit-exact with dtype.hpp's conversions.
  void (*convert)(DType dt, const void* src, int n, float scale, float* dst);
  // st[t][m] = sum_k kf[t][k] * qt[k][m]   for t < nt, m < mpad (mpad a multiple of mpad_align).
  // Meanwhile brings pf[0 .. pf_lines * 64) toward the core (the next cache block), one line
  // every other k step, so the next block's conversion does not wait on memory.
  void (*qk)(const float* kf, int nt, const float* qt, int mpad, float* st, const void* pf,
             int pf_lines);
  // Online-softmax step over one block, per column m < mpad: keys t < vis[m] are visible.
  // mx[m] := max(mx[m], max_t st), alpha[m] := exp(old mx - new mx), st := exp(st - mx)
  // (0 where masked), l[m] := l[m] * alpha[m] + sum_t st.
  void (*softmax)(float* st, int nt, int mpad, const std::int32_t* vis, float* mx, float* l,
                  float* alpha);
  // o[m][d] = o[m][d] * alpha[m] + sum_t st[t][m] * kf[t][d]   for m < rows, d < 512
  void (*pv)(const float* st, int nt, int mpad, const float* kf, int rows, const float* alpha,
             float* o);
  // Baselines (GEMV style, no register blocking).
  float (*dot)(const float* a, const float* b, int n);     // n a multiple of 8
  void (*axpy)(float a, const float* x, float* y, int n);  // y += a x
  float (*exp_sum)(float* x, int n, float shift);          // x := exp(x - shift), returns sum
};

const Ukernels& scalar_ukernels();
// nullptr when the CPU lacks AVX2/FMA/F16C or the build has no x86 kernels.
const Ukernels* avx2_ukernels();
// nullptr when the CPU lacks AVX-512 F/BW/VL/DQ (or AVX2).
const Ukernels* avx512_ukernels();
inline constexpr int kMaxMpadAlign = 16;
// The fastest table this CPU runs; ATTAIN_MLA_ISA=scalar|avx2|avx512 caps the choice.
const Ukernels& best_ukernels();

}  // namespace attain::mla
