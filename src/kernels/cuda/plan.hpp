// Host-side planning of the attain-cuda kernels: plain C++ (no CUDA headers), so the tests
// check it on machines without a GPU. The kernels (decode_gemm.cu, mla_decode.cu) take these
// plans as they are.
#pragma once

#include <cstdint>
#include <vector>

namespace attain::cuda {

// ---- decode GEMM: C[m,n] = A[m,k] . W[n,k]^T for small m, weights streamed once ----------
//
// A CTA is kDecodeWarps warps. Two paths:
//  - CUDA cores (fp8, and bf16 with m <= 8 or k % 8 != 0): a warp owns `nw` rows of W and `mt`
//    rows of A; its lanes split K in groups of 16 bytes (8 bf16 or 16 fp8 values), so one warp
//    step reads 512 contiguous bytes of each W row.
//  - tensor cores (`mma`: bf16, m > 8, k % 8 == 0): a warp owns 16 rows of W and all of m
//    (mt = 8 * m_tiles rows) and computes C^T = W . A^T with mma.sync m16n8k16; each lane loads
//    16 bytes of two W rows per step, one warp step covers 32 values of K.
// Split-K cuts K into `split_k` slices of `k_chunk` elements when the tiles alone would leave
// the GPU idle; slices write fp32 partials that a reduction kernel sums (deterministic, no
// atomics), and the partials' traffic is kept under a quarter of W's.
inline constexpr int kDecodeWarps = 4;

struct DecodeGemmPlan {
  bool mma = false;          // the tensor-core path
  int m_tiles = 0;           // mma: 8-row tiles of A per warp (2, 4, 8 or 16)
  int mt = 1;                // A rows per CTA (CUDA cores: 1, 2, 4 or 8; mma: 8 * m_tiles)
  int nw = 4;                // W rows per warp (CUDA cores: 4 for mt <= 2, else 2; mma: 16)
  int group = 8;             // K elements per 16-byte load (8 bf16, 16 fp8)
  int warp_k = 256;          // K elements one warp step covers (32 * group; mma: 32)
  int split_k = 1;           // K slices
  std::int64_t k_chunk = 0;  // K elements per slice: a multiple of warp_k
  std::int64_t grid_x = 0, grid_y = 0, grid_z = 0;  // n tiles, K slices, m chunks x batches
  std::int64_t workspace_floats = 0;                // split_k > 1: [split][batches][m][n]
};

// elem_bytes: 2 (bf16) or 1 (fp8); sms: multiprocessors of the device.
DecodeGemmPlan plan_decode_gemm(std::int64_t m, std::int64_t n, std::int64_t k,
                                std::int64_t batches, int elem_bytes, int sms);

// ---- MLA decode: split-KV units ----------------------------------------------------------
// The cache geometry of include/attain/op.hpp, restated for nvcc (C++17; plan.cpp checks
// that both agree).
inline constexpr int kCacheDk = 576, kCacheDv = 512, kCacheBlock = 64, kCacheFp8RowBytes = 656;
//
// A CTA handles kMlaRowsPerCta query rows (row = q_index * h + head) of one unit: one request's
// cache blocks [block_begin, block_end). Requests longer than the plan's `blocks_per_unit` are
// cut into several units, each writing a partial (o, lse) that the combine kernel merges.
inline constexpr int kMlaRowsPerCta = 16;

struct MlaUnit {
  std::int32_t request = 0;
  std::int32_t block_begin = 0, block_end = 0;  // [begin, end) in the request's block list
  std::int32_t partial = -1;                    // partial slot; -1: the unit is the whole request
};

struct MlaPlan {
  std::vector<MlaUnit> units;             // grid.y; grid.x = row_tiles
  std::vector<std::int32_t> num_splits;   // per request (>= 1)
  std::vector<std::int32_t> split_begin;  // per request: first partial slot, -1 if unsplit
  std::int32_t num_partials = 0;
  std::int64_t row_tiles = 0;        // ceil(s_q * h / kMlaRowsPerCta)
  std::int64_t blocks_per_unit = 0;  // the cut length
};

// rows = s_q * h. Aims at about two CTAs per SM; a request is split only when there are
// fewer requests than that; every request gets at least one unit (an empty one writes
// o = 0 and lse = -inf).
MlaPlan plan_mla(const std::int32_t* seqlens, std::int64_t b, std::int64_t rows, int sms);

}  // namespace attain::cuda
