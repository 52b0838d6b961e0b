// Small device utilities: scale-tensor layouts for cuBLASLt, and the copy of the probe.
#include <algorithm>

#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/runtime.hpp"

namespace attain::cuda {

namespace {

__global__ void transpose_scales_kernel(const float* src, std::int64_t rows, std::int64_t cols,
                                        float* dst, std::int64_t ld) {
  const std::int64_t total = cols * ld;
  for (std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       idx < total; idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t j = idx / ld, i = idx % ld;
    dst[idx] = i < rows ? src[i * cols + j] : 0.0f;
  }
}

__global__ void pad_scales_kernel(const float* src, std::int64_t rows, std::int64_t cols,
                                  float* dst, std::int64_t ld) {
  const std::int64_t total = rows * ld;
  for (std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       idx < total; idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx / ld, j = idx % ld;
    dst[idx] = j < cols ? src[i * cols + j] : 0.0f;
  }
}

__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                            std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[i] = __ldcs(src + i);
}

unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((n + 255) / 256, 1, 8192));
}

}  // namespace

void launch_transpose_scales(const float* src, std::int64_t rows, std::int64_t cols, float* dst,
                             std::int64_t ld, cudaStream_t s) {
  transpose_scales_kernel<<<blocks_for(cols * ld), 256, 0, s>>>(src, rows, cols, dst, ld);
  ATTAIN_CUDA_CHECK_LAUNCH("transpose_scales_kernel");
}

void launch_pad_scales(const float* src, std::int64_t rows, std::int64_t cols, float* dst,
                       std::int64_t ld, cudaStream_t s) {
  pad_scales_kernel<<<blocks_for(rows * ld), 256, 0, s>>>(src, rows, cols, dst, ld);
  ATTAIN_CUDA_CHECK_LAUNCH("pad_scales_kernel");
}

void launch_copy(const void* src, void* dst, std::size_t bytes, cudaStream_t s) {
  const auto n = static_cast<std::int64_t>(bytes / 16);
  const int sms = std::max(1, device_info().sm_count);
  copy_kernel<<<static_cast<unsigned>(sms * 8), 512, 0, s>>>(static_cast<const uint4*>(src),
                                                             static_cast<uint4*>(dst), n);
  ATTAIN_CUDA_CHECK_LAUNCH("copy_kernel");
}

}  // namespace attain::cuda
