// fp32 direct kernel in portable C++ (4 rows of W x 8 rows of A): the fallback for CPUs
// without AVX2 + FMA, with kernels.hpp's DirectKernel contract.
#include <cmath>

#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm::detail {

void sgemm_direct_scalar_4x8(std::int64_t k, const float* w, std::int64_t ldw, int rows,
                             const float* at, int m, float alpha, float beta, float* c,
                             std::int64_t ldc, bool ct, const DirectNext*) {
  constexpr int R = 4, P = 8;
  float acc[R][P] = {};
  for (std::int64_t p = 0; p < k; ++p)
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < P; ++i) acc[r][i] += w[r * ldw + p] * at[p * P + i];
  for (int i = 0; i < m; ++i)
    for (int r = 0; r < rows; ++r) {
      float& dst = ct ? c[r * ldc + i] : c[i * ldc + r];
      const float s = alpha * acc[r][i];
      dst = beta == 0.0f ? s : beta == 1.0f ? dst + s : std::fma(beta, dst, s);
    }
}

}  // namespace attain::gemm::detail
