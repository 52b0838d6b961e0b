// fp32 direct kernel in portable C++ (4 rows of W x 8 rows of A): the fallback for CPUs
// without AVX2 + FMA, with kernels.hpp's DirectKernel contract.
#include <cmath>

#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm::detail {

void sgemm_direct_scalar_4x8(std::int64_t k, const float* w, std::int64_t ldw, int rows,
                             const float* at, int m, float alpha, float beta, void* c,
                             std::int64_t ldc, bool ct, DType c_type, const DirectNext*) {
  constexpr int R = 4, P = 8;
  float acc[R][P] = {};
  for (std::int64_t p = 0; p < k; ++p)
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < P; ++i) acc[r][i] += w[r * ldw + p] * at[p * P + i];
  const bool bf = c_type == DType::bf16;
  for (int i = 0; i < m; ++i)
    for (int r = 0; r < rows; ++r) {
      const std::int64_t idx = ct ? r * ldc + i : i * ldc + r;
      const float s = alpha * acc[r][i];
      if (c_type == DType::f32) {
        float& dst = static_cast<float*>(c)[idx];
        dst = beta == 0.0f ? s : beta == 1.0f ? dst + s : std::fma(beta, dst, s);
        continue;
      }
      std::uint16_t& dst = static_cast<std::uint16_t*>(c)[idx];
      const float v = beta == 0.0f ? s : std::fma(beta, bf ? bf16_to_f32(dst) : f16_to_f32(dst), s);
      dst = bf ? f32_to_bf16(v) : f32_to_f16(v);
    }
}

}  // namespace attain::gemm::detail
