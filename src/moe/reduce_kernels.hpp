// bf16 row arithmetic of the combine (weighted sums of expert outputs), written so the compiler
// vectorizes it; compiled once generic (reduce.cpp) and once for AVX2 (reduce_avx2.cpp).
#pragma once

#include <bit>
#include <cstdint>

namespace attain::moe::detail {

struct RowOps {
  void (*axpy)(float* acc, const std::uint16_t* y, float w, std::int64_t n);  // acc += w * y
  void (*store)(std::uint16_t* dst, const float* acc, std::int64_t n);        // dst = bf16(acc)
};
const RowOps& row_ops();  // the best the CPU runs

namespace kernels {
inline void axpy(float* __restrict acc, const std::uint16_t* __restrict y, float w,
                 std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j)
    acc[j] += w * std::bit_cast<float>(static_cast<std::uint32_t>(y[j]) << 16);
}
// Round to nearest even, NaN kept quiet: the same as attain::f32_to_bf16, branch-free.
inline void store(std::uint16_t* __restrict dst, const float* __restrict acc, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(acc[j]);
    const std::uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const std::uint32_t q = (u >> 16) | 0x40u;
    dst[j] = static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? q : r);
  }
}
}  // namespace kernels

}  // namespace attain::moe::detail
