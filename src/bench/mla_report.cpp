// The `attain mla` report, schema "attain.mla/1": the one place that writes it, reads it back
// and prints it as text.
#include <fmt/format.h>

#include <algorithm>

#include "attain/files.hpp"
#include "attain/mla_bench.hpp"
#include "core/json_fields.hpp"

namespace attain {

using json_io::get;
using json_io::num;
using nlohmann::json;

namespace {

// What the counts are, as the report states them.
constexpr const char* kCountModel =
    "bytes: every cache row read once + q + o + lse; flops: 2*h*pairs*(576+512) "
    "(separate_kv: 2*h*pairs*(192+128), its K and V bytes)";

const MlaVariantResult* find_timed(const MlaReport& r, std::string_view name) {
  for (const auto& v : r.results)
    if (v.variant == name && v.timed) return &v;
  return nullptr;
}

}  // namespace

std::optional<double> MlaReport::attainable_tflops(const MlaVariantResult& r) const {
  if (!peak_tflops || !bw_gbps || r.bytes <= 0) return std::nullopt;
  return std::min(*peak_tflops, r.flops / r.bytes * *bw_gbps / 1e3);
}

std::optional<double> MlaReport::efficiency(const MlaVariantResult& r) const {
  const auto att = attainable_tflops(r);
  if (!att || !r.timed || *att <= 0) return std::nullopt;
  return r.flops / r.t.median_s / 1e12 / *att;
}

std::string MlaReport::bound(const MlaVariantResult& r) const {
  if (!peak_tflops || !bw_gbps || r.bytes <= 0) return "";
  return r.flops / r.bytes * *bw_gbps / 1e3 < *peak_tflops ? "memory" : "compute";
}

std::optional<double> MlaReport::speedup_vs(std::string_view baseline) const {
  const MlaVariantResult* at = find_timed(*this, "attain");
  const MlaVariantResult* other = find_timed(*this, baseline);
  if (!at || !other) return std::nullopt;
  return other->t.median_s / at->t.median_s;
}

bool MlaReport::all_verified() const {
  return std::all_of(results.begin(), results.end(),
                     [](const MlaVariantResult& r) { return r.verified; });
}

json to_json(const MlaReport& r) {
  const MlaBenchConfig& c = r.config;
  json j;
  j["schema"] = kMlaSchema;
  j["attain_version"] = ATTAIN_VERSION;
  j["created"] = r.created;
  j["command"] = r.command;
  j["op"] = c.op.spec();
  j["varlen"] = c.varlen;
  j["seed"] = c.seed;
  j["threads"] = c.threads;
  j["isa"] = r.isa;
  j["timing"] = {{"cache", c.timing.hot ? "hot" : "cold"},
                 {"max_seconds", c.timing.max_seconds},
                 {"min_reps", c.timing.min_reps}};
  j["model"] = kCountModel;
  if (r.peak_tflops && r.bw_gbps)
    j["roofline"] = {
        {"peak_tflops", *r.peak_tflops}, {"bw_gbps", *r.bw_gbps}, {"source", r.roofline_source}};
  else
    j["roofline"] = nullptr;
  j["results"] = json::array();
  for (const auto& v : r.results) {
    json e;
    e["variant"] = v.variant;
    e["verified"] = v.verified;
    e["error"] = num(v.error);
    e["tolerance"] = num(v.tolerance);
    e["flops"] = num(v.flops);
    e["bytes"] = num(v.bytes);
    if (!v.detail.empty()) e["detail"] = v.detail;
    if (!v.note.empty()) e["note"] = v.note;
    if (v.timed) {
      e["median_s"] = v.t.median_s, e["min_s"] = v.t.min_s, e["iqr_s"] = v.t.iqr_s,
      e["reps"] = v.t.reps;
      e["gbps"] = v.bytes / v.t.median_s / 1e9;
      e["tflops"] = v.flops / v.t.median_s / 1e12;
      e["attainable_tflops"] = num(r.attainable_tflops(v));
      e["efficiency"] = num(r.efficiency(v));
      const std::string b = r.bound(v);
      if (!b.empty()) e["bound"] = b;
    } else {
      e["median_s"] = e["gbps"] = e["tflops"] = e["efficiency"] = nullptr;
    }
    j["results"].push_back(e);
  }
  j["speedup_vs_separate_kv"] = num(r.speedup_vs("separate_kv"));
  j["speedup_vs_naive"] = num(r.speedup_vs("naive"));
  return j;
}

MlaReport mla_report_from_json(const json& j, std::string_view origin) {
  json_io::check_schema(j, kMlaSchema, origin);
  const std::string o(origin);
  MlaReport r;
  MlaBenchConfig& c = r.config;
  r.created = get<std::string>(j, "created", o, "", false);
  r.command = get<std::string>(j, "command", o, "", false);
  try {
    c.op = Op::parse(get<std::string>(j, "op", o, "", true));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: op: {}", origin, e.what()));
  }
  if (c.op.kind != OpKind::mla_decode)
    throw InputError(fmt::format("{}: op '{}' is not an mla_decode", origin, c.op.spec()));
  c.varlen = get<bool>(j, "varlen", o, false, true);
  c.seed = get<std::uint64_t>(j, "seed", o, c.seed, false);
  c.threads = get<int>(j, "threads", o, 0, true);
  r.isa = get<std::string>(j, "isa", o, "", false);
  const json& t = json_io::object(j, "timing", o);
  c.timing.hot = get<std::string>(t, "cache", o, "cold", false) == "hot";
  c.timing.max_seconds = get<double>(t, "max_seconds", o, c.timing.max_seconds, false);
  c.timing.min_reps = get<int>(t, "min_reps", o, c.timing.min_reps, false);
  if (auto roof = j.find("roofline"); roof != j.end() && roof->is_object()) {
    r.peak_tflops = get<double>(*roof, "peak_tflops", o, 0, true);
    r.bw_gbps = get<double>(*roof, "bw_gbps", o, 0, true);
    r.roofline_source = get<std::string>(*roof, "source", o, "", false);
  }
  auto rs = j.find("results");
  if (rs == j.end() || !rs->is_array())
    throw InputError(fmt::format("{}: missing array 'results'", origin));
  c.variants.clear();
  std::size_t i = 0;
  for (const auto& e : *rs) {
    const std::string where = fmt::format("{} results[{}]", origin, i++);
    if (!e.is_object()) throw InputError(where + ": not an object");
    MlaVariantResult v;
    v.variant = get<std::string>(e, "variant", where, "", true);
    v.verified = get<bool>(e, "verified", where, false, true);
    v.error = get<double>(e, "error", where, 0, false);
    v.tolerance = get<double>(e, "tolerance", where, 0, false);
    v.flops = get<double>(e, "flops", where, 0, true);
    v.bytes = get<double>(e, "bytes", where, 0, true);
    v.detail = get<std::string>(e, "detail", where, "", false);
    v.note = get<std::string>(e, "note", where, "", false);
    if (auto m = e.find("median_s"); m != e.end() && !m->is_null()) {
      v.timed = true;
      v.t.median_s = get<double>(e, "median_s", where, 0, true);
      if (!(v.t.median_s > 0))
        throw InputError(fmt::format("{}: median_s {:g} is not positive", where, v.t.median_s));
      v.t.min_s = get<double>(e, "min_s", where, v.t.median_s, false);
      v.t.iqr_s = get<double>(e, "iqr_s", where, 0, false);
      v.t.reps = get<int>(e, "reps", where, 0, false);
    }
    c.variants.push_back(v.variant);
    r.results.push_back(std::move(v));
  }
  return r;
}

MlaReport read_mla_report(const std::filesystem::path& file) {
  const std::string text = read_input_file(file, kMaxResultsBytes, "mla report");
  return mla_report_from_json(parse_json_input(text, file.string()), file.string());
}

std::string mla_report_text(const MlaReport& r) {
  const MlaBenchConfig& c = r.config;
  std::string s =
      fmt::format("{}{}  threads={}  isa={}  {} cache, median of timed runs\n", c.op.spec(),
                  c.varlen ? " (varlen)" : "", c.threads, r.isa, c.timing.hot ? "hot" : "cold");
  s +=
      fmt::format("roofline: {}\n", r.peak_tflops && r.bw_gbps
                                        ? fmt::format("{:.3f} TFLOP/s, {:.1f} GB/s ({})",
                                                      *r.peak_tflops, *r.bw_gbps, r.roofline_source)
                                        : "host probe gave no ceilings: efficiency left out");
  const char* row = "{:<12} {:>10} {:>9} {:>9} {:>8} {:>8} {:>9}  {}\n";
  s += fmt::format(fmt::runtime(row), "variant", "median ms", "GB/s", "TFLOP/s", "eff", "bound",
                   "verified", "");
  for (const auto& v : r.results) {
    if (!v.timed) {
      s += fmt::format(fmt::runtime(row), v.variant, "-", "-", "-", "-", "-", "WRONG", v.detail);
      continue;
    }
    const auto eff = r.efficiency(v);
    const std::string b = r.bound(v);
    s += fmt::format("{:<12} {:>10.3f} {:>9.2f} {:>9.4f} {:>8} {:>8} {:>9}  {}\n", v.variant,
                     v.t.median_s * 1e3, v.bytes / v.t.median_s / 1e9,
                     v.flops / v.t.median_s / 1e12, eff ? fmt::format("{:.1f}%", 100 * *eff) : "-",
                     b.empty() ? "-" : b, fmt::format("{:.1e}", v.error), v.note);
  }
  if (const auto x = r.speedup_vs("separate_kv"))
    s += fmt::format("attain vs separate_kv: {:.2f}x\n", *x);
  if (const auto x = r.speedup_vs("naive"))
    s += fmt::format("attain vs naive:       {:.2f}x\n", *x);
  s += std::string(kCountModel) + "\n";
  return s;
}

}  // namespace attain
