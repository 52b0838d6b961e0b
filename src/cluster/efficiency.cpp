// The efficiency to assume, taken from measured results (attain bench --out results.json).
#include <fmt/format.h>

#include <cmath>

#include "attain/cluster.hpp"
#include "attain/op.hpp"
#include "attain/results.hpp"

namespace attain::cluster {

MeasuredEfficiency efficiency_from_results(const ResultsFile& f, std::string_view backend) {
  double log_sum = 0;
  MeasuredEfficiency m;
  for (const auto& r : f.results) {
    if (r.status != "ok" || !r.verified || r.projected) continue;
    if (!backend.empty() && r.backend != backend) continue;
    if (!(r.efficiency > 0) || !std::isfinite(r.efficiency)) continue;
    log_sum += std::log(r.efficiency), ++m.ops;
  }
  if (m.ops == 0)
    throw InputError(fmt::format("no verified, measured result with an efficiency{}",
                                 backend.empty() ? "" : fmt::format(" for backend {}", backend)));
  m.efficiency = std::exp(log_sum / static_cast<double>(m.ops));
  return m;
}

}  // namespace attain::cluster
