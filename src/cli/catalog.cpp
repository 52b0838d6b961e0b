// attain catalog: the ops of a suite or a model config (the listing: src/catalog/export.cpp).
#include <fmt/format.h>

#include "attain/files.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    OpSource src;
    bool json = false, csv = false, summary = false;
    std::string out, format;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "catalog", "List the matrix ops of a suite (default llm-1055) or a model config");
  o->src.add_to(sub, true);
  sub->add_option("--format", o->format,
                  "table (default), json (an array, one object per op) or csv (a spec column and "
                  "an empty time_us column: run the ops elsewhere, then attain import)");
  sub->add_flag("--json", o->json, "the same as --format json");
  sub->add_flag("--csv", o->csv, "the same as --format csv");
  sub->add_flag("--summary", o->summary,
                "counts by kind, phase, dtype and model; total FLOPs and bytes");
  sub->add_option("--out", o->out, "also write the JSON (or the CSV) to this file");
  set_action(sub, [o] {
    std::string format = o->format.empty() ? "table" : o->format;
    if (o->json + o->csv > 1 || ((o->json || o->csv) && !o->format.empty()))
      throw InputError("--format, --json and --csv choose one output: give one of them");
    if (o->json) format = "json";
    if (o->csv) format = "csv";
    if (format != "table" && format != "json" && format != "csv")
      throw InputError(fmt::format("--format {} (known: table, json, csv)", excerpt(format)));
    if (format == "csv" && o->summary) throw InputError("--summary has no CSV form");
    const auto ops = o->src.resolve("llm-1055");
    if (format == "csv") {
      const std::string csv = catalog_csv(ops);
      if (!o->out.empty()) write_file_atomic(o->out, csv);
      fmt::print("{}", csv);
      return 0;
    }
    const nlohmann::json j = o->summary ? catalog_summary_json(ops) : catalog_json(ops);
    const bool json = format == "json";
    if (!json) fmt::print("{}", o->summary ? catalog_summary_text(ops) : catalog_table_text(ops));
    if (json || !o->out.empty()) emit_json(j, o->out, json);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
