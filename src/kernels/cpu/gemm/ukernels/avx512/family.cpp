// The AVX-512 kernel family: 12 x 32 fp32 micro-kernel, 6 x 64 direct tile, 16-lane decode, and
// the kernels that need more than AVX-512 F/BW/VL/DQ (bf16 pairs with AVX512-BF16, fp8 byte
// lookups with AVX512-VBMI; the predicates in dispatch.cpp check those per call). Compiled
// without ISA flags (CMakeLists.txt): it is data.
#include "kernels/cpu/gemm/dispatch.hpp"

namespace attain::gemm::detail {

constinit const KernelFamily avx512_family{
    .isa = Isa::avx512,
    .name = "avx512_12x32",
    .needs = IsaLevel::avx512,
    .mr = 12,
    .nr = 32,
    .ukernel = sgemm_avx512_12x32,
    .convert = convert_avx512,
    .interleave = interleave_avx512,
    .decode = decode_avx512,
    .decode_lanes = 16,
    .ukernel_bf16 = bgemm_avx512bf16_12x32,
    .write_row = write_row_avx512,
    .ukernel_writes16 = true,
    .decode_fp8_pairs = decode_fp8_pairs_avx512vbmi,
    .decode_bf16_pairs = decode_bf16_pairs_avx512bf16,
    .direct = sgemm_direct_avx512_6x64,
    .direct_rows = 6,
    .direct_panel = 64,
    .direct_lanes = 16,
    .direct_bf16 = sgemm_direct_avx512bf16_6x64,
    .direct_k2 = sgemm_direct_avx512_6x16k2,
    .direct_writes_rows = true,
    .direct_fp8 = sgemm_direct_avx512bf16_6x64_fp8,
    .e4m3_to_bf16 = e4m3_to_bf16_avx512vbmi,
    .permute_a_fp8_pairs = permute_a_fp8_pairs,
};

}  // namespace attain::gemm::detail
