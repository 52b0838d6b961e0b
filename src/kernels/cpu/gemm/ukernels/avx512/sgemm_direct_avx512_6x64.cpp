// fp32 direct kernel, AVX-512F: 6 rows of W x 64 rows of A, 24 zmm accumulators + 4 A vectors
// + 1 broadcast = 29 of 32 registers. Six W rows (not twelve) keep the rows' lines within six of
// L1's ways when the row stride is a multiple of 4 KiB (K = 4096: every row maps to the same
// sets). Measured against 8 x 48 and 12 x 32 in docs/gemm.md.
#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/simd_direct.hpp"

namespace attain::gemm::detail {

void sgemm_direct_avx512_6x64(std::int64_t k, const float* w, std::int64_t ldw, int rows,
                              const float* at, int m, float alpha, float beta, void* c,
                              std::int64_t ldc, bool ct, DType c_type, const DirectNext* next) {
  // A tile of 1-2 W rows (the last of N = 128, 512, 2048, ...) on a 2-row kernel: as 6 rows it
  // computed three times its sums.
  if (rows <= 2)
    return simd_direct_any<Avx512, 2, 4>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct, c_type,
                                         next);
  simd_direct_any<Avx512, 6, 4>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct, c_type, next);
}

// Panels of up to 16 rows of A on k pairs. Up to 8 rows: one A vector, 12 accumulators (two
// sets of six W rows); 9-16 rows: two A vectors, 12 accumulators in one set. Hot in L1 on the
// Zen 5 guest, two vectors on k pairs run at 0.96-0.99 of the FMA peak where the plain kernel's
// one vector (a broadcast load per FMA) runs at 0.75.
void sgemm_direct_avx512_6x16k2(std::int64_t k, const float* w, std::int64_t ldw, int rows,
                                const float* at, int m, float alpha, float beta, void* c,
                                std::int64_t ldc, bool ct, DType c_type, const DirectNext* next) {
  if (2 * m <= Avx512::kLanes)
    return simd_direct_k2<Avx512, 6, 1>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct, c_type,
                                        next);
  simd_direct_k2<Avx512, 6, 2>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct, c_type, next);
}

}  // namespace attain::gemm::detail
