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

__global__ void fill_random_kernel(std::uint16_t* p, std::int64_t n, std::uint32_t seed, bool fp8) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    // A 32-bit integer hash of (seed, i): cheap, and different in every element.
    std::uint32_t x = static_cast<std::uint32_t>(i) * 0x9e3779b9u ^ seed * 0x85ebca6bu;
    x ^= x >> 16, x *= 0x7feb352du, x ^= x >> 15, x *= 0x846ca68bu, x ^= x >> 16;
    if (fp8) {
      p[i] = static_cast<std::uint16_t>(x & 0xf7f7u);  // exponent < 15: no NaN encodings
    } else {
      // bf16 in [-1, 1): sign, exponent 126 (0.5..1) or lower, random mantissa.
      const std::uint16_t sign = static_cast<std::uint16_t>((x >> 31) << 15);
      const std::uint16_t expo = static_cast<std::uint16_t>((120u + (x >> 24) % 7u) << 7);
      p[i] = static_cast<std::uint16_t>(sign | expo | (x & 0x7fu));
    }
  }
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

void launch_fill_random(void* p, std::size_t bytes, bool fp8, std::uint32_t seed, cudaStream_t s) {
  const auto n = static_cast<std::int64_t>(bytes / 2);
  fill_random_kernel<<<blocks_for(n), 256, 0, s>>>(static_cast<std::uint16_t*>(p), n, seed, fp8);
  ATTAIN_CUDA_CHECK_LAUNCH("fill_random_kernel");
}

void launch_copy(const void* src, void* dst, std::size_t bytes, cudaStream_t s) {
  const auto n = static_cast<std::int64_t>(bytes / 16);
  const int sms = std::max(1, device_info().sm_count);
  copy_kernel<<<static_cast<unsigned>(sms * 8), 512, 0, s>>>(static_cast<const uint4*>(src),
                                                             static_cast<uint4*>(dst), n);
  ATTAIN_CUDA_CHECK_LAUNCH("copy_kernel");
}

}  // namespace attain::cuda
