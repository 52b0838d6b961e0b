#include "attain/results.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "attain/files.hpp"
#include "core/json_fields.hpp"
#include "device/probe.hpp"

namespace attain {

using nlohmann::json;

using json_io::get;
using json_io::num;

json to_json(const Result& r) {
  const auto& p = r.op.prov;
  json j = {{"op",
             {{"spec", r.op.op.spec()},
              {"kind", kind_name(r.op.op.kind)},
              {"dtype", dtype_name(r.op.op.dtype)},
              {"model", p.model},
              {"layer", p.layer},
              {"phase", p.phase},
              {"tokens", p.tokens},
              {"context", p.context},
              {"count", p.count}}},
            {"backend", r.backend},
            {"status", r.status},
            {"flops", num(r.flops)},
            {"bytes", num(r.bytes)},
            {"attainable_tflops", num(r.attainable_tflops)},
            {"verified", r.verified},
            {"error", num(r.error)}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (r.status == "ok") {
    j["median_s"] = num(r.median_s), j["min_s"] = num(r.min_s), j["iqr_s"] = num(r.iqr_s),
    j["reps"] = r.reps;
    j["tflops"] = num(r.tflops), j["gbps"] = num(r.gbps), j["efficiency"] = num(r.efficiency);
    if (r.exceeds_ceiling()) j["ceiling_error"] = true;
    if (r.local_efficiency > 0) j["local_efficiency"] = num(r.local_efficiency);
  }
  if (r.t_unix > 0) j["t"] = num(r.t_unix);
  if (r.projected) j["projected"] = true;
  return j;
}

json to_json(const CeilingsCheck& c) {
  return {{"when", c.when},
          {"at", c.at},
          {"threads", c.threads},
          {"fma_gflops", num(c.fma_gflops)},
          {"bf16_gflops", num(c.bf16_gflops)},
          {"read_gbps", num(c.read_gbps)},
          {"read_kernel", c.read_kernel},
          {"t", num(c.t_unix)}};
}

CeilingsCheck ceilings_check_from_json(const json& cj, std::string_view origin) {
  CeilingsCheck c;
  c.when = get<std::string>(cj, "when", origin, "", false);
  c.at = get<std::string>(cj, "at", origin, "", false);
  c.threads = get<int>(cj, "threads", origin, 0, false);
  c.fma_gflops = get<double>(cj, "fma_gflops", origin, 0, false);
  c.bf16_gflops = get<double>(cj, "bf16_gflops", origin, 0, false);
  c.read_gbps = get<double>(cj, "read_gbps", origin, 0, false);
  c.read_kernel = get<std::string>(cj, "read_kernel", origin, "", false);
  c.t_unix = get<double>(cj, "t", origin, 0, false);
  return c;
}

json to_json(const ResultsFile& f) {
  const auto& m = f.machine;
  json results = json::array();
  for (const auto& r : f.results) results.push_back(to_json(r));
  json out = {{"schema", kResultsSchema},
              {"attain_version", ATTAIN_VERSION},
              {"created", f.created},
              {"command", f.command},
              {"machine",
               {{"cpu_model", m.cpu_model},
                {"cores", m.cores},
                {"threads", m.threads},
                {"device", m.device},
                {"ceilings_used",
                 {{"peak_tflops", num(m.roofline.peak_tflops)},
                  {"bf16_peak_tflops", num(m.roofline.bf16_peak_tflops)},
                  {"bandwidth_gbps", num(m.roofline.bw_gbps)},
                  {"source", m.roofline.source}}},
                {"probe", probe::to_json(m.ceilings)},
                {"libraries", m.libraries}}},
              {"config", f.config.is_null() ? json::object() : f.config},
              {"results", results}};
  if (!f.complete) {
    out["complete"] = false;
    out["progress"] = {{"ops_done", f.ops_done}, {"ops_total", f.ops_total}};
  }
  if (!m.checks.empty()) {
    json checks = json::array();
    for (const auto& c : m.checks) checks.push_back(to_json(c));
    out["machine"]["checks"] = checks;
  }
  return out;
}

ResultsFile results_from_json(const json& j, std::string_view origin) {
  if (!j.is_object())
    throw InputError(fmt::format("{}: a results file must be a JSON object", origin));
  json_io::check_schema(j, kResultsSchema, origin);
  ResultsFile f;
  f.created = get<std::string>(j, "created", origin, "", false);
  f.command = get<std::string>(j, "command", origin, "", false);
  f.config = j.value("config", json::object());
  f.complete = get<bool>(j, "complete", origin, true, false);
  if (auto pr = j.find("progress"); pr != j.end() && pr->is_object()) {
    f.ops_done = get<std::size_t>(*pr, "ops_done", origin, 0, false);
    f.ops_total = get<std::size_t>(*pr, "ops_total", origin, 0, false);
  }
  const json& m = j.at("machine");
  f.machine.cpu_model = get<std::string>(m, "cpu_model", origin, "", false);
  f.machine.cores = get<int>(m, "cores", origin, 0, false);
  f.machine.threads = get<int>(m, "threads", origin, 0, false);
  f.machine.device = get<std::string>(m, "device", origin, "host", false);
  if (auto c = m.find("ceilings_used"); c != m.end() && c->is_object()) {
    f.machine.roofline.peak_tflops = get<double>(*c, "peak_tflops", origin, 0, false);
    f.machine.roofline.bw_gbps = get<double>(*c, "bandwidth_gbps", origin, 0, false);
    f.machine.roofline.bf16_peak_tflops = get<double>(*c, "bf16_peak_tflops", origin, 0, false);
    f.machine.roofline.source = get<std::string>(*c, "source", origin, "", false);
  }
  if (auto p = m.find("probe"); p != m.end() && p->is_object() && !p->empty()) {
    // Imported and projected results carry no probe of their own; a partial one is dropped.
    try {
      f.machine.ceilings = probe::ceilings_from_json(*p);
    } catch (const InputError&) {
      f.machine.ceilings = {};
    }
  }
  if (auto cs = m.find("checks"); cs != m.end() && cs->is_array())
    for (const auto& cj : *cs)
      if (cj.is_object()) f.machine.checks.push_back(ceilings_check_from_json(cj, origin));
  if (auto l = m.find("libraries"); l != m.end() && l->is_object())
    for (auto it = l->begin(); it != l->end(); ++it)
      if (it->is_string()) f.machine.libraries[it.key()] = it->get<std::string>();
  auto rs = j.find("results");
  if (rs == j.end() || !rs->is_array())
    throw InputError(fmt::format("{}: missing array 'results'", origin));
  std::size_t i = 0;
  for (const auto& rj : *rs) {
    const std::string where = fmt::format("{} results[{}]", origin, i++);
    if (!rj.is_object()) throw InputError(where + ": not an object");
    Result r;
    auto opj = rj.find("op");
    if (opj == rj.end() || !opj->is_object()) throw InputError(where + ": missing object 'op'");
    try {
      r.op.op = Op::parse(get<std::string>(*opj, "spec", where, "", true));
    } catch (const InputError& e) {
      throw InputError(where + ": " + e.what());
    }
    r.op.prov.model = get<std::string>(*opj, "model", where, "", false);
    r.op.prov.layer = get<std::string>(*opj, "layer", where, "", false);
    r.op.prov.phase = get<std::string>(*opj, "phase", where, "", false);
    r.op.prov.tokens = get<std::int64_t>(*opj, "tokens", where, 0, false);
    r.op.prov.context = get<std::int64_t>(*opj, "context", where, 0, false);
    r.op.prov.count = get<std::int64_t>(*opj, "count", where, 1, false);
    r.backend = get<std::string>(rj, "backend", where, "", true);
    r.status = get<std::string>(rj, "status", where, "", true);
    if (r.status != "ok" && r.status != "unsupported" && r.status != "wrong" && r.status != "error")
      throw InputError(fmt::format("{}: status '{}' (known: ok, unsupported, wrong, error)", where,
                                   r.status.substr(0, 80)));
    r.reason = get<std::string>(rj, "reason", where, "", false);
    r.flops = get<double>(rj, "flops", where, r.op.op.flops(), false);
    r.bytes = get<double>(rj, "bytes", where, r.op.op.bytes(), false);
    r.attainable_tflops = get<double>(rj, "attainable_tflops", where, 0, false);
    r.verified = get<bool>(rj, "verified", where, false, false);
    r.error = get<double>(rj, "error", where, 0, false);
    r.projected = get<bool>(rj, "projected", where, false, false);
    if (r.status == "ok") {
      r.median_s = get<double>(rj, "median_s", where, 0, true);
      // (1 ns to a day: a time outside is a unit error or a forgery, and 1e308 s printed
      // 300-digit percentages)
      if (!(r.median_s >= 1e-9 && r.median_s <= 86400))
        throw InputError(fmt::format("{}: median_s {:g} outside 1e-9..86400 s", where, r.median_s));
      r.min_s = get<double>(rj, "min_s", where, r.median_s, false);
      r.iqr_s = get<double>(rj, "iqr_s", where, 0, false);
      r.reps = get<int>(rj, "reps", where, 0, false);
      r.tflops = get<double>(rj, "tflops", where, r.flops / r.median_s / 1e12, false);
      r.gbps = get<double>(rj, "gbps", where, r.bytes / r.median_s / 1e9, false);
      r.efficiency = get<double>(rj, "efficiency", where, 0, false);
      r.local_efficiency = get<double>(rj, "local_efficiency", where, 0, false);
    }
    r.t_unix = get<double>(rj, "t", where, 0, false);
    f.results.push_back(std::move(r));
  }
  return f;
}

void write_results(const std::filesystem::path& file, const ResultsFile& f) {
  write_file_atomic(file, to_json(f).dump(1) + "\n");
}

ResultsFile read_results(const std::filesystem::path& file) {
  const std::string text = read_input_file(file, kMaxResultsBytes, "results file");
  const json j = parse_json_input(text, file.string());
  try {
    return results_from_json(j, file.string());
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: malformed results ({})", file.string(), e.what()));
  }
}

}  // namespace attain
