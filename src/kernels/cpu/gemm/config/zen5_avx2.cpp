// Zen 5 (AMD family 0x1a) with the AVX2 kernels: what an AVX2-only CPU of its generation runs
// (ATTAIN_ISA=avx2 on Zen 5). zen5's blocks; the direct path for fp32 M 12..192 and converted W
// M 32..160 (no bf16 pairs without AVX-512); the swapped direct path from M 256 for N up to 256.
// The sweeps behind each number: docs/history/gemm.md and docs/history/code-comments.md.
#include "kernels/cpu/gemm/config/config.hpp"

namespace attain::gemm::detail::config {

constinit const CpuRow zen5_avx2{
    .name = "zen5",
    .vendor = "AuthenticAMD",
    .family = 0x1a,
    .isa = Isa::avx2,
    .blocks = {.mc = 144,
               .kc = 512,
               .b_panel_bytes = 24 * kMiB,
               .nc = 512,
               .decode_max_m_f32 = 32,
               .decode_max_m_lowp = 64,
               .decode_max_m_pairs = 64,
               .decode_max_m_fp8_pairs = 64,
               .direct_min_m = 12,
               .direct_max_m = 192,
               .direct_min_n = 256,
               .direct_min_m_conv = 32,
               .direct_max_m_conv = 160,
               .direct_min_k = 256,
               .direct_max_kc = 2048,
               .direct_block_bytes = 512 * kKiB,
               .swap_min_m = 256,
               .swap_max_n = 256},
};

}  // namespace attain::gemm::detail::config
