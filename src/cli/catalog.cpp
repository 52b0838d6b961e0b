// attain catalog: the ops of a suite or a model config (the listing: src/catalog/export.cpp).
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    OpSource src;
    bool json = false, summary = false;
    std::string out;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "catalog", "List the matrix ops of a suite (default llm-1055) or a model config");
  o->src.add_to(sub, true);
  sub->add_flag("--json", o->json, "print a JSON array, one object per op");
  sub->add_flag("--summary", o->summary,
                "counts by kind, phase, dtype and model; total FLOPs and bytes");
  sub->add_option("--out", o->out, "also write the JSON to this file");
  set_action(sub, [o] {
    const auto ops = o->src.resolve("llm-1055");
    const nlohmann::json j = o->summary ? catalog_summary_json(ops) : catalog_json(ops);
    if (!o->json)
      fmt::print("{}", o->summary ? catalog_summary_text(ops) : catalog_table_text(ops));
    if (o->json || !o->out.empty()) emit_json(j, o->out, o->json);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
