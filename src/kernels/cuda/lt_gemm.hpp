// cuBLASLt matmul in attain's GEMM convention: C[b][m][n] = A[b][m][k] . W[b][n][k]^T, row-major,
// as the column-major product C^T = W . A^T ("TN": cuBLASLt's A is our W, its B our A).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "attain/dtype.hpp"

namespace attain::cuda {

struct LtGemmShape {
  DType dtype = DType::bf16;  // f32, f16, bf16 or fp8 (e4m3 inputs, bf16 output)
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  // fp8 only: DeepSeek block scales, cuBLASLt's CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F for
  // W and CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F for A (Hopper, cuBLAS >= 12.9). The scale
  // tensors must then be in cuBLASLt's layouts: w [nb][ld_kb] with ld_kb = round_up(kb, 4) and
  // a [kb][ld_m] (outer dimension fastest) with ld_m = round_up(m, 4); see a_scale_ld() etc.
  bool block_scales = true;
  static std::int64_t a_scale_ld(std::int64_t m) { return (m + 3) / 4 * 4; }
  static std::int64_t w_scale_ld(std::int64_t k) { return ((k + 127) / 128 + 3) / 4 * 4; }
};

class LtGemm {
 public:
  // Picks cuBLASLt's first heuristic algorithm; throws std::runtime_error (with the cuBLAS
  // status) when there is none for this shape.
  explicit LtGemm(const LtGemmShape& shape);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  // Device pointers; scales only for fp8 (in the layouts above).
  void run(const void* a, const void* w, void* c, const float* a_scale, const float* w_scale,
           cudaStream_t s);
  const LtGemmShape& shape() const { return shape_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  LtGemmShape shape_;
};

// "cuBLASLt 13.1.0" from the library actually loaded.
std::string cublaslt_version();

}  // namespace attain::cuda
