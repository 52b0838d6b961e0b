// fp32 micro-kernel in portable C++ (4 x 8): the fallback for CPUs without AVX2 + FMA.
#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm::detail {

void sgemm_scalar_4x8(std::int64_t k, const float* alpha, const float* a, const float* b,
                      const float* beta, float* c, std::int64_t rs_c, std::int64_t cs_c,
                      const UkAux*) {
  constexpr int MR = 4, NR = 8;
  float acc[MR][NR] = {};
  for (std::int64_t p = 0; p < k; ++p)
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) acc[i][j] += a[p * MR + i] * b[p * NR + j];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) {
      float& dst = c[i * rs_c + j * cs_c];
      const float r = *alpha * acc[i][j];
      dst = *beta != 0.0f ? *beta * dst + r : r;
    }
}

}  // namespace attain::gemm::detail
