// fp32 direct kernel, AVX2 + FMA: 4 rows of W x 24 rows of A, 12 ymm accumulators + 3 A vectors
// + 1 broadcast = the 16 registers.
#include "kernels/cpu/gemm/ukernels/avx2/simd_avx2.hpp"
#include "kernels/cpu/gemm/ukernels/simd_direct.hpp"

namespace attain::gemm::detail {

void sgemm_direct_avx2_4x24(std::int64_t k, const float* w, std::int64_t ldw, int rows,
                            const float* at, int m, float alpha, float beta, void* c,
                            std::int64_t ldc, bool ct, DType c_type, const DirectNext* next) {
  simd_direct_any<Avx2, 4, 3>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct, c_type, next);
}

}  // namespace attain::gemm::detail
