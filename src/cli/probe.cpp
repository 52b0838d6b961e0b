// attain probe: this host's measured ceilings (shown by src/device/probe_report.cpp).
#include "device/probe.hpp"

#include <fmt/format.h>

#include "attain/device.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

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
    const nlohmann::json gpu = probe::probe_gpu_json(!o->json);
    const nlohmann::json j = probe::probe_json(c, gpu);
    if (o->json) {
      emit_json(j, o->out, true);
      return 0;
    }
    fmt::print("{}", probe::probe_text(c, gpu));
    if (!o->out.empty()) emit_json(j, o->out, false);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
