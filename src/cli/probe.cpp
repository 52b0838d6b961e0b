// attain probe: this host's measured ceilings.
#include "device/probe.hpp"

#include <fmt/format.h>

#include "attain/device.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    bool json = false, refresh = false;
    std::string out;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "probe", "Measure (or show the cached) ceilings of this host: FMA peak, bandwidth, ISA");
  sub->add_flag("--refresh", o->refresh, "re-measure instead of using the cache");
  sub->add_flag("--json", o->json, "print JSON");
  sub->add_option("--out", o->out, "also write the JSON to this file");
  set_action(sub, [o] {
    const HostCeilings c = probe_host(o->refresh, !o->json);
    const auto j = probe::to_json(c);
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
    fmt::print("read       {:8.1f} GB/s    1 thread, {:8.1f} all threads\n", c.read_gbps_1t,
               c.read_gbps_all);
    fmt::print("copy       {:8.1f} GB/s    1 thread, {:8.1f} all threads (read + write counted)\n",
               c.copy_gbps_1t, c.copy_gbps_all);
    fmt::print("measured   {}\n", c.measured_at);
    if (!o->out.empty()) emit_json(j, o->out, false);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
