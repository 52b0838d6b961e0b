// attain compare: per-op speed ratio between two results (files or backends).
#include <fmt/format.h>

#include <map>
#include <set>

#include "attain/bench.hpp"
#include "attain/results.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

std::string pick_backend(const ResultsFile& f, const std::string& want, const std::string& file) {
  std::vector<std::string> names;
  for (const auto& r : f.results)
    if (std::find(names.begin(), names.end(), r.backend) == names.end()) names.push_back(r.backend);
  if (!want.empty()) {
    if (std::find(names.begin(), names.end(), want) == names.end())
      throw InputError(fmt::format("{} has no results of backend '{}'", file, want));
    return want;
  }
  if (names.empty()) throw InputError(fmt::format("{} holds no results", file));
  return names.front();
}

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
    const ResultsFile fb = o->files.size() > 1 ? read_results(o->files[1]) : ResultsFile{};
    const ResultsFile& rb = o->files.size() > 1 ? fb : fa;
    const std::string name_b_file = o->files.size() > 1 ? o->files[1] : o->files[0];
    const std::string ba = pick_backend(fa, o->a, o->files[0]);
    std::string bb = o->b;
    if (bb.empty() && o->files.size() == 1) {
      for (const auto& r : fa.results)
        if (r.backend != ba) {
          bb = r.backend;
          break;
        }
      if (bb.empty())
        throw InputError(fmt::format("{} holds one backend: give a second file", o->files[0]));
    }
    bb = pick_backend(rb, bb, name_b_file);
    std::map<std::string, const Result*> ma, mb;
    for (const auto& r : fa.results)
      if (r.backend == ba && r.status == "ok") ma[r.op.op.spec()] = &r;
    for (const auto& r : rb.results)
      if (r.backend == bb && r.status == "ok") mb[r.op.op.spec()] = &r;
    std::vector<double> ratio, eff_a, eff_b;
    std::size_t wins_a = 0, wins_b = 0;
    nlohmann::json rows = nlohmann::json::array();
    const std::string la = fmt::format("{}:{}", o->files[0], ba),
                      lb = fmt::format("{}:{}", name_b_file, bb);
    if (!o->json)
      fmt::print("{:<60} {:>12} {:>12} {:>9} {:>7} {:>7}\n", "op", "A time", "B time", "A/B",
                 "eff A", "eff B");
    for (const auto& [spec, a] : ma) {
      auto it = mb.find(spec);
      if (it == mb.end()) continue;
      const Result* b = it->second;
      const double r = b->median_s / a->median_s;  // speed of A relative to B
      ratio.push_back(r), eff_a.push_back(a->efficiency), eff_b.push_back(b->efficiency);
      (r > 1 ? wins_a : wins_b) += (r == 1 ? 0 : 1);
      rows.push_back({{"spec", spec},
                      {"a_s", a->median_s},
                      {"b_s", b->median_s},
                      {"speed_a_over_b", r},
                      {"efficiency_a", a->efficiency},
                      {"efficiency_b", b->efficiency}});
      if (!o->json)
        fmt::print("{:<60} {:>10.3f}ms {:>10.3f}ms {:>8.2f}x {:>7.3f} {:>7.3f}\n",
                   spec.substr(0, 60), a->median_s * 1e3, b->median_s * 1e3, r, a->efficiency,
                   b->efficiency);
    }
    if (ratio.empty())
      throw InputError(fmt::format("no op ran successfully in both {} and {}", la, lb));
    const Aggregate ag = aggregate(ratio), ea = aggregate(eff_a), eb = aggregate(eff_b);
    const nlohmann::json j = {
        {"a", la},
        {"b", lb},
        {"ops", ratio.size()},
        {"speed_a_over_b",
         {{"geomean", ag.geomean}, {"median", ag.median}, {"q1", ag.q1}, {"q3", ag.q3}}},
        {"wins_a", wins_a},
        {"wins_b", wins_b},
        {"efficiency_a_geomean", ea.geomean},
        {"efficiency_b_geomean", eb.geomean},
        {"rows", rows}};
    if (o->json) {
      emit_json(j, o->out, true);
      return 0;
    }
    fmt::print("\nA = {}\nB = {}\n", la, lb);
    fmt::print(
        "{} ops in common: A runs at {:.1f}% of B's speed (geomean; median {:.1f}%, quartiles "
        "{:.1f}%..{:.1f}%)\n",
        ratio.size(), 100 * ag.geomean, 100 * ag.median, 100 * ag.q1, 100 * ag.q3);
    fmt::print("wins: A {}, B {}; geomean efficiency: A {:.3f}, B {:.3f}\n", wins_a, wins_b,
               ea.geomean, eb.geomean);
    if (!o->out.empty()) emit_json(j, o->out, false);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
