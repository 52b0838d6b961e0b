// AMD family 0x19 with the AVX2 kernels: Zen 3, and Zen 4 run with ATTAIN_ISA=avx2 (its AVX2 FMA
// rate is its AVX-512 one). The generic AVX2 row's blocks, with the direct path on the 6 x 16
// kernel for fp32 M 12..384 and converted W M 32..384 (A^T blocks up to 8 MiB, KC up to 4096),
// split M from N = 128, swapped from M 256 for N <= 256 (N <= 512 where M >= 2 N) and from M 128
// for K <= 512. Above M 384 the A^T block streams from L3, which the neighbours share, and loses
// when they are busy. fp32 operands on the packed path take MC 72 and KC 768: their packing only
// transposes, so deeper blocks mean fewer passes over C (0.930 of the FMA peak on 2048^3, 1
// thread, against 0.906-0.920 at 144 x 256); the converting routes keep 144 x 256.
// The sweeps behind each number: docs/history/gemm.md and docs/history/code-comments.md.
#include "kernels/cpu/gemm/config/config.hpp"

namespace attain::gemm::detail::config {

constinit const CpuRow zen4_avx2{
    .name = "zen4",
    .vendor = "AuthenticAMD",
    .family = 0x19,
    .isa = Isa::avx2,
    .blocks = {.mc = 144,
               .kc = 256,
               .b_panel_bytes = 16 * kMiB,
               .nc = 0,
               .decode_max_m_f32 = 16,
               .decode_max_m_lowp = 32,
               .decode_max_m_pairs = 32,
               .decode_max_m_fp8_pairs = 32,
               .direct_min_m = 12,
               .direct_max_m = 384,
               .direct_min_n = 256,
               .direct_min_m_conv = 32,
               .direct_max_m_conv = 384,
               .direct_min_k = 256,
               .direct_max_kc = 4096,
               .direct_block_bytes = 8 * kMiB,
               .swap_min_m = 256,
               .direct_split_max_n = 512,
               .swap_max_n = 256,
               .km_block_bytes = 2 * kMiB,
               .swap_max_n_tall = 512,
               .swap_short_min_m = 128,
               .swap_short_max_k = 512,
               .mc_f32 = 72,
               .kc_f32 = 768},
};

}  // namespace attain::gemm::detail::config
