// bf16 micro-kernel, AVX512-BF16: the 12 x 32 register tile of sgemm_avx512_12x32 on panels of
// bf16 pairs (32-bit words, two bf16 of consecutive k; k counts pairs). The broadcast of an A
// word and the loads of B words are the fp32 kernel's, bit for bit; the k step is vdpbf16ps,
// which adds both products of a pair to an fp32 lane: twice the k of an FMA per instruction.
// Products of bf16 values are exact; the sums are fp32 (vdpbf16ps reads denormals as zero and
// flushes denormal sums).
#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512bf16.hpp"
#include "kernels/cpu/gemm/ukernels/simd_ukernel.hpp"

namespace attain::gemm::detail {

void bgemm_avx512bf16_12x32(std::int64_t k, const float* alpha, const float* a, const float* b,
                            const float* beta, float* c, std::int64_t rs_c, std::int64_t cs_c,
                            const UkAux* aux) {
  simd_ukernel<Avx512Bf16Pairs, 12, 2>(k, alpha, a, b, beta, c, rs_c, cs_c, aux);
}

}  // namespace attain::gemm::detail
