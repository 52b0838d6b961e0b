// Named suites of ops: deterministic, unique by spec, each op with its provenance.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "attain/catalog.hpp"

namespace attain {

namespace {

struct SuiteModel {
  const char* name;
  std::vector<DType> dtypes;
};

// Appends the ops of every pass of every model, first occurrence of a spec wins
// (its provenance is kept; later occurrences add their counts).
class SuiteBuilder {
 public:
  void add_pass(const ModelConfig& cfg, const PassSpec& p) {
    for (auto& e : model_ops(cfg, p)) {
      add(std::move(e));
      // MoE routing is never perfectly balanced: prefill passes also get a skewed variant.
      if (p.phase == "prefill" && e.op.kind == OpKind::grouped_gemm && e.op.groups > 1) {
        CatalogOp v = ops_[index_[e.op.spec()]];
        v.op.skew = 1.0;
        v.prov.layer += "(imbalanced)";
        add(std::move(v));
      }
    }
  }
  void add(CatalogOp e) {
    auto [it, fresh] = index_.emplace(e.op.spec(), ops_.size());
    if (fresh) ops_.push_back(std::move(e));
  }
  std::vector<CatalogOp> take() { return std::move(ops_); }

 private:
  std::vector<CatalogOp> ops_;
  std::map<std::string, std::size_t> index_;
};

const std::vector<SuiteModel>& suite_models() {
  static const std::vector<SuiteModel> models = {
      {"deepseek-v3", {DType::bf16, DType::fp8, DType::f32}},
      {"llama-3.1-8b", {DType::bf16, DType::f32}},
      {"llama-3.1-70b", {DType::bf16, DType::f32}},
      {"llama-3.1-405b", {DType::bf16, DType::f32}},
      {"qwen2.5-72b", {DType::bf16, DType::f32}},
      {"mixtral-8x7b", {DType::bf16, DType::f32}},
      {"qwen3-30b-a3b", {DType::bf16, DType::f32}},
      {"gpt-oss-120b", {DType::bf16, DType::f32}},
      {"qwen3-8b", {DType::bf16, DType::f16}},  // fp16: every storage dtype is covered
  };
  return models;
}

std::vector<CatalogOp> llm_suite(const std::vector<std::int64_t>& prefill,
                                 const std::vector<std::int64_t>& batches,
                                 const std::vector<std::int64_t>& contexts) {
  SuiteBuilder sb;
  for (const auto& m : suite_models()) {
    const ModelConfig cfg = load_bundled_model(m.name);
    for (DType dt : m.dtypes) {
      for (auto t : prefill) sb.add_pass(cfg, {"prefill", t, t, dt});
      for (auto bsz : batches)
        for (auto ctx : contexts) sb.add_pass(cfg, {"decode", bsz, ctx, dt});
    }
  }
  return sb.take();
}

std::string stratum(const CatalogOp& e) {
  return fmt::format("{}/{}/{}", kind_name(e.op.kind), e.prov.phase, dtype_name(e.op.dtype));
}

// ~60 ops that run in under two minutes on two cores: every kind x phase x dtype that the
// small-pass pool has, taken round robin across strata, smallest first within each.
std::vector<CatalogOp> quick_suite() {
  SuiteBuilder sb;
  for (const char* name :
       {"llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b", "qwen3-8b"}) {
    const ModelConfig cfg = load_bundled_model(name);
    std::vector<DType> dts = {DType::f32, DType::bf16};
    if (cfg.fp8_weights) dts.push_back(DType::fp8);
    if (cfg.name == "qwen3-8b") dts = {DType::f16};  // as in llm-1055: fp16 comes from Qwen3-8B
    for (DType dt : dts) {
      for (std::int64_t t : {128, 512}) sb.add_pass(cfg, {"prefill", t, t, dt});
      for (std::int64_t bsz : {1, 8, 32}) sb.add_pass(cfg, {"decode", bsz, 2048, dt});
    }
  }
  std::map<std::string, std::vector<CatalogOp>> strata;
  for (auto& e : sb.take()) {
    // A quick run: at most ~6 GFLOP per op and ~192 MiB of operands (MoE experts: 480 MiB,
    // since a prefill's experts hold most of a layer's weights).
    const double max_bytes = (e.op.kind == OpKind::grouped_gemm ? 480.0 : 192.0) * (1 << 20);
    if (e.op.flops() > 6e9 || e.op.bytes() > max_bytes) continue;
    strata[stratum(e)].push_back(std::move(e));
  }
  for (auto& [k, v] : strata) {
    // Spread within a stratum: alternate from the large and the small end (by bytes).
    std::stable_sort(v.begin(), v.end(), [](const CatalogOp& a, const CatalogOp& b) {
      return a.op.bytes() < b.op.bytes();
    });
    std::vector<CatalogOp> spread;
    for (std::size_t lo = 0, hi = v.size(); lo < hi;) {
      spread.push_back(v[--hi]);
      if (lo < hi) spread.push_back(v[lo++]);
    }
    v = std::move(spread);
  }
  std::vector<CatalogOp> out;
  constexpr std::size_t kTarget = 60;
  for (std::size_t round = 0; out.size() < kTarget; ++round) {
    bool any = false;
    for (auto& [k, v] : strata) {
      if (round < v.size() && out.size() < kTarget) {
        out.push_back(v[round]);
        any = true;
      }
    }
    if (!any) break;
  }
  return out;
}

}  // namespace

std::vector<std::string> suite_names() {
  return {"llm-1055", "quick"};
}

std::vector<CatalogOp> suite(std::string_view name) {
  if (name == "quick") return quick_suite();
  if (name == "llm-1055")  // Prefill of one sequence of 128..8192 tokens; decode batches 1..128 at
                           // an 8K context.
    if (name == "llm-1055") return llm_suite({128, 512, 2048, 8192}, {1, 8, 32, 128}, {8192});
  throw InputError(fmt::format("unknown suite '{}' (known: llm-1055, quick)", name));
}

}  // namespace attain
