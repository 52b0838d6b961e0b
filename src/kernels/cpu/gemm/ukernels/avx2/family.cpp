// The AVX2 kernel family (AVX2, FMA, F16C): 6 x 16 fp32 micro-kernel and direct tile, 8-lane
// decode. Compiled without ISA flags (CMakeLists.txt): it is data.
#include "kernels/cpu/gemm/dispatch.hpp"

namespace attain::gemm::detail {

constinit const KernelFamily avx2_family{
    .isa = Isa::avx2,
    .name = "avx2_6x16",
    .needs = IsaLevel::avx2,
    .mr = 6,
    .nr = 16,
    .ukernel = sgemm_avx2_6x16,
    .convert = convert_avx2,
    .interleave = interleave_avx2,
    .decode = decode_avx2,
    .decode_lanes = 8,
    .write_row = write_row_avx2,
    .ukernel_writes16 = true,
    .direct = sgemm_direct_avx2_6x16,
    .direct_rows = 6,
    .direct_panel = 16,
    .direct_lanes = 8,
};

}  // namespace attain::gemm::detail
