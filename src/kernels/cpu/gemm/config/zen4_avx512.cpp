// Zen 4 (AMD family 0x19 with AVX-512: Genoa, Raphael; 32 KiB L1d, 1 MiB L2, 512-bit FMAs at half
// Zen 5's rate) with the AVX-512 kernels: zen5's blocks. The direct path from M 12 (at M 8 it loses
// on half the shapes) to M 1024 on every route, with K blocks up to 4096 deep in an 8 MiB A^T
// block: Zen 4 streams that block from L3 as fast and gains from fewer passes over C (oneDNN's
// brgemm runs the same structure on large products). fp32 M 5..8 on the k-pairs kernel from
// K 1536. The swapped direct path from M 192, for N up to 512 where M >= 2 N, for short K (<= 512)
// from M 128, and large products from M 1025 (N <= 4096). bf16 pairs at M <= 32 stay on the
// decode path for K 512..2047; fp8 pairs on the direct path for M 32..2048.
// The sweeps behind each number: docs/history/gemm.md and docs/history/code-comments.md.
#include "kernels/cpu/gemm/config/config.hpp"

namespace attain::gemm::detail::config {

constinit const CpuRow zen4_avx512{
    .name = "zen4",
    .vendor = "AuthenticAMD",
    .family = 0x19,
    .isa = Isa::avx512,
    .blocks = {.mc = 144,
               .kc = 512,
               .b_panel_bytes = 24 * kMiB,
               .nc = 512,
               .decode_max_m_f32 = 32,
               .decode_max_m_lowp = 64,
               .decode_max_m_pairs = 32,
               .decode_max_m_fp8_pairs = 32,
               .direct_min_m = 12,
               .direct_max_m = 1024,
               .direct_min_n = 256,
               .direct_min_m_pairs = 12,
               .direct_max_m_pairs = 1024,
               .direct_min_m_conv = 32,
               .direct_max_m_conv = 1024,
               .direct_min_k = 256,
               .direct_max_kc = 4096,
               .direct_block_bytes = 8 * kMiB,
               .swap_min_m = 192,
               .direct_split_max_n = 512,
               .swap_max_n = 256,
               .km_block_bytes = 2 * kMiB,
               .direct_min_m_k2 = 5,
               .direct_min_k_k2 = 1536,
               .decode_pairs_min_k = 512,
               .decode_pairs_max_k = 2048,
               .swap_max_n_tall = 512,
               .swap_large_min_m = 1025,
               .swap_large_max_n = 4096,
               .swap_large_min_k_pairs = 128,
               .swap_short_min_m = 128,
               .swap_short_max_k = 512,
               .direct_min_m_fp8 = 32,
               .direct_max_m_fp8 = 2048},
};

}  // namespace attain::gemm::detail::config
