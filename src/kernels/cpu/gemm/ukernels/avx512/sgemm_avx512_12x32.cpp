// fp32 micro-kernel, AVX-512F: 12 rows x 32 columns, 24 zmm accumulators + 2 B vectors +
// 1 broadcast A value = 27 of 32 registers.
#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/simd_ukernel.hpp"

namespace attain::gemm::detail {

void sgemm_avx512_12x32(std::int64_t k, const float* alpha, const float* a, const float* b,
                        const float* beta, float* c, std::int64_t rs_c, std::int64_t cs_c,
                        const UkAux* aux) {
  simd_ukernel<Avx512, 12, 2>(k, alpha, a, b, beta, c, rs_c, cs_c, aux);
}

}  // namespace attain::gemm::detail
