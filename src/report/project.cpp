// Roofline projections: what a listed device would reach on a suite at an assumed efficiency.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "attain/report.hpp"

namespace attain {

namespace {
std::string kind_key(const CatalogOp& op) {
  return fmt::format("kind={}", kind_name(op.op.kind));
}
std::string phase_key(const CatalogOp& op) {
  return "phase=" + op.prov.phase;
}
}  // namespace

double EfficiencyModel::for_op(const CatalogOp& op, std::string* basis) const {
  if (by_group.empty()) {
    if (basis) *basis = "uniform";
    return uniform;
  }
  for (const std::string& key : {kind_key(op) + "," + phase_key(op), kind_key(op), phase_key(op)}) {
    auto it = by_group.find(key);
    if (it != by_group.end()) {
      if (basis) *basis = key;
      return it->second;
    }
  }
  if (basis) *basis = "all";
  return all;
}

EfficiencyModel efficiency_uniform(double e) {
  if (!(e > 0) || e > 1 || !std::isfinite(e))
    throw InputError(
        fmt::format("--efficiency {} must be in (0, 1]: the fraction of attainable reached", e));
  EfficiencyModel m;
  m.uniform = e;
  m.source = fmt::format("--efficiency {}", e);
  return m;
}

EfficiencyModel efficiency_like(const ResultsFile& f, const std::string& backend,
                                const std::string& label) {
  std::string b = backend;
  if (b.empty())
    for (const auto& r : f.results)
      if (r.status == "ok") {
        b = r.backend;
        break;
      }
  std::map<std::string, std::vector<double>> groups;
  std::vector<double> all;
  for (const auto& r : f.results) {
    if (r.backend != b || r.status != "ok") continue;
    if (r.projected)
      throw InputError(
          fmt::format("{}: backend '{}' holds projections; --like needs measurements", label, b));
    if (!(r.efficiency > 0) || !std::isfinite(r.efficiency)) continue;
    all.push_back(r.efficiency);
    groups[kind_key(r.op) + "," + phase_key(r.op)].push_back(r.efficiency);
    groups[kind_key(r.op)].push_back(r.efficiency);
    groups[phase_key(r.op)].push_back(r.efficiency);
  }
  if (all.empty())
    throw InputError(
        b.empty()
            ? fmt::format("{}: no op ran successfully, nothing to take efficiencies from", label)
            : fmt::format("{}: no successful results of backend '{}'", label, b));
  EfficiencyModel m;
  for (auto& [g, v] : groups) m.by_group[g] = std::min(1.0, aggregate(v).geomean);
  m.all = std::min(1.0, aggregate(all).geomean);
  m.source = fmt::format("geomean efficiencies of {} (backend {}) by op kind and phase", label, b);
  return m;
}

ResultsFile project_ops(const std::vector<CatalogOp>& ops, const DeviceSpec& d,
                        const EfficiencyModel& eff) {
  ResultsFile f;
  std::map<DType, std::size_t> dtype_ops;
  nlohmann::json used = nlohmann::json::object();
  for (const auto& op : ops) {
    Result r;
    r.op = op;
    r.backend = "projected:" + d.id;
    r.projected = true;
    r.flops = op.op.flops(), r.bytes = op.op.bytes();
    if (!(d.peak(op.op.dtype) > 0)) {
      r.status = "unsupported";
      r.reason = fmt::format("device {} has no dense {} peak: {}", d.id, dtype_name(op.op.dtype),
                             d.peak_gap(op.op.dtype));
      f.results.push_back(std::move(r));
      continue;
    }
    const Roofline roof = device_roofline(d, op.op.dtype);
    std::string basis;
    const double e = eff.for_op(op, &basis);
    used[basis] = e;
    r.attainable_tflops = roof.attainable_tflops(op.op);
    r.efficiency = e;
    r.tflops = r.attainable_tflops * e;
    r.median_s = r.flops / (r.tflops * 1e12);  // time = flops / (attainable x efficiency)
    r.gbps = r.bytes / r.median_s / 1e9;
    ++dtype_ops[op.op.dtype];
    f.results.push_back(std::move(r));
  }
  f.machine.device = d.id;
  if (!dtype_ops.empty()) {
    const DType main_dt =
        std::max_element(dtype_ops.begin(), dtype_ops.end(), [](auto& a, auto& b) {
          return a.second < b.second;
        })->first;
    f.machine.roofline = device_roofline(d, main_dt);
  }
  f.config = {
      {"projection",
       {{"device", d.id},
        {"device_name", d.name},
        {"model",
         "time = flops / (attainable x efficiency); attainable = min(peak(dtype), flops/bytes x "
         "bandwidth) from the device database"},
        {"efficiency_source", eff.source},
        {"efficiencies_used", used}}}};
  if (!d.assumptions.empty()) f.config["projection"]["assumed_peaks"] = d.assumptions;
  return f;
}

}  // namespace attain
