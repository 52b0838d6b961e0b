// The portable kernel family: plain C++ that every CPU runs, the reference for the others and what
// an architecture without vector kernels of its own gets.
#include "kernels/cpu/gemm/dispatch.hpp"

namespace attain::gemm::detail {

constinit const KernelFamily scalar_family{
    .isa = Isa::scalar,
    .name = "scalar_4x8",
    .needs = IsaLevel::scalar,
    .mr = 4,
    .nr = 8,
    .ukernel = sgemm_scalar_4x8,
    .convert = convert_scalar,
    .interleave = interleave_scalar,
    .decode = decode_scalar,
    .decode_lanes = 1,
    .direct = sgemm_direct_scalar_4x8,
    .direct_rows = 4,
    .direct_panel = 8,
    .direct_lanes = 8,
};

}  // namespace attain::gemm::detail
