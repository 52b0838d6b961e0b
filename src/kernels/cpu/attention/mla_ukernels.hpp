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

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "attain/dtype.hpp"

namespace attain::mla {

inline constexpr int kDk = 576, kDv = 512, kRope = 64, kBlock = 64;

// Walks the next cache block one 64-byte line per call, into L2 (the block is larger than L1):
// the qk kernels call it as they go, so the next block's data does not wait on memory.
struct Prefetch {
  const char* p;
  const char* end;
  Prefetch(const void* from, int lines)
      : p(static_cast<const char*>(from)), end(p + 64 * static_cast<std::ptrdiff_t>(lines)) {}
  void next() {
    if (p < end) {
      __builtin_prefetch(p, 0, 2);  // prefetcht1
      p += 64;
    }
  }
};

// The edge tile of a register-blocked loop: f(std::integral_constant<int, r>{}) for the run-time
// count r in 1..N (nothing for 0), so each edge size gets its own instantiation.
template <int N, class F>
inline void with_count(int r, F&& f) {
  if constexpr (N >= 1) {
    if (r == N) return f(std::integral_constant<int, N>{});
    with_count<N - 1>(r, f);
  }
}

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
  // bf16 products (AVX512-BF16 tables only, else nullptr): the bf16 cache and queries are
  // multiplied as stored, pairs of values per 32-bit word, with fp32 sums (vdpbf16ps), as
  // FlashMLA multiplies bf16 on tensor cores; the probabilities are rounded to bf16 (RNE).
  //   kb  [nt][576]        cache rows of one block, bf16, in place
  //   q2  [288][mpad]      query pairs: word (k2, m) = q[m][2*k2], q[m][2*k2 + 1] (unscaled)
  //   p2  [ntp/2][mpad]    probability pairs: word (t2, m) = P[2*t2][m], P[2*t2 + 1][m]
  //   v2  [ntp/2][512]     value pairs: word (t2, d) = V[2*t2][d], V[2*t2 + 1][d]
  // ntp = nt rounded up to even; the pad token's P and V are 0.
  // qk16: st[t][m] = scale * sum_k kb[t][k] * q[m][k]   (t < nt, m < mpad)
  void (*qk16)(const std::uint16_t* kb, int nt, const std::uint32_t* q2, int mpad, float scale,
               float* st, const void* pf, int pf_lines) = nullptr;
  // pack16: p2 and v2 of one block from st (after softmax) and kb.
  void (*pack16)(const float* st, int nt, int mpad, const std::uint16_t* kb, std::uint32_t* p2,
                 std::uint32_t* v2) = nullptr;
  // fp8_to_bf16: `rows` rows of the fp8 cache (656 bytes each) as bf16 [rows][576]: each
  // e4m3 value times its 128-block scale, rounded once to bf16 (RNE; NaN codes give NaN), the
  // rope values copied. An fp8 block is then multiplied as bf16 too.
  void (*fp8_to_bf16)(const std::byte* src, int rows, std::uint16_t* dst) = nullptr;
  // pv16: o[m][d] = o[m][d] * alpha[m] + sum_t P[t][m] * V[t][d]   (m < rows, d < 512)
  void (*pv16)(const std::uint32_t* p2, int ntp, int mpad, const std::uint32_t* v2, int rows,
               const float* alpha, float* o) = nullptr;
};

const Ukernels& scalar_ukernels();
// nullptr below the avx2 level of cpu_features() (ATTAIN_ISA's cap included) or where the build
// has no x86 kernels.
const Ukernels* avx2_ukernels();
// nullptr below the avx512 level.
const Ukernels* avx512_ukernels();
// The AVX-512 table plus the bf16 products; nullptr below the avx512_bf16 level.
const Ukernels* avx512bf16_ukernels();
inline constexpr int kMaxMpadAlign = 16;
// The fastest table this CPU runs (ATTAIN_ISA caps it, as it caps every kernel family).
const Ukernels& best_ukernels();

}  // namespace attain::mla
