// attain project: roofline projection of a suite on a device from the database.
#include <fmt/format.h>

#include "attain/report.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    OpSource src;
    std::string device, like, like_backend, out;
    std::vector<std::string> assume_peaks;
    double efficiency = 0;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("project",
                                 "PROJECT a suite onto a listed device: time = flops / (attainable "
                                 "x efficiency); not a measurement");
  sub->add_option("--device", o->device, "device id (attain devices) or a device file's path")
      ->required();
  sub->add_option("--assume-peak", o->assume_peaks,
                  "fill a peak the vendor does not publish, labelled as assumed in the results: "
                  "bf16=fp8/2, bf16=500 (repeatable)");
  auto* e = sub->add_option(
      "--efficiency", o->efficiency,
      "assumed fraction of attainable reached, in (0, 1] (default 1: the roofline itself)");
  auto* l = sub->add_option(
      "--like", o->like,
      "take the efficiency per op kind and phase from this measured results file (geomeans)");
  e->excludes(l);
  sub->add_option("--like-backend", o->like_backend,
                  "with --like: which backend (default: the first that ran)")
      ->needs(l);
  o->src.add_to(sub, true);
  sub->add_option("-o,--out", o->out,
                  "write the projected results file (every result projected=true)");
  sub->add_flag("--json", o->json, "print the projected results file (JSON) on stdout");
  set_action(sub, [o, e] {
    const DeviceSpec dev = load_device(o->device, o->assume_peaks);
    const EfficiencyModel eff =
        !o->like.empty() ? efficiency_like(read_results(o->like), o->like_backend, o->like)
                         : efficiency_uniform(e->count() > 0 ? o->efficiency : 1.0);
    const auto ops = o->src.resolve("quick");
    ResultsFile f = project_ops(ops, dev, eff);
    f.created = now_iso();
    f.command = command_line();
    if (!o->out.empty()) write_results(o->out, f);
    if (o->json) {
      emit_json(to_json(f), "", true);
      return 0;
    }
    fmt::print("PROJECTION on {} ({}) - computed from the device's roofline, not measured\n",
               dev.id, dev.name);
    fmt::print("efficiency assumed: {}\n", eff.source);
    for (const auto& a : dev.assumptions) fmt::print("{}\n", a);
    fmt::print("{:<58} {:<8} {:>24} {:>28} {:>26}\n", "op", "phase", "projected time",
               "projected throughput", "assumed efficiency");
    std::size_t n_ok = 0;
    double pass_s = 0;
    for (const auto& r : f.results) {
      const std::string spec = r.op.op.spec();
      const std::string shown = spec.size() > 58 ? spec.substr(0, 55) + "..." : spec;
      if (r.status != "ok") {
        fmt::print("{:<58} {:<8} {}: {}\n", shown, r.op.prov.phase, r.status, r.reason);
        continue;
      }
      ++n_ok;
      pass_s += r.median_s * static_cast<double>(std::max<std::int64_t>(1, r.op.prov.count));
      const std::string t = r.median_s >= 1e-3 ? fmt::format("{:.3f} ms", r.median_s * 1e3)
                                               : fmt::format("{:.2f} us", r.median_s * 1e6);
      fmt::print(
          "{:<58} {:<8} {:>14} projected {:>12.1f} TFLOP/s projected {:>8.1f}% (projected)\n",
          shown, r.op.prov.phase, t, r.tflops, 100 * r.efficiency);
    }
    fmt::print(
        "{} of {} ops projected; projected time of all ops x occurrences: {:.3f} ms (projected)\n",
        n_ok, f.results.size(), pass_s * 1e3);
    if (!o->out.empty()) fmt::print("projected results written to {}\n", o->out);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
