// The report's data: series (file x backend), their efficiency aggregates, and pairwise speed.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attain/report.hpp"

namespace attain {

ReportModel build_report_model(std::vector<ReportInput> inputs) {
  ReportModel m;
  m.inputs = std::move(inputs);
  const bool many = m.inputs.size() > 1;
  for (std::size_t fi = 0; fi < m.inputs.size(); ++fi) {
    const ResultsFile& f = m.inputs[fi].file;
    std::vector<std::string> order;  // backends in file order
    for (const auto& r : f.results)
      if (std::find(order.begin(), order.end(), r.backend) == order.end())
        order.push_back(r.backend);
    // summarize() gives the per-group geomeans; the series keep the raw results for charts.
    const Summary sum = summarize(f.results, order);
    for (const auto& b : order) {
      ReportSeries s;
      s.name = many ? fmt::format("{}:{}", m.inputs[fi].label, b) : b;
      s.file = fi;
      s.backend = b;
      std::vector<double> eff, local;
      for (const auto& r : f.results) {
        if (r.backend != b) continue;
        ++s.status_counts[r.status];
        s.projected = s.projected || r.projected;
        if (r.status != "ok") continue;
        s.ok.push_back(&r);
        if (r.exceeds_ceiling()) {
          s.ceiling_errors.push_back(&r);
          continue;
        }
        if (r.efficiency > 0 && std::isfinite(r.efficiency)) eff.push_back(r.efficiency);
        if (r.local_efficiency > 0 && r.local_efficiency <= 1) local.push_back(r.local_efficiency);
      }
      s.efficiency = aggregate(eff);
      s.local_efficiency = aggregate(local);
      if (!eff.empty()) {
        const auto [lo, hi] = std::minmax_element(eff.begin(), eff.end());
        s.eff_min = *lo, s.eff_max = *hi;
      }
      if (auto it = sum.efficiency.find(b); it != sum.efficiency.end()) s.eff_by = it->second;
      m.series.push_back(std::move(s));
    }
  }
  // Per series: spec -> time of its first ok result of that spec.
  std::vector<std::map<std::string, double>> times(m.series.size());
  for (std::size_t i = 0; i < m.series.size(); ++i)
    for (const Result* r : m.series[i].ok) times[i].emplace(r->op.op.spec(), r->median_s);
  for (std::size_t a = 0; a < m.series.size(); ++a)
    for (std::size_t b = a + 1; b < m.series.size(); ++b) {
      ReportPair p;
      p.a = a, p.b = b;
      p.projected = m.series[a].projected || m.series[b].projected;
      std::vector<double> ratios;
      for (const auto& [spec, ta] : times[a]) {
        auto it = times[b].find(spec);
        if (it == times[b].end()) continue;
        const double r = it->second / ta;  // speed of a relative to b
        ratios.push_back(r);
        if (r > 1)
          ++p.wins_a;
        else if (r < 1)
          ++p.wins_b;
        else
          ++p.ties;
      }
      p.ratio = aggregate(ratios);
      m.pairs.push_back(p);
    }
  return m;
}

ReportModel build_report_model(ReportFiles files) {
  ReportModel m = build_report_model(std::move(files.results));
  m.runs = std::move(files.runs);
  m.sweeps = std::move(files.sweeps);
  return m;
}

nlohmann::json report_summary_json(const ReportModel& m) {
  nlohmann::json series = nlohmann::json::array();
  for (const auto& s : m.series) {
    nlohmann::json by = nlohmann::json::object();
    for (const auto& [g, a] : s.eff_by) by[g] = to_json(a);
    series.push_back({{"name", s.name},
                      {"file", m.inputs[s.file].label},
                      {"backend", s.backend},
                      {"device", m.inputs[s.file].file.machine.device},
                      {"projected", s.projected},
                      {"status_counts", s.status_counts},
                      {"points", s.ok.size()},
                      {"efficiency", to_json(s.efficiency)},
                      {"local_efficiency", to_json(s.local_efficiency)},
                      {"ceiling_errors", s.ceiling_errors.size()},
                      {"efficiency_by", by}});
  }
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& p : m.pairs)
    pairs.push_back({{"a", m.series[p.a].name},
                     {"b", m.series[p.b].name},
                     {"speed_a_over_b", to_json(p.ratio)},
                     {"wins_a", p.wins_a},
                     {"wins_b", p.wins_b},
                     {"ties", p.ties},
                     {"projected", p.projected}});
  auto stat = [](const ClusterStat& st) {
    return nlohmann::json{{"mean", st.mean}, {"ci95", {st.lo, st.hi}}, {"n", st.n}};
  };
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& in : m.runs) {
    const ClusterRun& r = in.run;
    runs.push_back({{"file", in.label},
                    {"model", r.model},
                    {"device", r.device},
                    {"chips", r.chips},
                    {"runs", r.runs},
                    {"ettr", stat(r.ettr)},
                    {"goodput", stat(r.goodput)},
                    {"mfu", r.mfu},
                    {"unexpected", stat(r.unexpected)},
                    {"planned", stat(r.planned)},
                    {"timeline_run", r.timeline_run},
                    {"timeline_events", r.timeline.size()},
                    {"kept_compute_h", cluster_progress(r).back().second},
                    {"command", r.command}});
  }
  nlohmann::json sweeps = nlohmann::json::array();
  for (const auto& in : m.sweeps) {
    nlohmann::json chips = nlohmann::json::array(), variants = nlohmann::json::array();
    for (const auto& p : in.sweep.points) chips.push_back(p.chips);
    for (const auto& v : in.sweep.variants) variants.push_back(v.first);
    sweeps.push_back({{"file", in.label},
                      {"chips", chips},
                      {"variants", variants},
                      {"command", in.sweep.command}});
  }
  return {{"series", series}, {"pairs", pairs}, {"cluster_runs", runs}, {"cluster_sweeps", sweeps}};
}

}  // namespace attain
