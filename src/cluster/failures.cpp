// Failure tables (data/failures/*.json) and the optimal checkpoint interval.
//
// A cause's rate comes either from a published count over an observed job (count / (units x
// hours), units = chips, nodes or 1 by the cause's scope) or from a rate per 1,000 unit-days.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attain/cluster.hpp"
#include "attain/files.hpp"
#include "attain/op.hpp"

namespace attain::cluster {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path failures_dir() {
  if (const char* env = std::getenv("ATTAIN_DATA_DIR"); env && *env)
    return fs::path(env) / "failures";
  return fs::path(ATTAIN_DATA_DIR) / "failures";
}

double units(Scope s, std::int64_t chips, int chips_per_node) {
  switch (s) {
    case Scope::chip:
      return static_cast<double>(chips);
    case Scope::node:
      return std::ceil(static_cast<double>(chips) / std::max(1, chips_per_node));
    case Scope::job:
      return 1;
  }
  return 0;
}

Scope parse_scope(const std::string& s, std::string_view where) {
  if (s == "chip") return Scope::chip;
  if (s == "node") return Scope::node;
  if (s == "job") return Scope::job;
  throw InputError(fmt::format("{}: scope \"{}\" is not chip, node or job", where, s));
}

double number(const json& j, const char* key, std::string_view where) {
  const auto it = j.find(key);
  if (it == j.end()) throw InputError(fmt::format("{}: missing \"{}\"", where, key));
  // {"value": x, "source": "..."} or a bare number
  const json& v = it->is_object() ? it->value("value", json()) : *it;
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    throw InputError(fmt::format("{}: \"{}\" must be a non-negative number", where, key));
  return v.get<double>();
}

std::string source_of(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it != j.end() && it->is_object()) return it->value("source", "");
  return "";
}

}  // namespace

double FailureTable::rate_per_hour(std::int64_t chips, int chips_per_node) const {
  double r = 0;
  for (const auto& c : causes) r += c.rate_per_hour * units(c.scope, chips, chips_per_node);
  return r;
}

double FailureTable::mttf_hours(std::int64_t chips, int chips_per_node) const {
  const double r = rate_per_hour(chips, chips_per_node);
  return r > 0 ? 1.0 / r : std::numeric_limits<double>::infinity();
}

FailureTable parse_failure_table(std::string_view json_text, std::string_view origin) {
  const json j = parse_json_input(json_text, origin);
  if (!j.is_object()) throw InputError(fmt::format("{}: expected a JSON object", origin));
  FailureTable t;
  try {
    t.name = j.value("name", std::string(origin));
    t.title = j.value("title", "");
    t.source = j.value("source", "");
    int obs_cpn = 8;
    double obs_hours = 0;
    if (j.contains("observed")) {
      const json& o = j["observed"];
      const std::string w = fmt::format("{}: observed", origin);
      t.observed_chips = static_cast<std::int64_t>(number(o, "chips", w));
      t.observed_days = number(o, "days", w);
      obs_cpn = static_cast<int>(o.value("chips_per_node", 8));
      t.observed_unexpected = o.value("unexpected", -1.0);
      t.observed_planned = o.value("planned", -1.0);
      obs_hours = t.observed_days * 24;
      if (t.observed_chips <= 0 || obs_hours <= 0 || obs_cpn <= 0)
        throw InputError(fmt::format("{}: chips, days and chips_per_node must be positive", w));
    }
    if (j.contains("recovery")) {
      const json& r = j["recovery"];
      const std::string w = fmt::format("{}: recovery", origin);
      for (const char* k : {"detect_min", "restart_min", "rewarm_min"}) {
        if (!r.contains(k)) continue;
        const double v = number(r, k, w);
        (std::string_view(k) == "detect_min"    ? t.detect_min
         : std::string_view(k) == "restart_min" ? t.restart_min
                                                : t.rewarm_min) = v;
        t.sources[k] = source_of(r, k);
      }
    }
    if (j.contains("planned")) {
      const json& p = j["planned"];
      const std::string w = fmt::format("{}: planned", origin);
      if (p.contains("per_day")) {
        t.planned_per_day = number(p, "per_day", w);
      } else {
        if (obs_hours <= 0) throw InputError(fmt::format("{}: a count needs \"observed\"", w));
        t.planned_per_day = number(p, "count", w) / t.observed_days;
      }
      t.planned_source = p.value("source", "");
    }
    if (!j.contains("causes") || !j["causes"].is_array())
      throw InputError(fmt::format("{}: missing the \"causes\" array", origin));
    for (const json& c : j["causes"]) {
      FailureCause fc;
      fc.name = c.value("name", "");
      if (fc.name.empty()) throw InputError(fmt::format("{}: a cause without a name", origin));
      const std::string w = fmt::format("{}: cause \"{}\"", origin, fc.name);
      fc.category = c.value("category", "");
      fc.scope = parse_scope(c.value("scope", "chip"), w);
      fc.replace = c.value("replace", false);
      fc.source = c.value("source", "");
      if (c.contains("detect_min")) fc.detect_min = number(c, "detect_min", w);
      if (c.contains("count")) {
        if (obs_hours <= 0) throw InputError(fmt::format("{}: a count needs \"observed\"", w));
        fc.published = number(c, "count", w);
        fc.rate_per_hour = fc.published / (units(fc.scope, t.observed_chips, obs_cpn) * obs_hours);
      } else if (c.contains("rate_per_1000_unit_days")) {
        fc.rate_per_hour = number(c, "rate_per_1000_unit_days", w) / 1000.0 / 24.0;
      } else {
        throw InputError(fmt::format("{}: needs \"count\" or \"rate_per_1000_unit_days\"", w));
      }
      t.causes.push_back(std::move(fc));
    }
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: {}", origin, e.what()));
  }
  return t;
}

std::vector<std::string> bundled_failure_tables() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(failures_dir(), ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

FailureTable load_failure_table(std::string_view name_or_path) {
  if (name_or_path == "none") {
    FailureTable t;
    t.name = "none";
    t.title = "no failures";
    return t;
  }
  fs::path p(name_or_path);
  if (!fs::exists(p)) p = failures_dir() / (std::string(name_or_path) + ".json");
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    std::string known;
    for (const auto& n : bundled_failure_tables()) known += (known.empty() ? "" : ", ") + n;
    throw InputError(fmt::format("unknown failure table \"{}\" (bundled: {}, none; or a JSON file)",
                                 name_or_path, known));
  }
  return parse_failure_table(read_input_file(p, kMaxConfigBytes, "failure table"), p.string());
}

double young_interval(double delta, double mtbf) {
  if (!(delta > 0)) return 0;
  return std::sqrt(2 * delta * mtbf);
}

double daly_interval(double delta, double mtbf) {
  if (!(delta > 0)) return 0;
  if (!std::isfinite(mtbf)) return mtbf;
  if (delta >= 2 * mtbf) return mtbf;
  const double x = delta / (2 * mtbf);
  return std::sqrt(2 * delta * mtbf) * (1 + std::sqrt(x) / 3 + x / 9) - delta;
}

}  // namespace attain::cluster
