// Ceilings of the CUDA device, measured now (attain probe): device copy bandwidth and
// cuBLASLt's bf16 and fp8 throughput at a large square, with a cold L2.
#pragma once

#include <cstdint>
#include <string>

namespace attain::cuda {

struct GpuCeilings {
  bool present = false;
  std::string device;    // describe(device_info()) or the reason there is none
  double copy_gbps = 0;  // read + write counted, median of the timed copies
  std::int64_t copy_bytes = 0;
  double bf16_tflops = 0, fp8_tflops = 0;  // cuBLASLt, m = n = k = gemm_size
  std::int64_t gemm_size = 0;
  std::string fp8_scaling;  // what the fp8 figure used
  std::string library;      // cuBLASLt version
};

// Nothing measured (present = false) when no device is usable.
GpuCeilings probe_gpu(std::int64_t gemm_size = 8192, std::int64_t copy_bytes = 1ll << 30);

}  // namespace attain::cuda
