// fp32 micro-kernel, AVX2 + FMA: 6 rows x 16 columns, 12 ymm accumulators + 2 B vectors +
// 1 broadcast A value = 15 of 16 registers.
#include "kernels/cpu/gemm/ukernels/avx2/simd_avx2.hpp"
#include "kernels/cpu/gemm/ukernels/simd_ukernel.hpp"

namespace attain::gemm::detail {

void sgemm_avx2_6x16(std::int64_t k, const float* alpha, const float* a, const float* b,
                     const float* beta, float* c, std::int64_t rs_c, std::int64_t cs_c,
                     const UkAux* aux) {
  simd_ukernel<Avx2, 6, 2>(k, alpha, a, b, beta, c, rs_c, cs_c, aux);
}

}  // namespace attain::gemm::detail
