// The engine's internal frame: a call resolved into Problems (the caller's operands, the kernel
// family and the resolved schedule), the scratch each thread keeps, how operands are read, and the
// Blocks of C that the executor shares out. Every path (paths/) and the frame's files (frame/)
// include this; nothing outside src/kernels/cpu/gemm does.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "attain/gemm.hpp"
#include "attain/tile.hpp"
#include "core/util.hpp"
#include "kernels/cpu/gemm/dispatch.hpp"
#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm::detail {

// Grow-only, 64-byte-aligned scratch: after the first calls of a shape, no allocation.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { std::free(p_); }
  float* get(std::int64_t floats) {
    const auto need = static_cast<std::size_t>(std::max<std::int64_t>(floats, 16));
    if (need > n_) {
      std::free(p_);
      const std::size_t bytes = round_up(static_cast<std::int64_t>(need * sizeof(float)), 64);
      p_ = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (p_ == nullptr) throw std::bad_alloc();
      n_ = need;
    }
    return p_;
  }

 private:
  float* p_ = nullptr;
  std::size_t n_ = 0;
};

// Which product's A blocks a thread's a_whole holds, packed whole (run_mk), so that the thread's
// later pieces of the same rows and K slice read them instead of packing them again.
struct KeptA {
  std::uint64_t id = 0;  // Problem::id; 0: none
  std::int64_t m0 = 0, m1 = 0, mc = 0, kc = 0;
  int slice = 0;
  bool operator==(const KeptA&) const = default;
};
// Per-thread workspaces (pool threads are persistent, so these live across calls).
struct Workspace {
  Buffer b_pack, c_tile, tmp, out, a_conv, a_whole;
  Buffer at;  // the direct path's A^T panels where a block packs its own (Problem::at_in_block)
  KeptA kept_a;
  Buffer a_pack[tile::kMaxStages];
};
Workspace& workspace();

// One product (a call, or one item of a batched or grouped call) resolved: its operands, kernel
// family, block sizes and schedule, and where its path keeps its converted operands.
struct Problem {
  const Params* p;
  std::uint64_t id = 0;  // unique to this product in the process (make_problem)
  const KernelFamily* fam;
  Blocking blk;
  Schedule s;  // resolved: every field set
  std::int64_t lda, ldb, ldc, lda_s, ldb_s;
  const float* e4m3;
  // The decode path: A as fp32 rows with scales applied (p->a itself when it already is).
  const float* a32 = nullptr;
  std::int64_t lda32 = 0;
  // ...or, where the decode path multiplies bf16 pairs (`pairs_decode`: decodes_bf16_pairs,
  // decodes_fp8_pairs), A as bf16 rows: bf16 A itself, fp8 A unscaled in the kernel's order
  // (permute_a_fp8_pairs, K values per row).
  detail::Decode pairs_decode = nullptr;
  const std::uint16_t* a16 = nullptr;
  std::int64_t lda16 = 0;
  // The direct path: A^T in panels of the family's direct_panel rows P, all of K each (panel q
  // at at + q * P * K values, K / 2 words on bf16 pairs), packed before the blocks run (or by
  // them, each into its thread's Workspace::at: at_in_block below, `at` null).
  float* at = nullptr;
  // ...and its kernel (on bf16 pairs - `pairs` below, set for the direct path by direct_pairs -
  // the one for 32-bit words).
  detail::DirectKernel direct = nullptr;
  // ...on k pairs (direct_k2: two consecutive k of a row in each pair of lanes, A^T laid out for
  // it by pack_at) where the one panel has at most direct_lanes rows of A.
  bool k2 = false;
  // ...or fp8 A and W as bf16 pairs (direct_fp8_pairs: the kernel direct_fp8), with A's scales
  // per panel beside A^T: panel q's at as + q * P * ceil(K / 128), K block b's P (the panel's
  // width) values at + b * P (DirectScales::a).
  bool scaled = false;
  float* as = nullptr;
  // ...packed by the blocks themselves, each its own panels a KC block at a time, where the blocks
  // split M into whole panels or a product is one block (threads_n 1; the k-pairs panel too): no
  // block waits for the others' pieces, and none reads A^T another core wrote.
  bool at_in_block = false;
  // The packed path multiplies bf16 A and B as bf16 pairs (the family's ukernel_bf16 on a CPU
  // with AVX512-BF16): panels of 32-bit words, two bf16 of consecutive k each, so every K
  // offset into a packed panel is halved (kw = 2).
  bool pairs = false;
  int kw = 1;
  // Schedule::swap: this problem is the caller's with the operands swapped (detail::swapped),
  // its C the caller's C transposed: element (i, j) at c + j * ldc + i.
  bool ct = false;
  // The call writes more C than the caches keep (streams_c, set by the executor): where the
  // packed path writes fp32 C in one pass with beta 0 it stores whole tiles with non-temporal
  // stores, which skip the read of each line before it is written.
  bool stream_c = false;
  // Floats of the region's scratch its path takes (PathImpl::scratch_floats).
  std::int64_t scratch = 0;
  // Split-K: slices of kslice K elements, partial sums in `partial` (slices x m x n).
  int slices = 1;
  std::int64_t kslice = 0;
  float* partial = nullptr;
};

// op(A)(i, p) and op(B)(p, j) storage addresses.
inline const std::byte* a_at(const Problem& pr, std::int64_t i, std::int64_t p) {
  const auto es = static_cast<std::int64_t>(dtype_size(pr.p->a_type));
  const std::int64_t off = pr.p->trans_a == Trans::N ? i * pr.lda + p : p * pr.lda + i;
  return static_cast<const std::byte*>(pr.p->a) + off * es;
}
inline const std::byte* b_at(const Problem& pr, std::int64_t p, std::int64_t j) {
  const auto es = static_cast<std::int64_t>(dtype_size(pr.p->b_type));
  const std::int64_t off = pr.p->trans_b == Trans::T ? j * pr.ldb + p : p * pr.ldb + j;
  return static_cast<const std::byte*>(pr.p->b) + off * es;
}
inline float a_scale(const Problem& pr, std::int64_t i, std::int64_t p) {
  return pr.p->a_type == DType::fp8 ? pr.p->a_scale[i * pr.lda_s + p / kFp8Block] : 1.0f;
}
inline float b_scale(const Problem& pr, std::int64_t p, std::int64_t j) {
  return pr.p->b_type == DType::fp8 ? pr.p->b_scale[(j / kFp8Block) * pr.ldb_s + p / kFp8Block]
                                    : 1.0f;
}

// Rows [i0, i0 + rows) of A stored (M, K), K [p0, p0 + len), as fp32 rows `ld` apart at dst.
void convert_a_rows(const Problem& pr, std::int64_t i0, int rows, std::int64_t p0, std::int64_t len,
                    float* dst, std::int64_t ld);
// Rows [j0, j0 + rows) of W stored (N, K) (B with trans_b = T), likewise.
void convert_w_rows(const Problem& pr, std::int64_t j0, int rows, std::int64_t p0, std::int64_t len,
                    float* dst, std::int64_t ld);
// Packs rows [i0, i0+rows) x K [p0, p0+kc) of op(A) into an MR-panel (kc x MR; rows past
// `rows` zero): the packed path's A panels (MR = the family's mr) and the direct path's A^T
// panels (MR = the panel's width). tmp: rows x kc floats.
void pack_a_panel(const Problem& pr, std::int64_t i0, int rows, std::int64_t p0, std::int64_t kc,
                  int MR, float* dst, float* tmp);
// Packs columns [j0, j0+cols) x K [p0, p0+kc) of op(B) into an NR-panel (kc x NR).
void pack_b_panel(const Problem& pr, std::int64_t j0, int cols, std::int64_t p0, std::int64_t kc,
                  float* dst, float* tmp);
// C[rows, cols] (at row i0, col j0) = alpha * src + beta * C, src fp32 with leading dim lds;
// beta the call's unless given (1 onto sums of earlier K blocks already in C).
void write_back(const Problem& pr, std::int64_t i0, std::int64_t j0, std::int64_t rows,
                std::int64_t cols, const float* src, std::int64_t lds);
void write_back(const Problem& pr, std::int64_t i0, std::int64_t j0, std::int64_t rows,
                std::int64_t cols, const float* src, std::int64_t lds, float beta);
// C = beta * C (K = 0 or alpha = 0: A and B are not read, as in BLAS).
void scale_c(const Problem& pr);
// C = alpha * (sum of the split-K partial sums) + beta * C.
void finish_split(const Problem& pr);
// The problem of p under the resolved schedule s: leading dimensions, the family, the split-K
// slices and the path's route (its bind()).
Problem make_problem(const Params& p, const Schedule& s);

// ---- blocks and the executor ----
// One piece of work for one thread: C[m0:m1, n0:n1] of a problem (a K slice of it with
// split-K). Every call form and run_together reduce to a list of blocks run in one region.
struct Block {
  const Problem* pr;
  std::int64_t m0, m1, n0, n1;
  int slice;    // split-K slice, -1 = all of K
  double cost;  // for the order in which threads take blocks
};

// A piece of the work on A that a region runs before its blocks (the blocks wait for all of
// them), done by `run`: the direct path's K [k0, k1) of the A^T panel from row i0, at dst; the
// decode path's rows [i0, i1) of A converted (fp32 rows with the scales applied, or fp8 as bf16
// pairs), the whole buffer at dst.
struct Pack {
  const Problem* pr;
  std::int64_t i0, k0, k1;
  float* dst;
  std::int64_t i1 = 0;
  void (*run)(const Pack&) = nullptr;  // the path's piece of work
};

// Whether a product reads A and B: K = 0 or alpha = 0 is C = beta * C, as in BLAS (and its
// operands are never swapped).
inline bool reads_operands(const Params& p) {
  return p.k != 0 && p.alpha != 0.0f;
}

// K per block: a split-K slice's, or all of K.
inline double k_per_block(const Problem& pr) {
  return static_cast<double>(pr.slices > 1 ? pr.kslice : pr.p->k);
}
// Blocks of C[m0:m1, n0:n1] in pieces of `width` columns costing cost_per_col a column each,
// appended to out: one block a piece, or one per split-K slice.
void add_pieces(const Problem& pr, std::int64_t m0, std::int64_t m1, std::int64_t n0,
                std::int64_t n1, std::int64_t width, double cost_per_col, std::vector<Block>& out);

}  // namespace attain::gemm::detail
