// What `attain probe` shows: the host's ceilings as text, and the CUDA device's, measured here.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "device/probe.hpp"
#ifdef ATTAIN_HAVE_CUDA
#include "kernels/cuda/gpu_probe.hpp"
#include "kernels/cuda/runtime.hpp"
#endif

namespace attain::probe {

nlohmann::json probe_gpu_json(bool progress) {
#ifdef ATTAIN_HAVE_CUDA
  if (progress && cuda::device_info().present)
    fmt::print(stderr, "probing the CUDA device (copy, cuBLASLt bf16 and fp8)...\n");
  const cuda::GpuCeilings g = cuda::probe_gpu();
  nlohmann::json j = {{"present", g.present}, {"device", g.device}};
  if (g.present) {
    j["copy_gbps"] = g.copy_gbps;
    j["copy_bytes"] = g.copy_bytes;
    j["copy_note"] = "device copy kernel, read + write counted, median, cold L2";
    j["gemm_size"] = g.gemm_size;
    j["bf16_tflops"] = g.bf16_tflops;
    if (g.fp8_tflops > 0) j["fp8_tflops"] = g.fp8_tflops, j["fp8_scaling"] = g.fp8_scaling;
    j["library"] = g.library;
  }
  return j;
#else
  (void)progress;
  return {};
#endif
}

nlohmann::json probe_json(const HostCeilings& c, const nlohmann::json& gpu) {
  nlohmann::json j = to_json(c);
  if (!gpu.is_null()) j["gpu"] = gpu;
  return j;
}

std::string probe_text(const HostCeilings& c, const nlohmann::json& gpu) {
  const auto& i = c.isa;
  std::string s;
  s += fmt::format("cpu        {} ({} logical CPUs)\n", c.cpu_model, c.cores);
  s += fmt::format(
      "isa        avx2 {} fma {} f16c {} avx512f {} avx512bw {} avx512_bf16 {} amx {}\n", i.avx2,
      i.fma, i.f16c, i.avx512f, i.avx512bw, i.avx512_bf16, i.amx);
  s += fmt::format("caches     L1d {} KiB, L2 {} KiB, L3 {} MiB\n", c.l1d_bytes >> 10,
                   c.l2_bytes >> 10, c.l3_bytes >> 20);
  s += fmt::format("fp32 FMA   {:8.1f} GFLOP/s 1 thread, {:8.1f} all threads\n", c.fma_gflops_1t,
                   c.fma_gflops_all);
  if (c.bf16_gflops_1t > 0)
    s += fmt::format("bf16 dot   {:8.1f} GFLOP/s 1 thread, {:8.1f} all threads (avx512_bf16)\n",
                     c.bf16_gflops_1t, c.bf16_gflops_all);
  s += fmt::format("read       {:8.1f} GB/s    1 thread, {:8.1f} all threads ({} loop)\n",
                   c.read_gbps_1t, c.read_gbps_all, c.read_kernel.empty() ? "?" : c.read_kernel);
  s += fmt::format(
      "copy       {:8.1f} GB/s    1 thread, {:8.1f} all threads (read + write counted)\n",
      c.copy_gbps_1t, c.copy_gbps_all);
  if (c.cold_bytes > 0)
    s += fmt::format(
        "cold from  {} MiB (reads this large run at memory speed: cold-cache timing evicts twice "
        "this)\n",
        c.cold_bytes >> 20);
  s += fmt::format("measured   {}\n", c.measured_at);
  if (!c.spread.empty()) {
    std::string line;
    for (const auto& [name, x] : c.spread)
      line += fmt::format("{}{} {:.1f}%", line.empty() ? "" : ", ", name, 100 * x);
    s += fmt::format("spread     (best - worst) / best over the trials: {}\n", line);
  }
  for (const CeilingFigure& f : kCeilingFigures)
    if (const auto it = c.raised.find(f.name); it != c.raised.end())
      s += fmt::format("best seen  {} {:.1f}: {} (above the probe's own measurement)\n", f.name,
                       c.*f.value, it->second);
  if (gpu.is_null()) return s;
  if (!gpu.value("present", false)) {
    s += fmt::format("gpu        none ({})\n", gpu.value("device", ""));
    return s;
  }
  s += fmt::format("gpu        {}\n", gpu.value("device", ""));
  s += fmt::format("gpu copy   {:8.1f} GB/s    (read + write counted, cold L2)\n",
                   gpu.value("copy_gbps", 0.0));
  s += fmt::format("gpu bf16   {:8.1f} TFLOP/s at {}^3 ({})\n", gpu.value("bf16_tflops", 0.0),
                   gpu.value("gemm_size", std::int64_t{0}), gpu.value("library", ""));
  if (gpu.contains("fp8_tflops"))
    s += fmt::format("gpu fp8    {:8.1f} TFLOP/s at {}^3 ({})\n", gpu.value("fp8_tflops", 0.0),
                     gpu.value("gemm_size", std::int64_t{0}), gpu.value("fp8_scaling", ""));
  return s;
}

}  // namespace attain::probe
