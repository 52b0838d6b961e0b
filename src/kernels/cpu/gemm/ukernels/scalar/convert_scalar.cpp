// Packing helpers in portable C++: dtype conversion through attain's one set of scalar
// routines, and the plain interleave.
#include <cstring>

#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm::detail {

void convert_scalar(const void* src, DType t, std::int64_t n, float scale, const float* e4m3,
                    float* dst) {
  switch (t) {
    case DType::f32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * 4);
      return;
    case DType::bf16: {
      const auto* s = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::f16: {
      const auto* s = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::fp8: {
      const auto* s = static_cast<const std::uint8_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = e4m3[s[i]] * scale;
      return;
    }
    default:
      return;
  }
}

void interleave_scalar(const float* src, std::int64_t ld, int rows, std::int64_t k, int R,
                       float* dst) {
  for (std::int64_t p = 0; p < k; ++p) {
    for (int r = 0; r < rows; ++r) dst[p * R + r] = src[r * ld + p];
    for (int r = rows; r < R; ++r) dst[p * R + r] = 0.0f;
  }
}

}  // namespace attain::gemm::detail
