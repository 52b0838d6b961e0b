// Any CPU without a row of its own, with the avx512 kernels: cache blocks that suit current x86
// cores and the decode path's crossovers only. The direct and swapped paths are left to the tuner
// (attain tune), which finds them per shape on the machine itself.
#include "kernels/cpu/gemm/config/config.hpp"

namespace attain::gemm::detail::config {

constinit const CpuRow generic_avx512{
    .name = "generic",
    .vendor = "",
    .family = 0,
    .isa = Isa::avx512,
    .blocks = {.mc = 144,
               .kc = 256,
               .b_panel_bytes = 16 * kMiB,
               .nc = 0,
               .decode_max_m_f32 = 32,
               .decode_max_m_lowp = 64,
               .decode_max_m_pairs = 32,
               .decode_max_m_fp8_pairs = 32},
};

}  // namespace attain::gemm::detail::config
