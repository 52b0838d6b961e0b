// Zen 5 (AMD family 0x1a) with the AVX-512 kernels. KC 512 and NC 512: the B micro-panel
// (KC x 32) streams from L2 as fast as from L1 on Zen 5, so fewer KC passes over C with a KC x NC
// block of B in L2 beat an L1-sized micro-panel. The decode path up to M 32 (fp32, bf16 and fp8
// pairs) and M 64 (16/8-bit W, whose conversion is free in the decode kernel). The direct path
// for fp32 M 12..160 with N, K >= 256 (M 8 stays on the decode path), bf16 pairs M 12..128 (two
// accumulator sets make M 12 pay), converted W M 32..160; its threads split M (whole 64-row
// panels) for N <= 512; with 128..255 columns, bf16 pairs at M 12..32 only from K 2048 (1.08-1.60x
// the decode path there; at K 512-1024 the decode path runs up to 1.25x faster). The swapped
// direct path from M 192 for N up to 256 (1.05-1.5x the plain direct or packed path at M 192-384,
// fp32 and bf16; fp32 at M 160, N 256, K 512 ran 0.8x), and from M 128 where K <= 512 and N <= M
// (batched 128 x 128 x 128 x 128 bf16: 1.2x, the plain tile's transposed write of C); and, from
// M 512, large products with K <= 128 for N up to 4096 (bf16 1.04-1.6x, fp32 1.05-1.5x the packed
// path; at K 192-512 the packed path runs up to 1.5x faster), but not fp16 (batched 8 x 8192 x 2048
// x 128: 0.72-0.85x).
// The sweeps behind each number: docs/history/gemm.md and docs/history/code-comments.md.
#include "kernels/cpu/gemm/config/config.hpp"

namespace attain::gemm::detail::config {

constinit const CpuRow zen5_avx512{
    .name = "zen5",
    .vendor = "AuthenticAMD",
    .family = 0x1a,
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
               .direct_max_m = 160,
               .direct_min_n = 256,
               .direct_min_m_pairs = 12,
               .direct_max_m_pairs = 128,
               .direct_min_m_conv = 32,
               .direct_max_m_conv = 160,
               .direct_min_k = 256,
               .direct_max_kc = 2048,
               .direct_block_bytes = 512 * kKiB,
               .swap_min_m = 192,
               .direct_split_max_n = 512,
               .swap_max_n = 256,
               .few_cols_pairs_min_k = 2048,
               .swap_large_min_m = 512,
               .swap_large_max_n = 4096,
               .swap_large_max_k = 128,
               .swap_large_converts = false,
               .swap_short_min_m = 128,
               .swap_short_max_k = 512},
};

}  // namespace attain::gemm::detail::config
