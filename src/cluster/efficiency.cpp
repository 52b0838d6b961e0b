// The efficiency to assume, taken from measured results (attain bench --out results.json).
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "attain/cluster.hpp"
#include "attain/op.hpp"

namespace attain::cluster {

MeasuredEfficiency efficiency_from_results(std::string_view json_text, std::string_view origin,
                                           std::string_view backend) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: not valid JSON ({})", origin, e.what()));
  }
  if (!j.is_object() || !j.contains("results") || !j["results"].is_array())
    throw InputError(fmt::format("{}: not an attain results file (no \"results\" array)", origin));
  double log_sum = 0;
  MeasuredEfficiency m;
  for (const auto& r : j["results"]) {
    if (!r.is_object()) continue;
    if (r.value("status", std::string("ok")) == "unsupported" || !r.value("verified", true))
      continue;
    if (!backend.empty() && r.value("backend", std::string()) != backend) continue;
    const auto e = r.find("efficiency");
    if (e == r.end() || !e->is_number()) continue;
    const double v = e->get<double>();
    if (!(v > 0) || !std::isfinite(v)) continue;
    log_sum += std::log(v), ++m.ops;
  }
  if (m.ops == 0)
    throw InputError(fmt::format("{}: no verified result with an efficiency{}", origin,
                                 backend.empty() ? "" : fmt::format(" for backend {}", backend)));
  m.efficiency = std::exp(log_sum / static_cast<double>(m.ops));
  return m;
}

}  // namespace attain::cluster
