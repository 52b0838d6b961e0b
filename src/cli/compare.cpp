// attain compare: per-op speed ratio between two results (files or backends); the comparison
// is src/report/compare.cpp.
#include <fmt/format.h>

#include "attain/report.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    std::vector<std::string> files;
    std::string a, b, out;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "compare",
      "Speed of A relative to B per op (matched by spec): geomean, median, wins, efficiencies");
  sub->add_option("files", o->files, "A.json [B.json] (one file: compare two of its backends)")
      ->required()
      ->expected(1, 2);
  sub->add_option("--backend-a", o->a, "backend of A (default: the first in the file)");
  sub->add_option("--backend-b", o->b,
                  "backend of B (default: the first in B's file, or the second in one file)");
  sub->add_flag("--json", o->json, "print JSON");
  sub->add_option("--out", o->out, "also write the JSON to this file");
  set_action(sub, [o] {
    const ResultsFile fa = read_results(o->files[0]);
    const bool two = o->files.size() > 1;
    const ResultsFile fb = two ? read_results(o->files[1]) : ResultsFile{};
    const Comparison c = compare_results(fa, o->files[0], o->a, two ? &fb : nullptr,
                                         two ? o->files[1] : o->files[0], o->b);
    if (!o->json) fmt::print("{}", comparison_text(c));
    if (o->json || !o->out.empty()) emit_json(to_json(c), o->out, o->json);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
