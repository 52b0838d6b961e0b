// attain devices: the device database (its listing: src/device/devices.cpp).
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
    if (!o->json) fmt::print("{}", devices_table(devs));
    if (o->json || !o->out.empty()) emit_json(devices_json(devs), o->out, o->json);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
