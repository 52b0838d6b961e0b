// The `attain bench --layer` report, schema "attain.layer/1": the one place that writes it,
// reads it back and prints it as text.
#include <fmt/format.h>

#include <set>

#include "attain/bench_session.hpp"
#include "attain/files.hpp"
#include "core/json_fields.hpp"

namespace attain {

using json_io::get;
using json_io::num;
using nlohmann::json;

int LayerReport::stages() const {
  std::set<int> s;
  for (const auto& l : ops) s.insert(l.stage);
  return static_cast<int>(s.size());
}

const LayerResult* LayerReport::baseline() const {
  for (const auto& r : results)
    if (r.status == "ok") return &r;
  return nullptr;
}

bool LayerReport::any_failed() const {
  for (const auto& r : results)
    if (r.status == "wrong" || r.status == "error") return true;
  return false;
}

json to_json(const LayerReport& r) {
  json j = {{"schema", kLayerSchema},    {"attain_version", ATTAIN_VERSION},
            {"layer", r.layer},          {"model", r.model},
            {"phase", r.pass.phase},     {"tokens", r.pass.tokens},
            {"context", r.pass.context}, {"dtype", dtype_name(r.pass.dtype)},
            {"threads", r.threads},      {"created", r.created},
            {"command", r.command},      {"flops", num(r.flops)},
            {"bytes", num(r.bytes)},     {"roofline_floor_s", num(r.floor_s)},
            {"checks", json::array()},   {"ops", json::array()},
            {"results", json::array()}};
  for (const auto& l : r.ops)
    j["ops"].push_back({{"spec", l.op.op.spec()}, {"role", l.role}, {"stage", l.stage}});
  for (const auto& c : r.checks) j["checks"].push_back(to_json(c));
  if (!r.checks.empty()) j["checked_roofline_floor_s"] = num(r.checked_floor_s);
  const LayerResult* base = r.baseline();
  for (const auto& x : r.results) {
    json e = {{"backend", x.backend}, {"status", x.status}, {"verified", x.verified}};
    if (!x.reason.empty()) e["reason"] = x.reason;
    if (x.status == "ok") {
      e["median_s"] = x.median_s;
      e["min_s"] = x.min_s;
      e["iqr_s"] = x.iqr_s;
      e["reps"] = x.reps;
      e["steps"] = x.regions;
      e["roofline_fraction"] = num(r.floor_s / x.median_s);
      if (!r.checks.empty()) e["checked_roofline_fraction"] = num(r.checked_floor_s / x.median_s);
      if (base != nullptr) e["speedup_vs_" + base->backend] = base->median_s / x.median_s;
    }
    j["results"].push_back(e);
  }
  return j;
}

LayerReport layer_report_from_json(const json& j, std::string_view origin) {
  json_io::check_schema(j, kLayerSchema, origin);
  const std::string o(origin);
  LayerReport r;
  r.layer = get<std::string>(j, "layer", o, "", true);
  r.model = get<std::string>(j, "model", o, "", true);
  r.pass.phase = get<std::string>(j, "phase", o, "", true);
  r.pass.tokens = get<std::int64_t>(j, "tokens", o, 0, true);
  r.pass.context = get<std::int64_t>(j, "context", o, 0, false);
  const auto dt = parse_dtype(get<std::string>(j, "dtype", o, "", true));
  if (!dt) throw InputError(fmt::format("{}: dtype is not one attain knows", origin));
  r.pass.dtype = *dt;
  r.threads = get<int>(j, "threads", o, 0, true);
  r.created = get<std::string>(j, "created", o, "", false);
  r.command = get<std::string>(j, "command", o, "", false);
  r.flops = get<double>(j, "flops", o, 0, true);
  r.bytes = get<double>(j, "bytes", o, 0, true);
  r.floor_s = get<double>(j, "roofline_floor_s", o, 0, true);
  r.checked_floor_s = get<double>(j, "checked_roofline_floor_s", o, 0, false);
  for (const char* key : {"checks", "ops", "results"}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array())
      throw InputError(fmt::format("{}: missing array '{}'", origin, key));
  }
  for (const auto& c : j["checks"]) r.checks.push_back(ceilings_check_from_json(c, origin));
  std::size_t i = 0;
  for (const auto& e : j["ops"]) {
    const std::string where = fmt::format("{} ops[{}]", origin, i++);
    LayerOp l;
    try {
      l.op.op = Op::parse(get<std::string>(e, "spec", where, "", true));
    } catch (const InputError& err) {
      throw InputError(where + ": " + err.what());
    }
    l.role = get<std::string>(e, "role", where, "", false);
    l.stage = get<int>(e, "stage", where, 0, true);
    r.ops.push_back(std::move(l));
  }
  i = 0;
  for (const auto& e : j["results"]) {
    const std::string where = fmt::format("{} results[{}]", origin, i++);
    LayerResult x;
    x.backend = get<std::string>(e, "backend", where, "", true);
    x.status = get<std::string>(e, "status", where, "", true);
    x.verified = get<bool>(e, "verified", where, false, false);
    x.reason = get<std::string>(e, "reason", where, "", false);
    if (x.status == "ok") {
      x.median_s = get<double>(e, "median_s", where, 0, true);
      if (!(x.median_s > 0))
        throw InputError(fmt::format("{}: median_s {:g} is not positive", where, x.median_s));
      x.min_s = get<double>(e, "min_s", where, x.median_s, false);
      x.iqr_s = get<double>(e, "iqr_s", where, 0, false);
      x.reps = get<int>(e, "reps", where, 0, false);
      x.regions = get<int>(e, "steps", where, 0, false);
    }
    r.results.push_back(std::move(x));
  }
  return r;
}

LayerReport read_layer_report(const std::filesystem::path& file) {
  const std::string text = read_input_file(file, kMaxResultsBytes, "layer report");
  return layer_report_from_json(parse_json_input(text, file.string()), file.string());
}

std::string layer_plan_text(const LayerReport& r) {
  std::string s = fmt::format(
      "attain bench --layer {}: {} {} tokens{}, {} ops in {} stages, {:.3f} GFLOP, {:.1f} MB; "
      "{} threads; roofline floor {:.3f} ms\n",
      r.layer, r.model, r.pass.tokens,
      r.pass.phase == "decode" ? fmt::format(" @ context {}", r.pass.context) : "", r.ops.size(),
      r.stages(), r.flops / 1e9, r.bytes / 1e6, r.threads, r.floor_s * 1e3);
  for (const auto& l : r.ops)
    s += fmt::format("  stage {}  {:<16} {}\n", l.stage, l.role, l.op.op.spec());
  return s;
}

std::string layer_results_text(const LayerReport& r, const Roofline& roof) {
  const LayerResult* base = r.baseline();
  std::string s = fmt::format("\n{:<14} {:>11} {:>9} {:>6} {:>9} {:>10}\n", "backend", "layer time",
                              "IQR", "steps", "roofline", base ? "vs " + base->backend : "");
  for (const auto& x : r.results) {
    if (x.status != "ok") {
      s += fmt::format("{:<14} {}: {}\n", x.backend, x.status, x.reason);
      continue;
    }
    s += fmt::format("{:<14} {:>8.3f} ms {:>6.3f} ms {:>6} {:>8.0f}% {:>9.2f}x\n", x.backend,
                     x.median_s * 1e3, x.iqr_s * 1e3, x.regions, 100 * r.floor_s / x.median_s,
                     base->median_s / x.median_s);
  }
  if (!r.checks.empty()) {
    MachineInfo m;
    m.roofline = roof, m.checks = r.checks;
    s += format_checks(m);
    s += fmt::format(
        "Roofline floor against the highest of these ceilings: {:.3f} ms (the probe's: {:.3f} ms)",
        r.checked_floor_s * 1e3, r.floor_s * 1e3);
    for (const auto& x : r.results)
      if (x.status == "ok")
        s += fmt::format("; {} {:.0f}%", x.backend, 100 * r.checked_floor_s / x.median_s);
    s += "\n";
  }
  return s;
}

}  // namespace attain
