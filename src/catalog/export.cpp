// What `attain catalog` prints and writes: the op list as JSON or a table, and its summary.
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "attain/catalog.hpp"

namespace attain {

nlohmann::json to_json(const CatalogOp& e) {
  const Op& op = e.op;
  nlohmann::json j = {{"spec", op.spec()},
                      {"kind", kind_name(op.kind)},
                      {"m", op.m},
                      {"n", op.n},
                      {"k", op.k},
                      {"dtype", dtype_name(op.dtype)},
                      {"flops", op.flops()},
                      {"bytes", op.bytes()},
                      {"model", e.prov.model},
                      {"layer", e.prov.layer},
                      {"phase", e.prov.phase},
                      {"tokens", e.prov.tokens},
                      {"context", e.prov.context},
                      {"count", e.prov.count}};
  if (op.kind == OpKind::grouped_gemm) j["groups"] = op.groups;
  if (op.kind == OpKind::batched_gemm) j["batch"] = op.batch;
  if (op.kind == OpKind::mla_decode) {
    j["m"] = op.b * op.s_q * op.h, j["n"] = op.s,
    j["k"] = kMlaDk;  // as one product: rows x keys x width
    j["b"] = op.b, j["s"] = op.s, j["h"] = op.h, j["s_q"] = op.s_q;
  }
  return j;
}

nlohmann::json catalog_json(const std::vector<CatalogOp>& ops) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& e : ops) arr.push_back(to_json(e));
  return arr;
}

namespace {

struct Counts {
  std::map<std::string, std::size_t> by_kind, by_phase, by_dtype, by_model;
  double flops = 0, bytes = 0;
};

Counts count(const std::vector<CatalogOp>& ops) {
  Counts c;
  for (const auto& e : ops) {
    ++c.by_kind[std::string(kind_name(e.op.kind))], ++c.by_phase[e.prov.phase];
    ++c.by_dtype[std::string(dtype_name(e.op.dtype))], ++c.by_model[e.prov.model];
    c.flops += e.op.flops(), c.bytes += e.op.bytes();
  }
  return c;
}

}  // namespace

nlohmann::json catalog_summary_json(const std::vector<CatalogOp>& ops) {
  const Counts c = count(ops);
  return {{"ops", ops.size()},      {"by_kind", c.by_kind},   {"by_phase", c.by_phase},
          {"by_dtype", c.by_dtype}, {"by_model", c.by_model}, {"total_flops", c.flops},
          {"total_bytes", c.bytes}};
}

std::string catalog_summary_text(const std::vector<CatalogOp>& ops) {
  const Counts c = count(ops);
  std::string s = fmt::format("{} ops, {:.3g} TFLOP and {:.3g} GB in all (each op once)\n",
                              ops.size(), c.flops / 1e12, c.bytes / 1e9);
  const std::pair<const char*, const std::map<std::string, std::size_t>*> groups[] = {
      {"kind", &c.by_kind}, {"phase", &c.by_phase}, {"dtype", &c.by_dtype}, {"model", &c.by_model}};
  for (const auto& [name, m] : groups) {
    std::string line;
    for (const auto& [k, n] : *m) line += fmt::format("{}{} {}", line.empty() ? "" : ", ", k, n);
    s += fmt::format("  {:<9} {}\n", name, line);
  }
  return s;
}

std::string catalog_table_text(const std::vector<CatalogOp>& ops) {
  std::string s =
      fmt::format("{:<66} {:<14} {:<22} {:<7} {:>6} {:>5} {:>10} {:>9} {:>7}\n", "spec", "model",
                  "layer", "phase", "tokens", "count", "GFLOP", "MB", "FLOP/B");
  for (const auto& e : ops)
    s += fmt::format("{:<66} {:<14} {:<22} {:<7} {:>6} {:>5} {:>10.3f} {:>9.2f} {:>7.1f}\n",
                     e.op.spec(), e.prov.model, e.prov.layer, e.prov.phase, e.prov.tokens,
                     e.prov.count, e.op.flops() / 1e9, e.op.bytes() / 1e6, e.op.intensity());
  s += fmt::format("{} ops\n", ops.size());
  return s;
}

namespace {

// A CSV field: quoted when it holds a comma, a quote or a line break (quotes doubled).
std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string catalog_csv(const std::vector<CatalogOp>& ops) {
  std::string s = "spec,kind,dtype,model,layer,phase,tokens,context,count,flops,bytes,time_us\n";
  for (const auto& e : ops)
    s += fmt::format("{},{},{},{},{},{},{},{},{},{:.17g},{:.17g},\n", csv_field(e.op.spec()),
                     kind_name(e.op.kind), dtype_name(e.op.dtype), csv_field(e.prov.model),
                     csv_field(e.prov.layer), csv_field(e.prov.phase), e.prov.tokens,
                     e.prov.context, e.prov.count, e.op.flops(), e.op.bytes());
  return s;
}

}  // namespace attain
