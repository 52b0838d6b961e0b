// bf16 direct kernel, AVX512-BF16: the 6 x 64 tile of sgemm_direct_avx512_6x64 on bf16 pairs.
// A broadcast W word is two bf16 of consecutive k of one W row, as stored; the A^T panel holds
// words of two k of one row of A; the k step is vdpbf16ps (twice the k of an FMA). Products of
// bf16 values are exact, the sums fp32 (vdpbf16ps reads denormals as zero).
#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512bf16.hpp"
#include "kernels/cpu/gemm/ukernels/simd_direct.hpp"

namespace attain::gemm::detail {

void sgemm_direct_avx512bf16_6x64(std::int64_t k, const float* w, std::int64_t ldw, int rows,
                                  const float* at, int m, float alpha, float beta, void* c,
                                  std::int64_t ldc, bool ct, DType c_type, const DirectNext* next) {
  // A tile of 1-2 W rows (the last of N = 128, 512, 2048, ...) on a 2-row kernel: as 6 rows it
  // computed three times its sums.
  if (rows <= 2)
    return simd_direct_any<Avx512Bf16Pairs, 2, 4>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct,
                                                  c_type, next);
  simd_direct_any<Avx512Bf16Pairs, 6, 4>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct, c_type,
                                         next);
}

void sgemm_direct_avx512bf16_6x64_fp8(std::int64_t k, const float* w, std::int64_t ldw, int rows,
                                      const float* at, int m, float alpha, float beta, void* c,
                                      std::int64_t ldc, bool ct, DType c_type,
                                      const DirectNext* next, const DirectScales* scales) {
  simd_direct_any<Avx512Bf16Pairs, 6, 4, true>(k, w, ldw, rows, at, m, alpha, beta, c, ldc, ct,
                                               c_type, next, scales);
}

}  // namespace attain::gemm::detail
