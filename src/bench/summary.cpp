#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "attain/bench.hpp"

namespace attain {

double quantile_sorted(const std::vector<double>& v, double q) {
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

namespace {

std::string human_time(double s) {
  if (s >= 1) return fmt::format("{:.2f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

}  // namespace

Aggregate aggregate(std::vector<double> v) {
  Aggregate a;
  v.erase(
      std::remove_if(v.begin(), v.end(), [](double x) { return !(x > 0) || !std::isfinite(x); }),
      v.end());
  a.count = v.size();
  if (v.empty()) return a;
  std::sort(v.begin(), v.end());
  double logsum = 0;
  for (double x : v) logsum += std::log(x);
  a.geomean = std::exp(logsum / static_cast<double>(v.size()));
  a.median = quantile_sorted(v, 0.5), a.q1 = quantile_sorted(v, 0.25),
  a.q3 = quantile_sorted(v, 0.75);
  return a;
}

Summary summarize(const std::vector<Result>& results, const std::vector<std::string>& order) {
  Summary s;
  std::map<std::string, std::map<std::string, std::vector<double>>> eff;
  std::map<std::string, std::vector<double>> local;
  std::map<std::string, std::map<std::string, double>> time;  // backend -> spec -> median
  for (const auto& r : results) {
    ++s.status_counts[r.backend][r.status];
    if (r.status != "ok") continue;
    // The speed ratios keep every op both ran (a time is a time); the efficiencies leave out
    // those judged against a ceiling that is wrong.
    time[r.backend][r.op.op.spec()] = r.median_s;
    if (r.exceeds_ceiling()) {
      ++s.ceiling_errors[r.backend];
      continue;
    }
    if (r.local_efficiency > 0 && r.local_efficiency <= 1.0)
      local[r.backend].push_back(r.local_efficiency);
    auto& e = eff[r.backend];
    e["all"].push_back(r.efficiency);
    e["phase=" + r.op.prov.phase].push_back(r.efficiency);
    e["kind=" + std::string(kind_name(r.op.op.kind))].push_back(r.efficiency);
    e["dtype=" + std::string(dtype_name(r.op.op.dtype))].push_back(r.efficiency);
  }
  for (auto& [b, groups] : eff)
    for (auto& [g, v] : groups) s.efficiency[b][g] = aggregate(v);
  for (auto& [b, v] : local) s.local_efficiency[b] = aggregate(std::move(v));
  // Each backend against the first one named: time_other / time_first (> 1: first is faster).
  for (std::size_t i = 1; i < order.size(); ++i) {
    const auto& a = order[0];
    const auto& b = order[i];
    std::vector<double> ratios;
    for (const auto& [spec, ta] : time[a]) {
      auto it = time[b].find(spec);
      if (it != time[b].end()) ratios.push_back(it->second / ta);
    }
    s.speed_ratio[a + "/" + b] = aggregate(ratios);
  }
  return s;
}

nlohmann::json to_json(const Aggregate& a) {
  return nlohmann::json{
      {"count", a.count}, {"geomean", a.geomean}, {"median", a.median}, {"q1", a.q1}, {"q3", a.q3}};
}

nlohmann::json to_json(const Summary& s) {
  nlohmann::json j = {{"efficiency", nlohmann::json::object()},
                      {"speed_ratio", nlohmann::json::object()},
                      {"status_counts", s.status_counts},
                      {"ceiling_errors", s.ceiling_errors}};
  for (const auto& [b, a] : s.local_efficiency) j["local_efficiency"][b] = to_json(a);
  for (const auto& [b, groups] : s.efficiency)
    for (const auto& [g, a] : groups) j["efficiency"][b][g] = to_json(a);
  for (const auto& [k, a] : s.speed_ratio) j["speed_ratio"][k] = to_json(a);
  return j;
}

std::string format_summary(const Summary& s, const std::vector<std::string>& order) {
  std::string out =
      "\nEfficiency = achieved / attainable (roofline of this machine), geometric mean over ops "
      "that ran:\n";
  for (const auto& b : order) {
    auto it = s.efficiency.find(b);
    const auto& counts =
        s.status_counts.count(b) ? s.status_counts.at(b) : std::map<std::string, std::size_t>{};
    std::string cs;
    for (const auto& [st, n] : counts) cs += fmt::format("{}{} {}", cs.empty() ? "" : ", ", n, st);
    if (const auto ce = s.ceiling_errors.find(b); ce != s.ceiling_errors.end())
      cs += fmt::format(", of them {} above the ceiling (left out)", ce->second);
    if (it == s.efficiency.end()) {
      out += fmt::format("  {:<10} no op ran ({})\n", b, cs);
      continue;
    }
    const auto& all = it->second.at("all");
    out += fmt::format("  {:<10} {:.3f} (median {:.3f}, q1 {:.3f}, q3 {:.3f}; {})\n", b,
                       all.geomean, all.median, all.q1, all.q3, cs);
    std::string line;
    for (const auto& [g, a] : it->second) {
      if (g == "all") continue;
      line += fmt::format("{}{} {:.3f} (n={})", line.empty() ? "" : ", ", g, a.geomean, a.count);
    }
    out += "             " + line + "\n";
    if (const auto lo = s.local_efficiency.find(b); lo != s.local_efficiency.end())
      out += fmt::format(
          "             against the ceilings sampled beside each op: {:.3f} (median {:.3f}; {} "
          "ops)\n",
          lo->second.geomean, lo->second.median, lo->second.count);
  }
  if (!s.speed_ratio.empty()) {
    out +=
        "Speed ratio (time of the second / time of the first, over ops both ran; > 1: the first is "
        "faster):\n";
    for (const auto& [k, a] : s.speed_ratio) {
      if (a.count == 0) {
        out += fmt::format("  {:<22} no op in common\n", k);
        continue;
      }
      out += fmt::format("  {:<22} geomean {:.2f}x (median {:.2f}, q1 {:.2f}, q3 {:.2f}; {} ops)\n",
                         k, a.geomean, a.median, a.q1, a.q3, a.count);
    }
  }
  return out;
}

std::string format_table(const std::vector<Result>& results,
                         const std::vector<std::string>& order) {
  // One row per op: for each backend, median time, GFLOP/s and efficiency (or why not).
  std::vector<std::string> specs;
  std::map<std::string, std::map<std::string, const Result*>> by;
  for (const auto& r : results) {
    const auto spec = r.op.op.spec();
    if (!by.count(spec)) specs.push_back(spec);
    by[spec][r.backend] = &r;
  }
  std::string out = fmt::format("{:<58} {:<8}", "op", "phase");
  for (const auto& b : order) out += fmt::format(" | {:>28}", b + ": time GFLOP/s eff");
  out += "\n";
  for (const auto& spec : specs) {
    const Result* any = by[spec].begin()->second;
    std::string shown = spec;  // long specs cut to the column
    if (shown.size() > 58) shown.resize(55), shown += "...";
    out += fmt::format("{:<58} {:<8}", shown, any->op.prov.phase);
    for (const auto& b : order) {
      auto it = by[spec].find(b);
      if (it == by[spec].end()) {
        out += fmt::format(" | {:>28}", "-");
        continue;
      }
      const Result& r = *it->second;
      if (r.exceeds_ceiling())
        out += fmt::format(" | {:>10} {:>9.1f} {:>6}", human_time(r.median_s), r.tflops * 1e3,
                           "CEIL!");
      else if (r.status == "ok")
        out += fmt::format(" | {:>10} {:>9.1f} {:>6.2f}", human_time(r.median_s), r.tflops * 1e3,
                           r.efficiency);
      else
        out += fmt::format(" | {:>28}", r.status);
    }
    out += "\n";
  }
  return out;
}

std::string format_headline(const ResultsFile& f, std::vector<std::string> order) {
  if (order.empty())
    for (const auto& r : f.results)
      if (std::find(order.begin(), order.end(), r.backend) == order.end())
        order.push_back(r.backend);
  const Summary s = summarize(f.results, order);
  std::set<std::string> specs;
  for (const auto& r : f.results) specs.insert(r.op.op.spec());
  const std::size_t total = f.complete ? specs.size() : f.ops_total;
  auto pct = [](const Aggregate& a) {
    return a.count > 0 ? fmt::format("{:.1f}%", 100 * a.geomean) : std::string("-");
  };
  // The dtypes and phases that occur, in a fixed order.
  std::vector<std::string> groups;
  for (const char* g :
       {"dtype=fp32", "dtype=fp16", "dtype=bf16", "dtype=fp8", "phase=prefill", "phase=decode"})
    for (const auto& [b, by] : s.efficiency)
      if (by.count(g)) {
        groups.push_back(g);
        break;
      }
  std::string out = "| backend | ops run | efficiency | near each op |";
  for (const auto& g : groups) out += fmt::format(" {} |", g.substr(g.find('=') + 1));
  const std::string first = order.empty() ? "" : order.front();
  out += fmt::format(" {}'s speed vs it |\n| --- | ---: | ---: | ---: |", first);
  for (std::size_t i = 0; i < groups.size(); ++i) out += " ---: |";
  out += " ---: |\n";
  for (const auto& b : order) {
    const auto counts =
        s.status_counts.count(b) ? s.status_counts.at(b) : std::map<std::string, std::size_t>{};
    const std::size_t ok = counts.count("ok") ? counts.at("ok") : 0;
    const auto eff =
        s.efficiency.count(b) ? s.efficiency.at(b) : std::map<std::string, Aggregate>{};
    const Aggregate all = eff.count("all") ? eff.at("all") : Aggregate{};
    const Aggregate local = s.local_efficiency.count(b) ? s.local_efficiency.at(b) : Aggregate{};
    out += fmt::format("| {} | {} of {} | **{}** | {} |", b, ok, total, pct(all), pct(local));
    for (const auto& g : groups)
      out += fmt::format(" {} |", eff.count(g) ? pct(eff.at(g)) : std::string("-"));
    const auto ratio = s.speed_ratio.find(first + "/" + b);
    out += b == first || ratio == s.speed_ratio.end() || ratio->second.count == 0
               ? std::string(" - |\n")
               : fmt::format(" {:.2f}x ({} ops) |\n", ratio->second.geomean, ratio->second.count);
  }
  const Roofline& r = f.machine.roofline;
  out += fmt::format(
      "\n{}, {} threads; efficiency = achieved / attainable against the best ceilings known at "
      "the run's end: fp32 FMA {:.1f} GFLOP/s{}, read {:.1f} GB/s. Geometric means over the ops "
      "that ran; speed = time of the other / time of {} over the ops both ran.",
      f.machine.cpu_model, f.machine.threads, r.peak_tflops * 1e3,
      r.bf16_peak_tflops > 0 ? fmt::format(", bf16 dot {:.1f}", r.bf16_peak_tflops * 1e3) : "",
      r.bw_gbps, first);
  std::vector<double> read, fma;
  for (const auto& c : f.machine.checks) read.push_back(c.read_gbps), fma.push_back(c.fma_gflops);
  if (!read.empty()) {
    const auto [rlo, rhi] = std::minmax_element(read.begin(), read.end());
    const auto [flo, fhi] = std::minmax_element(fma.begin(), fma.end());
    out += fmt::format(
        " The machine during the run ({} checks): read {:.1f}-{:.1f} GB/s, fp32 FMA {:.0f}-{:.0f} "
        "GFLOP/s; \"near each op\" judges each op against the checks just before and after it.",
        read.size(), *rlo, *rhi, *flo, *fhi);
  }
  std::size_t errors = 0;
  for (const auto& [b, n] : s.ceiling_errors) errors += n;
  if (errors > 0)
    out += fmt::format(" {} result{} above the ceiling (a ceiling error) left out.", errors,
                       errors == 1 ? "" : "s");
  if (!f.complete)
    out += fmt::format(" **Incomplete run: {} of {} ops so far.**", f.ops_done, f.ops_total);
  return out + "\n";
}

}  // namespace attain
