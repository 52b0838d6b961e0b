// attain probe: this host's measured ceilings.
#include "device/probe.hpp"

#include <fmt/format.h>

#include "attain/device.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"
#ifdef ATTAIN_HAVE_CUDA
#include "kernels/cuda/gpu_probe.hpp"
#include "kernels/cuda/runtime.hpp"
#endif

namespace attain::cli {
namespace {

// The CUDA device's ceilings, measured on every call (no cache); {} in builds without CUDA.
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

const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    bool json = false, refresh = false, reset = false;
    std::string out;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "probe", "Measure (or show the cached) ceilings of this host: FMA peak, bandwidth, ISA");
  sub->add_flag("--refresh", o->refresh,
                "measure again; each ceiling keeps the higher of the new figure and the cached one "
                "(a busy minute cannot lower what the machine has been measured to do)");
  sub->add_flag("--reset", o->reset,
                "forget this machine's cached ceilings, raised ones included, and measure afresh");
  sub->add_flag("--json", o->json, "print JSON");
  sub->add_option("--out", o->out, "also write the JSON to this file");
  set_action(sub, [o] {
    if (o->reset && probe::forget_cached() && !o->json)
      fmt::print(stderr, "forgot the cached ceilings of this machine ({})\n",
                 probe::cache_path().string());
    const HostCeilings c = probe_host(o->refresh || o->reset, !o->json);
    auto j = probe::to_json(c);
    const nlohmann::json gpu = probe_gpu_json(!o->json);
    if (!gpu.is_null()) j["gpu"] = gpu;
    if (o->json) {
      emit_json(j, o->out, true);
      return 0;
    }
    const auto& i = c.isa;
    fmt::print("cpu        {} ({} logical CPUs)\n", c.cpu_model, c.cores);
    fmt::print("isa        avx2 {} fma {} f16c {} avx512f {} avx512bw {} avx512_bf16 {} amx {}\n",
               i.avx2, i.fma, i.f16c, i.avx512f, i.avx512bw, i.avx512_bf16, i.amx);
    fmt::print("caches     L1d {} KiB, L2 {} KiB, L3 {} MiB\n", c.l1d_bytes >> 10, c.l2_bytes >> 10,
               c.l3_bytes >> 20);
    fmt::print("fp32 FMA   {:8.1f} GFLOP/s 1 thread, {:8.1f} all threads\n", c.fma_gflops_1t,
               c.fma_gflops_all);
    if (c.bf16_gflops_1t > 0)
      fmt::print("bf16 dot   {:8.1f} GFLOP/s 1 thread, {:8.1f} all threads (avx512_bf16)\n",
                 c.bf16_gflops_1t, c.bf16_gflops_all);
    fmt::print("read       {:8.1f} GB/s    1 thread, {:8.1f} all threads ({} loop)\n",
               c.read_gbps_1t, c.read_gbps_all, c.read_kernel.empty() ? "?" : c.read_kernel);
    fmt::print("copy       {:8.1f} GB/s    1 thread, {:8.1f} all threads (read + write counted)\n",
               c.copy_gbps_1t, c.copy_gbps_all);
    if (c.cold_bytes > 0)
      fmt::print("cold from  {} MiB (reads this large run at memory speed: cold-cache timing "
                 "evicts twice this)\n",
                 c.cold_bytes >> 20);
    fmt::print("measured   {}\n", c.measured_at);
    if (!c.spread.empty()) {
      std::string line;
      for (const auto& [name, x] : c.spread)
        line += fmt::format("{}{} {:.1f}%", line.empty() ? "" : ", ", name, 100 * x);
      fmt::print("spread     (best - worst) / best over the trials: {}\n", line);
    }
    for (const CeilingFigure& f : kCeilingFigures)
      if (const auto it = c.raised.find(f.name); it != c.raised.end())
        fmt::print("best seen  {} {:.1f}: {} (above the probe's own measurement)\n", f.name,
                   c.*f.value, it->second);
    if (!gpu.is_null()) {
      if (!gpu["present"].get<bool>()) {
        fmt::print("gpu        none ({})\n", gpu["device"].get<std::string>());
      } else {
        fmt::print("gpu        {}\n", gpu["device"].get<std::string>());
        fmt::print("gpu copy   {:8.1f} GB/s    (read + write counted, cold L2)\n",
                   gpu["copy_gbps"].get<double>());
        fmt::print("gpu bf16   {:8.1f} TFLOP/s at {}^3 ({})\n", gpu["bf16_tflops"].get<double>(),
                   gpu["gemm_size"].get<std::int64_t>(), gpu["library"].get<std::string>());
        if (gpu.contains("fp8_tflops"))
          fmt::print("gpu fp8    {:8.1f} TFLOP/s at {}^3 ({})\n", gpu["fp8_tflops"].get<double>(),
                     gpu["gemm_size"].get<std::int64_t>(), gpu["fp8_scaling"].get<std::string>());
      }
    }
    if (!o->out.empty()) emit_json(j, o->out, false);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
