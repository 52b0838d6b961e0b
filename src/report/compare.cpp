// attain compare: the speed of one results series relative to another, op by op.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "attain/report.hpp"

namespace attain {
namespace {

std::string pick_backend(const ResultsFile& f, const std::string& want, const std::string& file) {
  std::vector<std::string> names;
  for (const auto& r : f.results)
    if (std::find(names.begin(), names.end(), r.backend) == names.end()) names.push_back(r.backend);
  if (!want.empty()) {
    if (std::find(names.begin(), names.end(), want) == names.end())
      throw InputError(fmt::format("{} has no results of backend '{}'", file, excerpt(want)));
    return want;
  }
  if (names.empty()) throw InputError(fmt::format("{} holds no results", file));
  return names.front();
}

}  // namespace

Comparison compare_results(const ResultsFile& fa, const std::string& label_a, std::string backend_a,
                           const ResultsFile* fb, const std::string& label_b,
                           std::string backend_b) {
  const ResultsFile& rb = fb ? *fb : fa;
  const std::string& file_b = fb ? label_b : label_a;
  backend_a = pick_backend(fa, backend_a, label_a);
  if (backend_b.empty() && !fb) {
    for (const auto& r : fa.results)
      if (r.backend != backend_a) {
        backend_b = r.backend;
        break;
      }
    if (backend_b.empty())
      throw InputError(fmt::format("{} holds one backend: give a second file", label_a));
  }
  backend_b = pick_backend(rb, backend_b, file_b);
  std::map<std::string, const Result*> ma, mb;
  for (const auto& r : fa.results)
    if (r.backend == backend_a && r.status == "ok") ma[r.op.op.spec()] = &r;
  for (const auto& r : rb.results)
    if (r.backend == backend_b && r.status == "ok") mb[r.op.op.spec()] = &r;
  Comparison c;
  c.a = fmt::format("{}:{}", label_a, backend_a);
  c.b = fmt::format("{}:{}", file_b, backend_b);
  std::vector<double> ratio, eff_a, eff_b;
  struct Values {
    std::vector<double> speed, eff_a, eff_b;
  };
  std::map<std::string, Values> groups;
  for (const auto& [spec, a] : ma) {
    auto it = mb.find(spec);
    if (it == mb.end()) {
      c.only_a.push_back(spec);
      continue;
    }
    const Result* b = it->second;
    const double r = b->median_s / a->median_s;  // speed of A relative to B
    ratio.push_back(r), eff_a.push_back(a->efficiency), eff_b.push_back(b->efficiency);
    (r > 1 ? c.wins_a : c.wins_b) += (r == 1 ? 0 : 1);
    c.rows.push_back({spec, a->median_s, b->median_s, r, a->efficiency, b->efficiency});
    // Groups by the op's dtype and kind, and by the phase either side records.
    const std::string phase = a->op.prov.phase.empty() ? b->op.prov.phase : a->op.prov.phase;
    for (const std::string& g : {"dtype=" + std::string(dtype_name(a->op.op.dtype)),
                                 "kind=" + std::string(kind_name(a->op.op.kind)),
                                 phase.empty() ? std::string() : "phase=" + phase}) {
      if (g.empty()) continue;
      Values& v = groups[g];
      v.speed.push_back(r), v.eff_a.push_back(a->efficiency), v.eff_b.push_back(b->efficiency);
    }
  }
  for (const auto& [spec, b] : mb)
    if (!ma.count(spec)) c.only_b.push_back(spec);
  for (auto& [g, v] : groups)
    c.by[g] = {aggregate(v.speed), aggregate(v.eff_a), aggregate(v.eff_b)};
  if (ratio.empty())
    throw InputError(fmt::format("no op ran successfully in both {} and {}", c.a, c.b));
  c.speed = aggregate(ratio);
  c.efficiency_a_geomean = aggregate(eff_a).geomean;
  c.efficiency_b_geomean = aggregate(eff_b).geomean;
  return c;
}

nlohmann::json to_json(const Comparison& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows)
    rows.push_back({{"spec", r.spec},
                    {"a_s", r.a_s},
                    {"b_s", r.b_s},
                    {"speed_a_over_b", r.speed_a_over_b},
                    {"efficiency_a", r.efficiency_a},
                    {"efficiency_b", r.efficiency_b}});
  nlohmann::json by = nlohmann::json::object();
  for (const auto& [g, v] : c.by)
    by[g] = {{"ops", v.speed.count},
             {"speed_a_over_b", to_json(v.speed)},
             {"efficiency_a_geomean", v.efficiency_a.geomean},
             {"efficiency_b_geomean", v.efficiency_b.geomean}};
  const Aggregate& ag = c.speed;
  return {{"a", c.a},
          {"b", c.b},
          {"ops", c.rows.size()},
          {"speed_a_over_b",
           {{"geomean", ag.geomean}, {"median", ag.median}, {"q1", ag.q1}, {"q3", ag.q3}}},
          {"wins_a", c.wins_a},
          {"wins_b", c.wins_b},
          {"efficiency_a_geomean", c.efficiency_a_geomean},
          {"efficiency_b_geomean", c.efficiency_b_geomean},
          {"by", by},
          {"only_a", c.only_a},
          {"only_b", c.only_b},
          {"rows", rows}};
}

std::string comparison_text(const Comparison& c) {
  std::string s = fmt::format("{:<60} {:>12} {:>12} {:>9} {:>7} {:>7}\n", "op", "A time", "B time",
                              "A/B", "eff A", "eff B");
  // A file judged against no roofline (a speeds-only run) has no efficiencies: "-", not 0.
  auto one = [](double e) { return e > 0 ? fmt::format("{:.3f}", e) : std::string("-"); };
  for (const auto& r : c.rows)
    s += fmt::format("{:<60} {:>10.3f}ms {:>10.3f}ms {:>8.2f}x {:>7} {:>7}\n", r.spec.substr(0, 60),
                     r.a_s * 1e3, r.b_s * 1e3, r.speed_a_over_b, one(r.efficiency_a),
                     one(r.efficiency_b));
  const Aggregate& ag = c.speed;
  s += fmt::format("\nA = {}\nB = {}\n", c.a, c.b);
  s += fmt::format(
      "{} ops in common: A runs at {:.1f}% of B's speed (geomean; median {:.1f}%, quartiles "
      "{:.1f}%..{:.1f}%)\n",
      c.rows.size(), 100 * ag.geomean, 100 * ag.median, 100 * ag.q1, 100 * ag.q3);
  s += fmt::format("wins: A {}, B {}; geomean efficiency: A {}, B {}\n", c.wins_a, c.wins_b,
                   one(c.efficiency_a_geomean), one(c.efficiency_b_geomean));
  s += fmt::format("\n{:<22} {:>5} {:>10} {:>8} {:>8}\n", "group", "ops", "A vs B", "eff A",
                   "eff B");
  auto eff = [](const Aggregate& a) {
    return a.count ? fmt::format("{:.1f}%", 100 * a.geomean) : std::string("-");
  };
  for (const auto& [g, v] : c.by)
    s += fmt::format("{:<22} {:>5} {:>9.1f}% {:>8} {:>8}\n", g, v.speed.count,
                     100 * v.speed.geomean, eff(v.efficiency_a), eff(v.efficiency_b));
  auto unmatched = [&](const std::vector<std::string>& specs, const char* side) {
    if (specs.empty()) return;
    s += fmt::format("\n{} op(s) ran only in {}:", specs.size(), side);
    for (std::size_t i = 0; i < specs.size() && i < 10; ++i) s += "\n  " + specs[i];
    if (specs.size() > 10)
      s += fmt::format("\n  ... and {} more (--json lists them)", specs.size() - 10);
    s += "\n";
  };
  unmatched(c.only_a, "A");
  unmatched(c.only_b, "B");
  return s;
}

}  // namespace attain
