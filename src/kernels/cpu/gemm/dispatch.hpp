// Run-time dispatch: which kernels and block sizes this CPU gets. Dispatch is data: the
// kernel families (ukernels/<isa>/family.cpp) are listed best first and the first one the CPU
// runs wins; the block sizes come from a per-CPU row (config/: adding a CPU = adding a file).
#pragma once

#include <string>

#include "attain/cpu_features.hpp"
#include "attain/gemm.hpp"
#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm::detail {

struct KernelFamily {
  Isa isa;
  const char* name;  // "avx2_6x16"
  IsaLevel needs;    // the level of cpu_features() its kernels need
  int mr = 0, nr = 0;
  UKernel ukernel = nullptr;
  Convert convert = nullptr;
  Interleave interleave = nullptr;
  Decode decode = nullptr;
  int decode_lanes = 1;  // K elements per vector in the decode kernel
  // bf16 A and B multiplied as bf16 pairs (vdpbf16ps), same MR x NR and signature as ukernel
  // but k counts pairs and the panels hold 32-bit words (two bf16 of consecutive k); nullptr:
  // none for this family. Used only where the CPU has AVX512-BF16.
  UKernel ukernel_bf16 = nullptr;
  // Rows of C (fp32 or 16-bit) from fp32 sums (nullptr: the scalar write-back).
  WriteRow write_row = nullptr;
  // ukernel and ukernel_bf16 write 16-bit C themselves where UkAux::c16 is set (as write_row).
  bool ukernel_writes16 = false;
  // fp8 A and W on the decode path as bf16 pairs (nullptr: none); see decodes_fp8_pairs().
  Decode decode_fp8_pairs = nullptr;
  // bf16 A and W on the decode path as bf16 pairs (nullptr: none); see decodes_bf16_pairs().
  Decode decode_bf16_pairs = nullptr;
  // The direct path's kernel: tiles of direct_rows rows of W by up to direct_panel rows of A,
  // panels in widths of direct_lanes rows.
  DirectKernel direct = nullptr;
  int direct_rows = 0, direct_panel = 0, direct_lanes = 0;
  // The same tile on bf16 pairs (nullptr: none); see direct_pairs().
  DirectKernel direct_bf16 = nullptr;
  // The direct path's kernel for panels of at most direct_lanes / 2 rows of A on fp32 values
  // (simd_direct_k2: A^T with two consecutive k of a row in each pair of lanes); nullptr: none,
  // such panels take `direct`.
  DirectKernel direct_k2 = nullptr;
  // `direct` and `direct_bf16` write 16-bit C's rows (not transposed) from registers, rounded
  // there (simd_direct's store_cols with S::kCols16): a product whose K is one block needs no
  // fp32 tile of C. false: 16-bit C goes through an fp32 tile. Their short masked row pieces are
  // also why C whose rows alias in L1 goes through strips on such families (paths/direct.cpp).
  bool direct_writes_rows = false;
  // `direct_bf16` with fp8 block scales (nullptr: none); see direct_pairs().
  DirectScaledKernel direct_fp8 = nullptr;
  // e4m3 values as bf16 by byte lookups (AVX512-VBMI; nullptr: none), and A's rows in the fp8
  // pairs decode's order (nullptr: none): the fp8 pairs routes' conversions.
  void (*e4m3_to_bf16)(const std::uint8_t* src, std::int64_t n, const float* e4m3,
                       std::uint16_t* dst) = nullptr;
  void (*permute_a_fp8_pairs)(const std::uint8_t* a, std::int64_t m, std::int64_t lda,
                              std::int64_t k, const float* e4m3, bool super,
                              std::uint16_t* dst) = nullptr;
};

// Cache blocks and path crossovers for one CPU and kernel family (MC multiple of MR, KC of 4):
// a row of config/.
struct Blocking {
  int mc = 0, kc = 0;
  std::int64_t b_panel_bytes = 0;  // budget for the packed B panel (K x NC fp32) per thread
  int nc = 0;                      // columns per B panel (0: as many as the budget allows)
  // The heuristic's decode/packed crossover in M (decode for M <= this), for fp32 weights, for
  // 16/8-bit weights (their conversion is free in the decode kernel, not in packing), and for
  // bf16 and fp8 A and B where the packed path multiplies bf16 pairs.
  int decode_max_m_f32 = 0, decode_max_m_lowp = 0, decode_max_m_pairs = 0,
      decode_max_m_fp8_pairs = 0;
  // The heuristic's direct path: fp32 operands with direct_min_m <= M <= direct_max_m and
  // N >= direct_min_n, ahead of the decode and packed paths (direct_max_m 0: never by
  // default). Its KC: the largest that keeps the A^T block (M x KC) within direct_block_bytes
  // (L2 on most rows; Zen 4 streams the block from L3 as fast and gains from fewer passes over
  // C and longer W rows: 8 MiB there), at most direct_max_kc, K cut into equal blocks.
  int direct_min_m = 0, direct_max_m = 0, direct_min_n = 0;
  int direct_min_m_pairs = 0, direct_max_m_pairs = 0;  // bf16 A and W as bf16 pairs
  // 16-bit W converted a tile at a time (fp16 W, or bf16 W without the pairs), and fp8 W with
  // A of another dtype; fp8 A and W take their own range (direct_min_m_fp8 below) as bf16 pairs
  // where the CPU has them, and stay off the direct path otherwise.
  int direct_min_m_conv = 0, direct_max_m_conv = 0;
  // ...and K >= direct_min_k on the fp32 route (a short K leaves the tile's write-back and the
  // A^T packing region unamortized; bf16 pairs take any K).
  int direct_min_k = 0;
  int direct_max_kc = 2048;
  std::int64_t direct_block_bytes = 512 * 1024;
  // The heuristic's swapped direct path (Schedule::swap) for M >= swap_min_m, where the packed
  // path would run and the swapped operands' M (the caller's N) is from the direct path's
  // minimum for their route up to swap_max_n (any K); 0: never by default.
  int swap_min_m = 0;
  // The direct path's grid: threads split M (whole panels of A^T, the panel count a multiple
  // of the threads, the last thread's rows at least 7/8 of the others') instead of N where
  // N <= direct_split_max_n, and the heuristic takes the direct path from N = direct_min_n / 2
  // (the packed path packs both operands for few columns; bf16 pairs and converted W from above
  // their decode crossover) whether M splits or not; 0: neither.
  int direct_split_max_n = 0;
  int swap_max_n = 0;
  // Order::km's B block (KC x NC fp32) per thread: NC = this / (4 KC), at least nc.
  std::int64_t km_block_bytes = 2 << 20;
  // The heuristic's direct path on k pairs (KernelFamily::direct_k2) for fp32 operands with
  // direct_min_m_k2 <= M <= direct_lanes / 2, N >= direct_min_n and K >= direct_min_k_k2, ahead of
  // the decode path (0: never by default).
  int direct_min_m_k2 = 0, direct_min_k_k2 = 0;
  // ...and bf16 pairs with M up to their decode crossover (decode_max_m_pairs) stay on the
  // decode path for decode_pairs_min_k <= K < decode_pairs_max_k (0, 0: never), where it
  // streams W faster than the direct path packs A^T and writes C; on rows shorter than that the
  // decode path's reductions cost more, on longer ones the direct kernel's compute wins.
  int decode_pairs_min_k = 0, decode_pairs_max_k = 0;
  // ...and for few columns (direct_min_n / 2 <= N < direct_min_n) they take the direct path from
  // K >= few_cols_pairs_min_k (0: never; the decode path up to their crossover, as above).
  int few_cols_pairs_min_k = 0;
  // The swapped direct path also for N up to swap_max_n_tall where M >= 2 N (0: swap_max_n
  // only).
  int swap_max_n_tall = 0;
  // ...and for N up to swap_large_max_n where M >= swap_large_min_m (above the direct path's
  // range, where the packed path would run; 0: never): A's rows broadcast in place against W^T
  // packed 64 wide, as oneDNN's brgemm runs large products. bf16 pairs from K
  // swap_large_min_k_pairs; K up to swap_large_max_k (0: any); where the swapped operands'
  // kernel converts W (fp16), only with swap_large_converts.
  int swap_large_min_m = 0, swap_large_max_n = 0;
  int swap_large_min_k_pairs = 0, swap_large_max_k = 0;
  bool swap_large_converts = true;
  // ...and from swap_short_min_m rows (below swap_min_m) where K <= swap_short_max_k and N <= M:
  // with a short K the plain direct path's transposed tile writes outweigh its dots (0: never).
  int swap_short_min_m = 0, swap_short_max_k = 0;
  // fp8 A and W on the direct path (direct_fp8_pairs) from direct_min_m_fp8 rows of A, the
  // decode path below (0: from the decode path's limit, above kDecodeMaxM rows), up to
  // direct_max_m_fp8 (0: direct_max_m_pairs), the packed path above.
  int direct_min_m_fp8 = 0, direct_max_m_fp8 = 0;
  // The packed path's MC and KC where both operands are fp32 (0: mc and kc): their packing
  // only transposes, where 16-bit and fp8 operands convert too and keep the shallower blocks.
  int mc_f32 = 0, kc_f32 = 0;
};

// The features the engine's kernels may use: core/cpu_features, ATTAIN_ISA's cap included
// (inline: the route predicates ask on every call).
using CpuInfo = CpuFeatures;
inline const CpuInfo& cpu_info() {
  static const CpuInfo& info = cpu_features();
  return info;
}
// Whether the packed path multiplies these operands as bf16 pairs with family f on this CPU
// (bf16 A and B, or fp8 A and B, whose e4m3 values are exact in bf16; A stored (M, K), B stored
// (N, K), even K; the engine also needs even leading dimensions and KC (fp8: KC a multiple of
// 128) and, for bf16, 4-byte-aligned bases, or it takes the fp32 route).
bool multiplies_bf16_pairs(const Params& p, const KernelFamily& f);
// Whether the decode path runs fp8 x fp8 as bf16 pairs with family f on this CPU (AVX512-BF16
// and VBMI; A stored (M, K), W stored (N, K), K a multiple of 64; any M the decode path takes).
bool decodes_fp8_pairs(const Params& p, const KernelFamily& f);
// Whether the decode path runs bf16 x bf16 as bf16 pairs with family f on this CPU
// (AVX512-BF16; A stored (M, K), W stored (N, K); any K and M the decode path takes).
bool decodes_bf16_pairs(const Params& p, const KernelFamily& f);
// Whether the decode path runs family f's panel kernel (panel_shape: fp32, bf16 or fp16 W;
// AVX-512: M from kDecodePanelMinM to MaxM, K from MinK, in one pass, on bf16 pairs where the
// bf16 pairs decode runs; AVX2: M from kDecodePanelMinMAvx2, 16-bit W from K =
// kDecodePanelMinK16Avx2, in passes of 4 rows). decode_avx512, decode_bf16_pairs_avx512bf16 and
// decode_avx2 pick it by panel_shape on each call's K, which split-K slices shorten: their blocks
// may not.
bool decodes_panel(const Params& p, const KernelFamily& f);
// The panel kernel's packed A per K chunk (DecodeArgs::panel_bytes): a quarter of this CPU's L1d
// (32 KiB if unreported), 8 KiB to kDecodePanelChunkBytes. The rows go in groups that take every
// chunk in turn (kDecodePanelGroupRows), so a chunk's size does not set how long a piece of W is
// read; a quarter of the L1d is the fastest (8 KiB against 16 and 32 on Zen 4).
std::int64_t decode_panel_bytes();
// Whether the decode kernel for p uses Schedule::decode_k_tile (the bf16 pairs and the panel
// kernel not; the fp8 pairs from more than kDecodeRows rows of A, as its K chunk).
bool decode_uses_k_tile(const Params& p, const KernelFamily& f);
// Whether it needs DecodeArgs::scratch (the fp32 route's K tiles and the panel kernel).
bool decode_uses_scratch(const Params& p, const KernelFamily& f);
// Whether the decode path takes these operands' shape: W stored (N, K) (trans_b = T) and at most
// kDecodeMaxM rows of A; on the swapped operands (Schedule::swap) at most kDecodeMaxM columns
// (the caller's N becomes the decode path's M; swap_ok says the rest).
bool decode_ok(const Params& p, bool swap);
// Whether the direct path takes these operands with family f: W stored (N, K) (trans_b = T);
// bf16 A and W multiplied as bf16 pairs (direct_pairs), or else the fp32 route: fp32 W read in
// place, other W converted to fp32 a tile at a time (direct_converts), A converted to fp32 in
// its A^T panels (A stored (K, M) only when fp32). C of any output dtype; no split-K.
bool direct_ok(const Params& p, const KernelFamily& f);
bool direct_converts(const Params& p, const KernelFamily& f);
// bf16 A and W on the direct path as bf16 pairs: a family with direct_bf16 on a CPU with
// AVX512-BF16, A stored (M, K), even K and leading dimensions, 4-byte-aligned A and W; or fp8 A
// and W (direct_fp8_pairs).
bool direct_pairs(const Params& p, const KernelFamily& f);
// fp8 A and W on the direct path as bf16 pairs: a family with direct_fp8 on a CPU with
// AVX512-BF16 and VBMI (W's tiles and A^T converted by byte lookups), A stored (M, K), W (N, K),
// even K and leading dimensions; the block scales go on each 128-wide K block's sums.
bool direct_fp8_pairs(const Params& p, const KernelFamily& f);
// The direct path runs the family's k-pairs kernel (direct_k2): fp32 values (not bf16 pairs)
// and one panel of at most direct_lanes rows of A (two vectors of pairs).
bool direct_on_k_pairs(const Params& p, const KernelFamily& f);
// Rows of A in each block of the direct path where the grid cuts M in threads_m (whole panels):
// the blocks plan() cuts, and the rows whose A^T direct_kc sizes KC by.
std::int64_t direct_block_rows(std::int64_t m, int threads_m, const KernelFamily& f);
// The operands swapped: C^T = W . A^T as a product of its own (A' = W stored (N, K), W' = A
// stored (M, K), M' = N, N' = M; leading dimensions kept, no scales, schedule.swap cleared).
// Its C' is the caller's C transposed: element (i, j) of C' at c + j * ldc + i, ldc the
// caller's (the engine's Problem::ct).
Params swapped(const Params& p);
// Whether Schedule::swap applies: A stored (M, K), W stored (N, K), neither fp8 (the scales'
// blocks are not symmetric), and the direct path takes the swapped operands.
bool swap_ok(const Params& p, const KernelFamily& f);
// The kernel families, one file each (ukernels/<isa>/family.cpp).
extern const KernelFamily avx512_family, avx2_family, scalar_family;
const KernelFamily& family(Isa isa);      // isa must be concrete and supported
const Blocking& blocking(Isa isa);        // the row of config/ for this CPU (config/table.cpp)
std::string cpu_table_row_name(Isa isa);  // which row matched ("zen5", "generic")

// A rough single-thread time (ns) of C[m, n] over k: the weight bytes at 20 GB/s plus the flops
// at 150 GFLOP/s, conservative figures for one core of a current x86 CPU. It decides whether a
// job is worth waking other threads for and how finely a thread's share is cut.
double rough_ns(DType b_type, std::int64_t m, std::int64_t n, std::int64_t k);

// A thread's cell of C on the decode and direct paths is cut along N into pieces that any free
// thread claims, so that a thread slowed by other work on its core hands the rest of its share
// to its partners instead of holding the region up (a static split runs at the pace of the
// slowest core: 2x with one of two cores shared, against about 1.33x for a division that
// rebalances). At most kPiecesPerThread pieces, none under kMinPieceNs of rough_ns, so that a
// piece's claim and its pipeline's start stay well under a percent of it.
inline constexpr int kPiecesPerThread = 4;
inline constexpr double kMinPieceNs = 100e3;
// The width of one piece of a cell of `cols` columns (whole `unit`-column tiles) whose
// rough_ns is cell_ns.
std::int64_t piece_cols(std::int64_t cols, int unit, double cell_ns);

}  // namespace attain::gemm::detail
