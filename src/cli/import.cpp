// attain import: timings measured elsewhere (CSV) -> a results file for a device of the database.
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "attain/files.hpp"
#include "attain/report.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    std::string file, device, out, backend = "imported";
    std::vector<std::string> assume_peaks;
    bool json = false, strict = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("import",
                                 "Turn timings measured elsewhere (CSV: spec or "
                                 "m,n,k,dtype; time_us|tflops) into a results file for a device");
  sub->add_option("file", o->file,
                  "FILE.csv with a header row, any column order (attain catalog --csv writes one "
                  "to fill in)")
      ->required();
  sub->add_option("--device", o->device, "device id (attain devices) or a device file's path")
      ->required();
  sub->add_option("--assume-peak", o->assume_peaks,
                  "fill a peak the vendor does not publish, labelled as assumed in the results: "
                  "bf16=fp8/2, bf16=500 (repeatable)");
  sub->add_option("-o,--out", o->out, "the results file to write");
  sub->add_option("--backend", o->backend, "backend name given to the imported rows")
      ->capture_default_str();
  sub->add_flag("--strict", o->strict, "fail when any row does not parse");
  sub->add_flag("--json", o->json, "print the results file (JSON) on stdout");
  set_action(sub, [o] {
    if (o->out.empty() && !o->json)
      throw InputError("attain import needs -o/--out RESULTS.json (or --json)");
    if (o->backend.empty()) throw InputError("--backend must not be empty");
    const DeviceSpec dev = load_device(o->device, o->assume_peaks);
    const std::string csv = read_input_file(o->file, kMaxResultsBytes, "CSV file");
    ImportOptions opt;
    opt.backend = o->backend;
    opt.origin = o->file;
    ImportOutcome res = import_csv(csv, dev, opt);
    for (const auto& s : res.skipped)
      fmt::print(stderr, "{}: line {}: skipped: {}\n", o->file, s.line, s.message);
    for (const auto& w : res.warnings)
      fmt::print(stderr, "{}: line {}: warning: {}\n", o->file, w.line, w.message);
    if (o->strict && !res.skipped.empty())
      throw InputError(
          fmt::format("{}: {} row(s) did not parse (--strict)", o->file, res.skipped.size()));
    res.file.created = now_iso();
    res.file.command = command_line();
    if (!o->out.empty()) write_results(o->out, res.file);
    if (o->json) {
      emit_json(to_json(res.file), "", true);
      return 0;
    }
    std::string ignored;
    for (const auto& c : res.ignored_columns) ignored += (ignored.empty() ? "" : ", ") + c;
    // The figure as every summary gives it: rows above the roofline (wrong units, or a wrong
    // device) are warned about above and left out.
    const Summary sum = summarize(res.file.results, {o->backend});
    const auto all = sum.efficiency.find(o->backend);
    const auto above = sum.ceiling_errors.find(o->backend);
    for (const auto& a : dev.assumptions) fmt::print("{}\n", a);
    fmt::print("imported {} row(s) from {} for device {} ({}), backend '{}'; {} skipped{}\n",
               res.file.results.size(), o->file, dev.id, dev.name, o->backend, res.skipped.size(),
               ignored.empty() ? "" : "; ignored columns: " + ignored);
    if (all == sum.efficiency.end()) {
      fmt::print("efficiency against {}'s roofline: no figure, every row is above it\n", dev.id);
    } else {
      const Aggregate& a = all->second.at("all");
      fmt::print(
          "efficiency against {}'s roofline: geomean {:.1f}% (median {:.1f}%, quartiles "
          "{:.1f}%..{:.1f}%){}\n",
          dev.id, 100 * a.geomean, 100 * a.median, 100 * a.q1, 100 * a.q3,
          above != sum.ceiling_errors.end()
              ? fmt::format("; {} row(s) above the roofline left out", above->second)
              : "");
    }
    if (!o->out.empty()) fmt::print("results written to {}\n", o->out);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
