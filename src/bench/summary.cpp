#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

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
  std::map<std::string, std::map<std::string, double>> time;  // backend -> spec -> median
  for (const auto& r : results) {
    ++s.status_counts[r.backend][r.status];
    if (r.status != "ok") continue;
    auto& e = eff[r.backend];
    e["all"].push_back(r.efficiency);
    e["phase=" + r.op.prov.phase].push_back(r.efficiency);
    e["kind=" + std::string(kind_name(r.op.op.kind))].push_back(r.efficiency);
    e["dtype=" + std::string(dtype_name(r.op.op.dtype))].push_back(r.efficiency);
    time[r.backend][r.op.op.spec()] = r.median_s;
  }
  for (auto& [b, groups] : eff)
    for (auto& [g, v] : groups) s.efficiency[b][g] = aggregate(v);
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
                      {"status_counts", s.status_counts}};
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
      if (r.status == "ok")
        out += fmt::format(" | {:>10} {:>9.1f} {:>6.2f}", human_time(r.median_s), r.tflops * 1e3,
                           r.efficiency);
      else
        out += fmt::format(" | {:>28}", r.status);
    }
    out += "\n";
  }
  return out;
}

Roofline checked_roofline(const std::vector<CeilingsCheck>& checks) {
  Roofline r;
  for (const auto& c : checks) {
    r.peak_tflops = std::max(r.peak_tflops, c.fma_gflops / 1e3);
    r.bf16_peak_tflops = std::max(r.bf16_peak_tflops, c.bf16_gflops / 1e3);
    r.bw_gbps = std::max(r.bw_gbps, c.read_gbps);
  }
  r.source = "ceilings measured during the run";
  return r;
}

std::map<std::string, Aggregate> checked_efficiency(const std::vector<Result>& results,
                                                    const std::vector<CeilingsCheck>& checks) {
  std::map<std::string, Aggregate> out;
  if (checks.empty()) return out;
  const Roofline roof = checked_roofline(checks);
  std::map<std::string, std::vector<double>> effs;
  for (const auto& r : results) {
    const double attainable = roof.attainable_tflops(r.op.op);
    if (r.status == "ok" && r.tflops > 0 && attainable > 0)
      effs[r.backend].push_back(r.tflops / attainable);
  }
  for (auto& [b, v] : effs) out[b] = aggregate(std::move(v));
  return out;
}

std::string format_check_lines(const std::vector<CeilingsCheck>& checks, const Roofline& p) {
  if (checks.empty()) return "";
  const bool bf16 = p.bf16_peak_tflops > 0;
  std::string out = fmt::format(
      "\nThe machine while the ops ran ({} threads; in brackets the probe's figures, which "
      "those above are computed against):\n",
      checks.front().threads);
  for (const auto& c : checks) {
    out += fmt::format("  {:<6}{:<22} fp32 FMA {:6.1f} GFLOP/s ({:.1f})", c.when, c.at,
                       c.fma_gflops, p.peak_tflops * 1e3);
    if (bf16)
      out += fmt::format("  bf16 dot {:6.1f} ({:.1f})", c.bf16_gflops, p.bf16_peak_tflops * 1e3);
    out += fmt::format("  read {:5.1f} GB/s ({:.1f})\n", c.read_gbps, p.bw_gbps);
  }
  return out;
}

std::string format_checks(const MachineInfo& m, const std::vector<Result>& results,
                          const std::vector<std::string>& order) {
  if (m.checks.empty()) return "";
  std::string out = format_check_lines(m.checks, m.roofline);
  const auto eff = checked_efficiency(results, m.checks);
  out += "Efficiency against the highest of these ceilings, geometric mean over ops that ran:\n";
  for (const auto& b : order) {
    const auto it = eff.find(b);
    if (it != eff.end()) out += fmt::format("  {:<10} {:.3f}\n", b, it->second.geomean);
  }
  return out;
}

}  // namespace attain
