// Planning to a target: the fewest hot spares that reach a given ETTR or goodput.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attain/cluster.hpp"
#include "attain/op.hpp"

namespace attain::cluster {

TargetPlan plan_for_target(const SimConfig& c, TargetMetric metric, double target, int runs,
                           std::uint64_t seed, int threads) {
  if (!(target > 0 && target < 1))
    throw InputError(fmt::format("the target {:g} is not a fraction in (0, 1)", target));
  TargetPlan t;
  t.metric = metric, t.target = target;
  const int nodes =
      static_cast<int>(std::ceil(static_cast<double>(c.chips) / std::max(1, c.chips_per_node)));
  // Every count is simulated with the same seeds, so the counts differ by their spares alone.
  auto at = [&](int spares) {
    SimConfig x = c;
    x.spare_nodes = spares, x.timeline = false;
    MonteCarlo mc = monte_carlo(x, runs, seed, threads);
    ++t.evaluated;
    return mc;
  };
  auto figure = [&](const MonteCarlo& mc) {
    return metric == TargetMetric::ettr ? mc.ettr.mean : mc.goodput.mean;
  };
  auto keep = [&](int spares, const MonteCarlo& mc) {
    t.spare_nodes = spares, t.ettr = mc.ettr, t.goodput = mc.goodput;
    t.interval_min = mc.plan.interval_min;
  };
  // Doubling until the target is met, or every node has a spare.
  int lo = -1, hi = 0;
  MonteCarlo mc = at(0);
  while (figure(mc) < target) {
    if (hi >= nodes) {
      keep(hi, mc);
      return t;  // unreachable with spares alone
    }
    lo = hi;
    hi = std::min(nodes, hi == 0 ? 1 : 2 * hi);
    mc = at(hi);
  }
  keep(hi, mc);
  // Bisection between the last count that fell short and the first that reached it.
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    MonteCarlo m = at(mid);
    if (figure(m) >= target)
      hi = mid, keep(mid, m);
    else
      lo = mid;
  }
  t.reached = true;
  return t;
}

}  // namespace attain::cluster
