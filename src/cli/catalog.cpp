// attain catalog: the ops of a suite or a model config.
#include <fmt/format.h>

#include <iostream>
#include <map>

#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

nlohmann::json op_json(const CatalogOp& e) {
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

nlohmann::json summary_json(const std::vector<CatalogOp>& ops) {
  std::map<std::string, std::size_t> by_kind, by_phase, by_dtype, by_model;
  double flops = 0, bytes = 0;
  for (const auto& e : ops) {
    ++by_kind[std::string(kind_name(e.op.kind))], ++by_phase[e.prov.phase];
    ++by_dtype[std::string(dtype_name(e.op.dtype))], ++by_model[e.prov.model];
    flops += e.op.flops(), bytes += e.op.bytes();
  }
  return {{"ops", ops.size()},    {"by_kind", by_kind},   {"by_phase", by_phase},
          {"by_dtype", by_dtype}, {"by_model", by_model}, {"total_flops", flops},
          {"total_bytes", bytes}};
}

const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    OpSource src;
    bool json = false, summary = false;
    std::string out;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "catalog", "List the matrix ops of a suite (default llm-1055) or a model config");
  o->src.add_to(sub, true);
  sub->add_flag("--json", o->json, "print a JSON array, one object per op");
  sub->add_flag("--summary", o->summary,
                "counts by kind, phase, dtype and model; total FLOPs and bytes");
  sub->add_option("--out", o->out, "also write the JSON to this file");
  set_action(sub, [o] {
    const auto ops = o->src.resolve("llm-1055");
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& e : ops) arr.push_back(op_json(e));
    if (o->summary) {
      const auto s = summary_json(ops);
      if (o->json) {
        emit_json(s, o->out, true);
        return 0;
      }
      fmt::print("{} ops, {:.3g} TFLOP and {:.3g} GB in all (each op once)\n", ops.size(),
                 s["total_flops"].get<double>() / 1e12, s["total_bytes"].get<double>() / 1e9);
      for (const char* key : {"by_kind", "by_phase", "by_dtype", "by_model"}) {
        std::string line;
        for (auto it = s[key].begin(); it != s[key].end(); ++it)
          line += fmt::format("{}{} {}", line.empty() ? "" : ", ", it.key(),
                              it.value().get<std::size_t>());
        fmt::print("  {:<9} {}\n", std::string(key).substr(3), line);
      }
      if (!o->out.empty()) emit_json(s, o->out, false);
      return 0;
    }
    if (o->json) {
      emit_json(arr, o->out, true);
      return 0;
    }
    fmt::print("{:<66} {:<14} {:<22} {:<7} {:>6} {:>5} {:>10} {:>9} {:>7}\n", "spec", "model",
               "layer", "phase", "tokens", "count", "GFLOP", "MB", "FLOP/B");
    for (const auto& e : ops)
      fmt::print("{:<66} {:<14} {:<22} {:<7} {:>6} {:>5} {:>10.3f} {:>9.2f} {:>7.1f}\n",
                 e.op.spec(), e.prov.model, e.prov.layer, e.prov.phase, e.prov.tokens, e.prov.count,
                 e.op.flops() / 1e9, e.op.bytes() / 1e6, e.op.intensity());
    fmt::print("{} ops\n", ops.size());
    if (!o->out.empty()) emit_json(arr, o->out, false);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
