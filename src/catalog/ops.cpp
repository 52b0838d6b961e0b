// The matrix ops of one forward pass of a model: x[T, hidden] . W[N, K]^T as inference
// engines run them, plus the attention products and the MoE experts.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "attain/catalog.hpp"

namespace attain {

namespace {

class PassBuilder {
 public:
  PassBuilder(const ModelConfig& c, const PassSpec& p) : cfg_(c), pass_(p) {}

  void gemm(std::string_view layer, std::int64_t n, std::int64_t k, std::int64_t count, DType dt) {
    Op op;
    op.kind = OpKind::gemm, op.dtype = dt, op.m = pass_.tokens, op.n = n, op.k = k;
    add(layer, op, count);
  }
  void batched(std::string_view layer, std::int64_t batch, std::int64_t m, std::int64_t n,
               std::int64_t k, std::int64_t count, DType dt) {
    Op op;
    op.kind = OpKind::batched_gemm, op.dtype = dt, op.batch = batch, op.m = m, op.n = n, op.k = k;
    add(layer, op, count);
  }
  void add(std::string_view layer, Op op, std::int64_t count) {
    if (count <= 0) return;
    op.validate();
    const std::string spec = op.spec();
    auto it = index_.find(spec);
    if (it != index_.end()) {  // same shape in two roles of the pass: one op, counts summed
      auto& e = ops_[it->second];
      e.prov.count += count;
      if (e.prov.layer.find(layer) == std::string::npos) e.prov.layer.append("+").append(layer);
      return;
    }
    index_.emplace(spec, ops_.size());
    Provenance pv{cfg_.name,
                  std::string(layer),
                  pass_.phase,
                  pass_.tokens,
                  pass_.phase == "decode" ? pass_.context : pass_.tokens,
                  count};
    ops_.push_back({op, std::move(pv)});
  }
  std::vector<CatalogOp> take() { return std::move(ops_); }

 private:
  const ModelConfig& cfg_;
  const PassSpec& pass_;
  std::vector<CatalogOp> ops_;
  std::map<std::string, std::size_t> index_;
};

// The layers whose attention reads the same number of keys at this context, in layer order
// of first appearance. At prefill every layer reads the tokens of the pass (context = tokens).
struct KeySpan {
  std::int64_t keys = 0, layers = 0;
  std::string suffix;  // "" when the keys are the whole context, else "_window" or "_chunk"
};
std::vector<KeySpan> key_spans(const ModelConfig& c, std::int64_t context) {
  std::vector<KeySpan> out;
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const std::int64_t keys = c.attention_keys(l, context);
    const char* suffix = keys == context                 ? ""
                         : c.span(l) == AttnSpan::window ? "_window"
                                                         : "_chunk";
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const KeySpan& s) { return s.keys == keys && s.suffix == suffix; });
    if (it == out.end()) it = out.insert(out.end(), {keys, 0, suffix});
    ++it->layers;
  }
  return out;
}

}  // namespace

std::vector<CatalogOp> model_ops(const ModelConfig& c, const PassSpec& p) {
  if (p.phase != "prefill" && p.phase != "decode")
    throw InputError(fmt::format("phase '{}' (known: prefill, decode)", p.phase));
  if (p.tokens <= 0) throw InputError(fmt::format("tokens must be positive (got {})", p.tokens));
  const bool decode = p.phase == "decode";
  const std::int64_t T = p.tokens, ctx = decode ? p.context : p.tokens;
  if (decode && ctx <= 0)
    throw InputError(fmt::format("decode context must be positive (got {})", ctx));
  const DType lin = p.dtype;  // projections, experts
  const DType act =
      p.dtype == DType::fp8 ? DType::bf16 : p.dtype;  // router, attention products, LM head
  const std::int64_t L = c.layers, Ld = c.dense_layers(), Lm = L - Ld;
  PassBuilder b(c, p);

  // ---- attention ----
  if (c.is_mla()) {
    const std::int64_t H = c.heads, qk = c.qk_nope_head_dim + c.qk_rope_head_dim;
    const std::int64_t kv_a = c.kv_lora_rank + c.qk_rope_head_dim;
    if (c.q_lora_rank > 0) {
      b.gemm("q_a+kv_a", c.q_lora_rank + kv_a, c.hidden, L, lin);
      b.gemm("q_b", H * qk, c.q_lora_rank, L, lin);
    } else {
      b.gemm("q+kv_a", H * qk + kv_a, c.hidden, L, lin);
    }
    b.gemm("kv_b", H * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank, L, lin);
    if (decode) {
      Op op;
      op.kind = OpKind::mla_decode, op.dtype = p.dtype, op.b = T, op.s = ctx, op.h = H;
      b.add("mla_decode", op, L);
    } else {
      b.batched("attn_qk", H, T, T, qk, L, act);
      b.batched("attn_pv", H, T, c.v_head_dim, T, L, act);
    }
    b.gemm("o", c.hidden, H * c.v_head_dim, L, lin);
  } else {
    const std::int64_t H = c.heads, KV = c.kv_heads, hd = c.head_dim, G = H / KV;
    b.gemm("qkv", (H + 2 * KV) * hd, c.hidden, L, lin);
    for (const KeySpan& s : key_spans(c, ctx)) {
      const std::string qk = "attn_qk" + s.suffix, pv = "attn_pv" + s.suffix;
      if (decode) {  // each (sequence, kv head): G query heads against the keys it reads
        b.batched(qk, T * KV, G, s.keys, hd, s.layers, act);
        b.batched(pv, T * KV, G, hd, s.keys, s.layers, act);
      } else {  // one sequence of T tokens (the causal half, and any window, counted in full)
        b.batched(qk, KV, T * G, T, hd, s.layers, act);
        b.batched(pv, KV, T * G, hd, T, s.layers, act);
      }
    }
    b.gemm("o", c.hidden, H * hd, L, lin);
  }

  // ---- MLP / MoE ----
  b.gemm("gate_up", 2 * c.intermediate, c.hidden, Ld, lin);
  b.gemm("down", c.hidden, c.intermediate, Ld, lin);
  if (c.is_moe() && Lm > 0) {
    b.gemm("router", c.experts, c.hidden, Lm, act);
    // Experts that receive tokens, and the rows each gets when routing is balanced.
    const std::int64_t routed = T * c.experts_per_tok;
    const std::int64_t active = std::min(c.experts, routed);
    const std::int64_t rows = (routed + active - 1) / active;
    for (int which = 0; which < 2; ++which) {
      Op op;
      op.kind = OpKind::grouped_gemm, op.dtype = lin, op.groups = active, op.m = rows;
      op.n = which == 0 ? 2 * c.expert_intermediate : c.hidden;
      op.k = which == 0 ? c.hidden : c.expert_intermediate;
      op.layout = decode ? GroupedLayout::masked : GroupedLayout::contiguous;
      b.add(which == 0 ? "experts_gate_up" : "experts_down", op, Lm);
    }
    if (c.shared_intermediate > 0) {
      b.gemm("shared_gate_up", 2 * c.shared_intermediate, c.hidden, Lm, lin);
      b.gemm("shared_down", c.hidden, c.shared_intermediate, Lm, lin);
    }
    if (c.shared_expert_gate) b.gemm("shared_gate", 1, c.hidden, Lm, act);
  }
  b.gemm(kLmHeadRole, c.vocab, c.hidden, 1, act);
  return b.take();
}

namespace {
// Weights of one pass at T=1, MoE experts counted all (total) or top-k (active).
double weight_params(const ModelConfig& c, bool active_only) {
  PassSpec p{"decode", 1, 1, DType::bf16};
  // The input embedding, unless it is the LM head's matrix (tied embeddings).
  double total = c.tied_embeddings ? 0.0 : static_cast<double>(c.vocab * c.hidden);
  for (const auto& e : model_ops(c, p)) {
    const Op& op = e.op;
    if (op.kind == OpKind::gemm) total += static_cast<double>(op.n * op.k * e.prov.count);
    if (op.kind == OpKind::grouped_gemm) {
      const double experts =
          active_only ? static_cast<double>(c.experts_per_tok) : static_cast<double>(c.experts);
      total += experts * static_cast<double>(op.n * op.k * e.prov.count);
    }
  }
  return total;
}
}  // namespace

double ModelConfig::params() const {
  return weight_params(*this, false);
}
double ModelConfig::active_params() const {
  return weight_params(*this, true);
}

}  // namespace attain
