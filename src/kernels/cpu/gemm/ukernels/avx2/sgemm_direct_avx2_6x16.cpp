// fp32 direct kernel, AVX2 + FMA: 6 rows of W x 16 rows of A, 12 ymm accumulators + 2 A vectors
// + 2 broadcasts = the 16 registers, its k loop in asm (Avx2::direct_6x16). Against the
// 4 x 24 tile before it (12 accumulators, 3 A vectors and a broadcast, where GCC read the A
// vectors as FMA memory operands, four loads of each per step): docs/history/gemm.md.
#include "kernels/cpu/gemm/ukernels/avx2/simd_avx2.hpp"
#include "kernels/cpu/gemm/ukernels/simd_direct.hpp"

namespace attain::gemm::detail {

void sgemm_direct_avx2_6x16(std::int64_t k, const float* w, std::int64_t ldw, int rows,
                            const float* at, int m, float alpha, float beta, void* c,
                            std::int64_t ldc, bool ct, DType c_type, const DirectNext* next) {
  simd_direct_any<Avx2, 6, 2>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct, c_type, next);
}

}  // namespace attain::gemm::detail
