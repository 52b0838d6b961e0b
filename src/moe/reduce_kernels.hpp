// bf16 row arithmetic of the combine (weighted sums of expert outputs), written so the compiler
// vectorizes it; compiled once generic (reduce.cpp), once for AVX2 (reduce_avx2.cpp) and once
// for AVX-512 (reduce_avx512.cpp); row_ops() picks the best the CPU runs.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace attain::moe::detail {

struct RowOps {
  const char* isa;
  // dst[j] = bf16(sum over r < nrows of w[r] * rows[r][j]) for j < n: the rows are read side
  // by side in one pass (their streams in flight together), summed in fp32 in row order
  // (fused multiply-add where the ISA has one) and rounded once to nearest even, NaN kept
  // quiet. nrows = 0 writes zeros.
  void (*weighted_sum)(std::uint16_t* dst, const std::uint16_t* const* rows, const float* w,
                       int nrows, std::int64_t n);
};
const RowOps& row_ops();  // the best the CPU runs
const RowOps& row_ops_generic();
const RowOps& row_ops_avx2();
const RowOps& row_ops_avx512();

// Compiled once per ISA: an unnamed namespace keeps each TU's copy its own (no ODR merge of
// an AVX-512 body into the generic one).
namespace kernels {
namespace {
inline float bf16(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}
inline float madd(float w, float y, float s) {
#if defined(__FMA__)
  return std::fma(w, y, s);
#else
  return s + w * y;
#endif
}
// Round to nearest even, NaN kept quiet: the same as attain::f32_to_bf16, branch-free.
inline std::uint16_t round(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t q = (u >> 16) | 0x40u;
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? q : r);
}

// One chunk of C (a compile-time width, so the sums stay in vector registers) or fewer.
template <int C>
inline void weighted_chunk(std::uint16_t* __restrict dst, const std::uint16_t* const* rows,
                           const float* w, int nrows, std::int64_t j0, int c) {
  float s[C] = {};
  for (int r = 0; r < nrows; ++r) {
    const std::uint16_t* __restrict y = rows[r] + j0;
    const float wr = w[r];
    if (c == C) {
      // Every row ahead (separate streams that start cold; 6.0 -> 4.0 ms for 1024 tokens of 4
      // rows of 7168, cold, against prefetching one line of two).
      __builtin_prefetch(y + 8 * C);  // both lines of the chunk 1 KiB ahead
      __builtin_prefetch(y + 8 * C + 32);
      for (int j = 0; j < C; ++j) s[j] = madd(wr, bf16(y[j]), s[j]);
    } else {
      for (int j = 0; j < c; ++j) s[j] = madd(wr, bf16(y[j]), s[j]);
    }
  }
  if (c == C) {
    for (int j = 0; j < C; ++j) dst[j0 + j] = round(s[j]);
  } else {
    for (int j = 0; j < c; ++j) dst[j0 + j] = round(s[j]);
  }
}

inline void weighted_sum(std::uint16_t* __restrict dst, const std::uint16_t* const* rows,
                         const float* w, int nrows, std::int64_t n) {
  constexpr int C = 64;
  for (std::int64_t j0 = 0; j0 < n; j0 += C)
    weighted_chunk<C>(dst, rows, w, nrows, j0, static_cast<int>(std::min<std::int64_t>(C, n - j0)));
}
}  // namespace
}  // namespace kernels

}  // namespace attain::moe::detail
