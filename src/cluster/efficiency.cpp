// The efficiency to assume, taken from measured results (attain bench --out results.json, or
// attain import of timings measured elsewhere): a geometric mean for ops with no measured
// neighbour, and per op the nearest measured shape.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "attain/cluster.hpp"
#include "attain/op.hpp"
#include "attain/results.hpp"
#include "core/util.hpp"

namespace attain::cluster {

MeasuredEfficiency efficiency_from_results(const ResultsFile& f, std::string_view backend) {
  // attain verifies what it runs; an imported file's rows were checked where they ran.
  const bool imported = !f.machine.device.empty() && f.machine.device != "host";
  double log_sum = 0;
  MeasuredEfficiency m;
  std::map<std::string, MeasuredOp> best;  // by op spec
  for (const auto& r : f.results) {
    if (r.status != "ok" || r.projected || !(r.verified || imported)) continue;
    if (!backend.empty() && r.backend != backend) continue;
    if (!(r.efficiency > 0) || !std::isfinite(r.efficiency) || r.exceeds_ceiling()) continue;
    log_sum += std::log(r.efficiency), ++m.ops;
    auto [it, fresh] = best.try_emplace(r.op.op.spec(), MeasuredOp{r.op.op, r.efficiency});
    if (!fresh) it->second.efficiency = std::max(it->second.efficiency, r.efficiency);
  }
  if (m.ops == 0)
    throw InputError(fmt::format("no verified, measured result with an efficiency{}",
                                 backend.empty() ? "" : fmt::format(" for backend {}", backend)));
  m.efficiency = std::exp(log_sum / static_cast<double>(m.ops));
  for (auto& [spec, op] : best) m.measured.push_back(std::move(op));
  return m;
}

Op chip_op(const WorkItem& item, int micro_batch, int tp, int cp) {
  Op o = item.op;
  const std::int64_t mb = std::max(1, micro_batch), t = std::max(1, tp), c = std::max(1, cp);
  auto split = [](std::int64_t x, std::int64_t by) {
    return std::max<std::int64_t>(1, ceil_div(x, by));
  };
  if (o.kind == OpKind::mla_decode) return o;  // a decode op has no place in a training step
  if (o.kind == OpKind::batched_gemm) {
    o.batch *= mb;
    if (o.batch >= t)
      o.batch = split(o.batch, t);
    else
      o.m = split(o.m * o.batch, t), o.batch = 1;
    o.m = split(o.m, c);
    return o;
  }
  o.m = split(o.m * mb, c);
  if (o.n >= o.k)
    o.n = split(o.n, t);
  else
    o.k = split(o.k, t);
  return o;
}

const MeasuredOp* nearest_measured(const std::vector<MeasuredOp>& measured, const Op& op,
                                   double* distance) {
  auto ln = [](std::int64_t a, std::int64_t b) {
    return std::abs(std::log(static_cast<double>(std::max<std::int64_t>(a, 1)) /
                             static_cast<double>(std::max<std::int64_t>(b, 1))));
  };
  const MeasuredOp* best = nullptr;
  double best_d = std::numeric_limits<double>::infinity();
  for (const auto& m : measured) {
    if (m.op.kind != op.kind || m.op.dtype != op.dtype) continue;
    const double d = ln(m.op.m, op.m) + ln(m.op.n, op.n) + ln(m.op.k, op.k) +
                     ln(m.op.batch, op.batch) + ln(m.op.groups, op.groups);
    if (d < best_d) best = &m, best_d = d;
  }
  if (distance) *distance = best ? best_d : 0;
  return best;
}

}  // namespace attain::cluster
