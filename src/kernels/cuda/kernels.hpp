// Launchers of attain's own CUDA kernels (decode_gemm.cu, mla_decode.cu, util.cu). Every
// pointer is a device pointer; every launcher checks the launch and throws on failure.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/plan.hpp"

namespace attain::cuda {

// C[b][m][n] (bf16) = A[b][m][k] . W[b][n][k]^T, fp32 accumulation, for b in [0, batches).
// bf16 operands, or fp8 e4m3 with DeepSeek block scales: a_scale[b][m][kb] (1 x 128) and
// w_scale[b][nb][kb] (128 x 128), kb = ceil(k/128), nb = ceil(n/128).
// counts (optional, [batches]): valid rows of each batch item (MoE masked layout); rows past
// it are neither read nor written.
struct DecodeGemmArgs {
  const void* a = nullptr;
  const void* w = nullptr;
  void* c = nullptr;
  const float* a_scale = nullptr;
  const float* w_scale = nullptr;
  const std::int32_t* counts = nullptr;
  float* workspace = nullptr;  // plan.workspace_floats floats when plan.split_k > 1
  std::int64_t m = 0, n = 0, k = 0, batches = 1;
  bool fp8 = false;
};
void launch_decode_gemm(const DecodeGemmArgs& args, const DecodeGemmPlan& plan, cudaStream_t s);

// Absorbed MLA decode over the paged latent cache (semantics: include/attain/mla.hpp).
// q[b][s_q][h][576] bf16; kcache bf16 [blocks][64][576] or fp8 [blocks][64][656 bytes];
// o[b][s_q][h][512] bf16, lse[b][h][s_q] f32. `units`, `num_splits`, `split_begin` are the
// plan's arrays on the device; part_o/part_lse hold plan.num_partials * s_q * h rows.
struct MlaArgs {
  const void* q = nullptr;
  const void* kcache = nullptr;
  const std::int32_t* block_table = nullptr;
  const std::int32_t* seqlens = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
  const MlaUnit* units = nullptr;
  const std::int32_t* num_splits = nullptr;
  const std::int32_t* split_begin = nullptr;
  float* part_o = nullptr;
  float* part_lse = nullptr;
  std::int64_t b = 0, s_q = 1, h = 0, max_blocks = 0;
  std::int64_t num_units = 0, row_tiles = 0;
  bool fp8 = false;
  bool any_split = false;  // launch the combine kernel
  float softmax_scale = 0;
};
void launch_mla_decode(const MlaArgs& args, cudaStream_t s);

// dst[j * ld + i] = src[i * cols + j] for i < rows, j < cols (and 0 in the padding rows
// i in [rows, ld)): fp32 scale tensors into cuBLASLt's outer-dimension-major layout.
void launch_transpose_scales(const float* src, std::int64_t rows, std::int64_t cols, float* dst,
                             std::int64_t ld, cudaStream_t s);
// dst[i * ld + j] = src[i * cols + j], padding columns j in [cols, ld) = 0.
void launch_pad_scales(const float* src, std::int64_t rows, std::int64_t cols, float* dst,
                       std::int64_t ld, cudaStream_t s);

// Seeded random fill of `bytes` (never zeros): bf16 values in [-1, 1), or e4m3 bytes that
// are never NaN (fp8 = true).
void launch_fill_random(void* p, std::size_t bytes, bool fp8, std::uint32_t seed, cudaStream_t s);

// Device copy bandwidth: dst = src over `bytes` with 16-byte loads and stores.
void launch_copy(const void* src, void* dst, std::size_t bytes, cudaStream_t s);

}  // namespace attain::cuda
