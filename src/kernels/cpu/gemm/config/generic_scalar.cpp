// Any CPU without a row of its own, with the scalar kernels: cache blocks that suit current x86
// cores and the decode path's crossovers only. The direct and swapped paths are left to the tuner
// (attain tune), which finds them per shape on the machine itself.
#include "kernels/cpu/gemm/config/config.hpp"

namespace attain::gemm::detail::config {

constinit const CpuRow generic_scalar{
    .name = "generic",
    .vendor = "",
    .family = 0,
    .isa = Isa::scalar,
    .blocks = {.mc = 64,
               .kc = 256,
               .b_panel_bytes = 4 * kMiB,
               .nc = 0,
               .decode_max_m_f32 = 16,
               .decode_max_m_lowp = 16,
               .decode_max_m_pairs = 16,
               .decode_max_m_fp8_pairs = 16},
};

}  // namespace attain::gemm::detail::config
