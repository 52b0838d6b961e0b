// Device helpers shared by attain's CUDA kernels: element decoding (bf16, fp8 e4m3).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace attain::cuda::dev {

// Two bf16 values packed in one 32-bit word (low half first in memory).
__device__ __forceinline__ float2 bf16x2_to_float2(std::uint32_t w) {
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}

// Two e4m3 values in the low 16 bits (first in memory = low byte); exact through fp16.
__device__ __forceinline__ float2 e4m3x2_to_float2(std::uint32_t pair) {
  const __half2_raw h =
      __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(pair & 0xffffu), __NV_E4M3);
  return __half22float2(__half2(h));
}

__device__ __forceinline__ float bf16_to_float(std::uint16_t h) {
  return __uint_as_float(static_cast<std::uint32_t>(h) << 16);
}

// Round to nearest even, as attain's host f32_to_bf16 does (NaN stays NaN).
__device__ __forceinline__ std::uint16_t float_to_bf16(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace attain::cuda::dev
