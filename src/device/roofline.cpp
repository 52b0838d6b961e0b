// Rooflines: what an op can attain on this host (from the probe) or on a listed device.
#include <fmt/format.h>

#include <algorithm>

#include "attain/device.hpp"

namespace attain {

double Roofline::attainable_tflops(const Op& op) const {
  const double bytes = op.bytes();
  const double mem_bound =
      bytes > 0 ? op.flops() / bytes * bw_gbps / 1e3 : peak_tflops;  // GB/s * FLOP/B
  return std::min(compute_peak(op.dtype), mem_bound);
}

double Roofline::compute_peak(DType dt) const {
  // bf16 and fp8 values are exact in fp32, so the fp32 FMA rate bounds them too: a CPU whose
  // bf16 dot instruction is slower than its FMAs (Sapphire Rapids' vdpbf16ps: 91 against 189
  // GFLOP/s a core) still multiplies them at the FMA rate.
  const bool dot = dt == DType::bf16 || dt == DType::fp8;
  return dot ? std::max(bf16_peak_tflops, peak_tflops) : peak_tflops;
}

Roofline host_roofline(const HostCeilings& c, int threads) {
  const int all = std::max(1, c.cores);
  const int t = std::clamp(threads, 1, all);
  Roofline r;
  // Compute: the FMA peak interpolated linearly per thread between 1 and all threads.
  const double gflops =
      all == 1 ? c.fma_gflops_1t
               : c.fma_gflops_1t + (c.fma_gflops_all - c.fma_gflops_1t) * (t - 1) / (all - 1);
  r.peak_tflops = gflops / 1e3;
  if (c.bf16_gflops_1t > 0 && c.bf16_gflops_all > 0)
    r.bf16_peak_tflops = (all == 1 ? c.bf16_gflops_1t
                                   : c.bf16_gflops_1t + (c.bf16_gflops_all - c.bf16_gflops_1t) *
                                                            (t - 1) / (all - 1)) /
                         1e3;
  // Memory: one thread's streaming read per thread, up to what all threads reach.
  r.bw_gbps = std::min(c.read_gbps_all, t * c.read_gbps_1t);
  r.source = fmt::format("probe ({} thread{}, fp32 {} FMA{}, streaming read)", t, t == 1 ? "" : "s",
                         c.fma_isa.empty() ? "?" : c.fma_isa,
                         r.bf16_peak_tflops > 0 ? ", bf16 avx512_bf16 dot" : "");
  return r;
}

Roofline device_roofline(const DeviceSpec& d, DType dt) {
  const double peak = d.peak(dt);
  if (!(peak > 0))
    throw InputError(
        fmt::format("device '{}' has no dense {} peak: {}", d.id, dtype_name(dt), d.peak_gap(dt)));
  Roofline r;
  r.peak_tflops = peak;
  r.bw_gbps = d.mem_bandwidth_gbps;
  const std::string key = fmt::format("peak_tflops.{}", dtype_name(dt));
  const auto it = d.sources.find(key);
  r.source = fmt::format("device {} ({})", d.id, it != d.sources.end() ? it->second : "spec");
  return r;
}

}  // namespace attain
