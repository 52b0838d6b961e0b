// attain devices: the device database.
#include <fmt/format.h>

#include "attain/device.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    bool json = false;
    std::string out;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "devices", "List the device database (data/devices): peaks, bandwidth, sources");
  sub->add_flag("--json", o->json, "print JSON");
  sub->add_option("--out", o->out, "also write the JSON to this file");
  set_action(sub, [o] {
    const auto devs = load_devices();
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& d : devs)
      arr.push_back({{"id", d.id},
                     {"name", d.name},
                     {"vendor", d.vendor},
                     {"kind", d.kind},
                     {"peak_tflops", d.peak_tflops},
                     {"mem_bandwidth_gbps", d.mem_bandwidth_gbps},
                     {"mem_capacity_gb", d.mem_capacity_gb},
                     {"interconnect", d.interconnect},
                     {"interconnect_gbps", d.interconnect_gbps},
                     {"tdp_w", d.tdp_w},
                     {"sources", d.sources}});
    if (o->json) {
      emit_json(arr, o->out, true);
      return 0;
    }
    fmt::print("{:<14} {:<28} {:>9} {:>9} {:>9} {:>9} {:>8} {:>13}\n", "id", "name", "bf16 TF",
               "fp8 TF", "fp4 TF", "HBM GB/s", "HBM GB", "link GB/s");
    auto tf = [](const DeviceSpec& d, const char* k) {
      auto it = d.peak_tflops.find(k);
      return it == d.peak_tflops.end() ? std::string("-") : fmt::format("{:.0f}", it->second);
    };
    for (const auto& d : devs)
      fmt::print("{:<14} {:<28} {:>9} {:>9} {:>9} {:>9.0f} {:>8.0f} {:>13.0f}\n", d.id, d.name,
                 tf(d, "bf16"), tf(d, "fp8"), tf(d, "fp4"), d.mem_bandwidth_gbps, d.mem_capacity_gb,
                 d.interconnect_gbps);
    fmt::print("dense peaks; sources: attain devices --json (field 'sources')\n");
    if (!o->out.empty()) emit_json(arr, o->out, false);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
