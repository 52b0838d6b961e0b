// Hugging Face config.json -> ModelConfig. One table row per family says which rules it follows
// (attention, MoE layout, attention spans), how it spells the fields, the defaults its config
// class supplies when a published file leaves them out, and the fields it reads and ignores on
// purpose (they change no matrix shape). Errors name the file and the field.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "attain/catalog.hpp"
#include "attain/files.hpp"

namespace attain {

namespace {

using nlohmann::json;

enum class MoeRule {
  none,
  mixtral,   // num_local_experts of intermediate_size, every layer
  qwen,      // num_experts of moe_intermediate_size; decoder_sparse_step, mlp_only_layers,
             // shared_expert_intermediate_size (qwen2_moe)
  deepseek,  // n_routed_experts + n_shared_experts of moe_intermediate_size;
             // first_k_dense_replace, moe_layer_freq
  llama4,    // num_local_experts + one shared expert of intermediate_size; dense layers of
             // intermediate_size_mlp; moe_layers or interleave_moe_layer_step
};

enum class SpanRule {
  none,       // every layer attends to the whole context
  all,        // sliding_window (when set) on every layer
  alternate,  // sliding_window on even layers
  pattern,    // sliding_window except on every sliding_window_pattern-th layer
  llama4,     // attention_chunk_size on the RoPE layers (no_rope_layers = 1)
};

struct Family {
  std::string_view type;
  std::string_view text_type = {};  // the model_type of its text_config in a multimodal config
  bool mla = false;
  MoeRule moe = MoeRule::none;
  SpanRule spans = SpanRule::none;
  bool tied = false;  // tie_word_embeddings when the config leaves it out
  bool head_dim_from_hidden =
      false;  // the q projection is hidden_size wide, whatever head_dim says
  std::string_view scoring = "softmax";
  std::vector<std::pair<std::string_view, std::string_view>> names = {};  // field -> its key here
  std::vector<std::pair<std::string_view, std::int64_t>> defaults = {};   // config class defaults
  std::vector<std::string_view> neutral = {};  // read and ignored: no matrix shape changes
};

// Fields every family may carry that change no matrix shape (token ids, norms, RoPE, dropout,
// biases, routing losses) and the multimodal wrapper's fields (the vision tower is out of scope).
const std::vector<std::string_view> kNeutral = {"architectures",
                                                "auto_map",
                                                "_name_or_path",
                                                "transformers_version",
                                                "bos_token_id",
                                                "eos_token_id",
                                                "pad_token_id",
                                                "hidden_act",
                                                "hidden_activation",
                                                "initializer_range",
                                                "max_position_embeddings",
                                                "rms_norm_eps",
                                                "rope_theta",
                                                "rope_scaling",
                                                "rope_parameters",
                                                "attention_dropout",
                                                "attention_bias",
                                                "mlp_bias",
                                                "use_cache",
                                                "output_router_logits",
                                                "router_aux_loss_coef",
                                                "router_jitter_noise",
                                                "norm_topk_prob",
                                                "vision_config",
                                                "boi_token_index",
                                                "eoi_token_index",
                                                "image_token_index",
                                                "mm_tokens_per_image"};

// Qwen configs carry a sliding window switched off (use_sliding_window: false).
const std::vector<std::string_view> kQwenNeutral = {"use_sliding_window", "sliding_window",
                                                    "max_window_layers", "pretraining_tp"};
// DeepSeek-style MoE: routing and training details, the multi-token-prediction layer (not part of
// a forward pass), and the MLA configs' head_dim / num_key_value_heads (MLA has its own widths).
const std::vector<std::string_view> kDeepSeekNeutral = {"aux_loss_alpha",
                                                        "seq_aux",
                                                        "topk_method",
                                                        "ep_size",
                                                        "pretraining_tp",
                                                        "rope_interleave",
                                                        "num_nextn_predict_layers",
                                                        "moe_router_dtype",
                                                        "head_dim",
                                                        "num_key_value_heads",
                                                        "decoder_sparse_step",
                                                        "partial_rotary_factor",
                                                        "use_qk_norm"};
const std::vector<std::string_view> kGemmaNeutral = {
    "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
    "cache_implementation", "rope_local_base_freq"};

// Deeper than any published model by far; per-layer tables stay small.
constexpr std::int64_t kMaxLayers = 1 << 16;

const std::vector<Family>& families() {
  static const std::vector<Family> t = {
      {.type = "llama", .neutral = {"pretraining_tp"}},
      {.type = "mistral", .spans = SpanRule::all},
      {.type = "qwen2", .neutral = kQwenNeutral},
      {.type = "qwen3", .neutral = kQwenNeutral},
      {.type = "gemma", .tied = true},
      {.type = "gemma2",
       .spans = SpanRule::alternate,
       .tied = true,
       .defaults = {{"sliding_window", 4096}},
       .neutral = kGemmaNeutral},
      {.type = "gemma3",
       .text_type = "gemma3_text",
       .spans = SpanRule::pattern,
       .tied = true,
       .defaults = {{"vocab_size", 262208},
                    {"num_attention_heads", 8},
                    {"num_key_value_heads", 4},
                    {"head_dim", 256},
                    {"sliding_window", 4096},
                    {"sliding_window_pattern", 6}},
       .neutral = kGemmaNeutral},
      {.type = "phi3",
       .spans = SpanRule::all,
       .head_dim_from_hidden = true,
       .neutral = {"embd_pdrop", "resid_pdrop", "original_max_position_embeddings"}},
      {.type = "mixtral", .moe = MoeRule::mixtral, .spans = SpanRule::all},
      // gpt_oss's alternate 128-token windows are not applied: llm-1055 holds its full-context
      // attention shapes.
      {.type = "gpt_oss",
       .moe = MoeRule::mixtral,
       .neutral = {"sliding_window", "layer_types", "swiglu_limit", "initial_context_length"}},
      {.type = "qwen3_moe", .moe = MoeRule::qwen, .neutral = kQwenNeutral},
      {.type = "qwen2_moe", .moe = MoeRule::qwen, .neutral = kQwenNeutral},
      {.type = "deepseek_v2", .mla = true, .moe = MoeRule::deepseek, .neutral = kDeepSeekNeutral},
      {.type = "deepseek_v3", .mla = true, .moe = MoeRule::deepseek, .neutral = kDeepSeekNeutral},
      {.type = "glm4_moe",
       .moe = MoeRule::deepseek,
       .scoring = "sigmoid",
       .neutral = kDeepSeekNeutral},
      {.type = "llama4",
       .text_type = "llama4_text",
       .moe = MoeRule::llama4,
       .spans = SpanRule::llama4,
       .defaults = {{"intermediate_size_mlp", 16384}, {"no_rope_layer_interval", 4}},
       .neutral = {"attn_scale", "attn_temperature_tuning", "floor_scale", "for_llm_compressor",
                   "use_qk_norm", "cache_implementation"}},
      {.type = "dbrx",
       .moe = MoeRule::mixtral,
       .names = {{"hidden_size", "d_model"},
                 {"num_hidden_layers", "n_layers"},
                 {"num_attention_heads", "n_heads"},
                 {"num_key_value_heads", "attn_config.kv_n_heads"},
                 {"intermediate_size", "ffn_config.ffn_hidden_size"},
                 {"num_local_experts", "ffn_config.moe_num_experts"},
                 {"num_experts_per_tok", "ffn_config.moe_top_k"}},
       .neutral = {"emb_pdrop", "resid_pdrop", "max_seq_len"}},
  };
  return t;
}

const Family* find_family(std::string_view type) {
  for (const Family& f : families())
    if (f.type == type || (!f.text_type.empty() && f.text_type == type)) return &f;
  return nullptr;
}

bool contains(const std::vector<std::string_view>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The fields of one config body as its family spells them, each lookup recorded so that the
// fields no rule read can be listed.
class Fields {
 public:
  Fields(const json& j, const Family& fam, std::string origin, std::string prefix)
      : j_(j), fam_(fam), origin_(std::move(origin)), prefix_(std::move(prefix)) {}

  const std::string& origin() const { return origin_; }
  // The name an error gives a field: its key in this family, inside text_config when nested.
  std::string shown(std::string_view name) const { return prefix_ + std::string(key(name)); }

  // The value, or null when absent or JSON null (then the family's default applies).
  const json* find(std::string_view name) {
    const std::string path(key(name));
    const json* at = &j_;
    std::size_t from = 0;
    for (;;) {
      const std::size_t dot = path.find('.', from);
      const std::string part = path.substr(from, dot - from);
      if (at == &j_) read_.insert(part);
      auto it = at->find(part);
      if (it == at->end() || it->is_null()) return nullptr;
      at = &*it;
      if (dot == std::string::npos) return at;
      if (!at->is_object()) fail("{}: field '{}' must be an object", origin_, prefix_ + part);
      from = dot + 1;
    }
  }
  std::optional<std::int64_t> opt(std::string_view name) {
    const json* v = find(name);
    if (v == nullptr) {
      for (const auto& [k, d] : fam_.defaults)
        if (k == name) return d;
      return std::nullopt;
    }
    return integer(*v, name);
  }
  std::optional<std::int64_t> opt_positive(std::string_view name) {
    auto v = opt(name);
    if (v && *v <= 0) fail("{}: field '{}' must be positive (got {})", origin_, shown(name), *v);
    return v;
  }
  std::int64_t req(std::string_view name) {
    auto v = opt_positive(name);
    if (!v) fail("{}: missing field '{}'", origin_, shown(name));
    return *v;
  }
  // The first of several accepted spellings (num_experts_per_tok / experts_per_token).
  std::int64_t req_any(std::initializer_list<std::string_view> names) {
    std::optional<std::int64_t> first;
    for (auto n : names)  // every spelling is looked up, so none is listed as unread
      if (auto v = opt_positive(n); v && !first) first = v;
    if (first) return *first;
    std::string list;
    for (auto n : names) list += (list.empty() ? "'" : " or '") + shown(n) + "'";
    fail("{}: missing field {}", origin_, list);
  }
  double number(std::string_view name, double fallback) {
    const json* v = find(name);
    if (v == nullptr) return fallback;
    if (!v->is_number()) fail("{}: field '{}' must be a number", origin_, shown(name));
    return v->get<double>();
  }
  std::optional<std::string> text(std::string_view name) {
    const json* v = find(name);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) fail("{}: field '{}' must be a string", origin_, shown(name));
    return v->get<std::string>();
  }
  // A list of integers (empty when absent); `length` > 0: it must hold one entry per layer.
  std::vector<std::int64_t> integers(std::string_view name, std::int64_t length = 0) {
    std::vector<std::int64_t> out;
    for (const json& e : array(name, length)) out.push_back(integer(e, name));
    return out;
  }
  std::vector<std::string> strings(std::string_view name, std::int64_t length) {
    std::vector<std::string> out;
    for (const json& e : array(name, length)) {
      if (!e.is_string()) fail("{}: field '{}' must hold strings", origin_, shown(name));
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  // Keys of the body that no lookup asked for.
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : j_.items())
      if (!read_.count(k)) out.push_back(k);
    return out;
  }

  template <typename... Args>
  [[noreturn]] static void fail(fmt::format_string<Args...> f, Args&&... args) {
    throw InputError(fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  std::string_view key(std::string_view name) const {
    for (const auto& [n, k] : fam_.names)
      if (n == name) return k;
    return name;
  }
  std::int64_t integer(const json& v, std::string_view name) const {
    if (!v.is_number_integer())
      fail("{}: field '{}' must be an integer (got {})", origin_, shown(name), v.dump());
    const auto x = v.get<std::int64_t>();
    if (x < 0 || x >= kMaxDim) fail("{}: field '{}' = {} is out of range", origin_, shown(name), x);
    return x;
  }
  std::vector<json> array(std::string_view name, std::int64_t length) {
    const json* v = find(name);
    if (v == nullptr || (v->is_array() && v->empty())) return {};
    if (!v->is_array()) fail("{}: field '{}' must be an array", origin_, shown(name));
    if (length > 0 && static_cast<std::int64_t>(v->size()) != length)
      fail("{}: field '{}' has {} entries for {} layers (num_hidden_layers)", origin_, shown(name),
           v->size(), length);
    return std::vector<json>(v->begin(), v->end());
  }

  const json& j_;
  const Family& fam_;
  std::string origin_, prefix_;
  std::set<std::string> read_;
};

std::string supported_list() {
  std::string s;
  for (const Family& f : families()) s += (s.empty() ? "" : ", ") + std::string(f.type);
  return s;
}

void read_attention(Fields& f, const Family& fam, ModelConfig& c) {
  if (fam.mla) {
    c.kv_heads = c.heads;                              // MLA: every head reads the one latent cache
    c.q_lora_rank = f.opt("q_lora_rank").value_or(0);  // null in V2-Lite: q is projected directly
    c.kv_lora_rank = f.req("kv_lora_rank");
    c.qk_nope_head_dim = f.req("qk_nope_head_dim");
    c.qk_rope_head_dim = f.req("qk_rope_head_dim");
    c.v_head_dim = f.req("v_head_dim");
    c.head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim;
    if (c.kv_lora_rank + c.qk_rope_head_dim != kMlaDk || c.kv_lora_rank != kMlaDv)
      Fields::fail(
          "{}: kv_lora_rank {} + qk_rope_head_dim {}: attain's MLA decode op needs 512 + 64",
          f.origin(), c.kv_lora_rank, c.qk_rope_head_dim);
    return;
  }
  c.kv_heads = f.opt_positive("num_key_value_heads").value_or(c.heads);  // absent: MHA
  const auto head_dim = f.opt_positive("head_dim");
  if (fam.head_dim_from_hidden && head_dim && *head_dim * c.heads != c.hidden)
    Fields::fail(
        "{}: {} {} x {} {} = {}, but {}'s q projection is {} {} wide: the fields contradict",
        f.origin(), f.shown("head_dim"), *head_dim, f.shown("num_attention_heads"), c.heads,
        *head_dim * c.heads, fam.type, f.shown("hidden_size"), c.hidden);
  if (!head_dim && c.hidden % c.heads != 0)
    Fields::fail("{}: {} {} is not a multiple of {} {} (and no head_dim is given)", f.origin(),
                 f.shown("hidden_size"), c.hidden, f.shown("num_attention_heads"), c.heads);
  c.head_dim = head_dim.value_or(c.hidden / c.heads);
  if (c.heads % c.kv_heads != 0)
    Fields::fail("{}: {} {} is not a multiple of {} {}", f.origin(), f.shown("num_attention_heads"),
                 c.heads, f.shown("num_key_value_heads"), c.kv_heads);
}

void read_moe(Fields& f, const Family& fam, ModelConfig& c) {
  switch (fam.moe) {
    case MoeRule::none:
      return;
    case MoeRule::mixtral:
      c.experts = f.req("num_local_experts");
      c.experts_per_tok = f.req_any({"num_experts_per_tok", "experts_per_token"});
      c.expert_intermediate = c.intermediate;
      break;
    case MoeRule::qwen: {
      c.experts = f.req("num_experts");
      c.experts_per_tok = f.req("num_experts_per_tok");
      c.expert_intermediate = f.req("moe_intermediate_size");
      c.shared_intermediate = f.opt("shared_expert_intermediate_size").value_or(0);
      c.shared_expert_gate = c.shared_intermediate > 0;  // qwen2_moe: sigmoid(x . w), w [1, hidden]
      c.moe_step = f.opt_positive("decoder_sparse_step").value_or(1);
      c.moe_phase = c.moe_step - 1;  // MoE where (layer + 1) % decoder_sparse_step == 0
      c.mlp_only_layers = f.integers("mlp_only_layers");
      break;
    }
    case MoeRule::deepseek:
      c.experts = f.req("n_routed_experts");
      c.experts_per_tok = f.req("num_experts_per_tok");
      c.expert_intermediate = f.req("moe_intermediate_size");
      c.shared_intermediate = f.opt("n_shared_experts").value_or(0) * c.expert_intermediate;
      c.first_k_dense = f.opt("first_k_dense_replace").value_or(0);
      c.moe_step = f.opt_positive("moe_layer_freq").value_or(1);  // MoE where layer % freq == 0
      c.n_group = f.opt_positive("n_group").value_or(1);
      c.topk_group = f.opt_positive("topk_group").value_or(1);
      c.routed_scaling_factor = f.number("routed_scaling_factor", 1.0);
      c.scoring_func = f.text("scoring_func").value_or(std::string(fam.scoring));
      break;
    case MoeRule::llama4: {
      c.experts = f.req("num_local_experts");
      c.experts_per_tok = f.req("num_experts_per_tok");
      c.expert_intermediate = c.intermediate;
      c.shared_intermediate = c.intermediate;
      c.intermediate = f.req("intermediate_size_mlp");
      const auto moe_layers = f.integers("moe_layers");
      if (moe_layers.empty()) {
        c.moe_step = f.opt_positive("interleave_moe_layer_step").value_or(1);
        c.moe_phase = c.moe_step - 1;
      } else {
        f.opt("interleave_moe_layer_step");  // moe_layers, when given, is the list itself
        for (std::int64_t l = 0; l < c.layers; ++l)
          if (std::find(moe_layers.begin(), moe_layers.end(), l) == moe_layers.end())
            c.mlp_only_layers.push_back(l);
        for (auto l : moe_layers)
          if (l >= c.layers)
            Fields::fail("{}: {} names layer {} of {}", f.origin(), f.shown("moe_layers"), l,
                         c.layers);
      }
      break;
    }
  }
  if (c.experts_per_tok > c.experts)
    Fields::fail("{}: {} {} exceeds the {} experts", f.origin(), f.shown("num_experts_per_tok"),
                 c.experts_per_tok, c.experts);
  if (c.first_k_dense > c.layers)
    Fields::fail("{}: {} {} exceeds the {} layers", f.origin(), f.shown("first_k_dense_replace"),
                 c.first_k_dense, c.layers);
  for (auto l : c.mlp_only_layers)
    if (l >= c.layers)
      Fields::fail("{}: {} names layer {} of {}", f.origin(), f.shown("mlp_only_layers"), l,
                   c.layers);
}

AttnSpan span_named(const Fields& f, const std::string& s) {
  static const std::pair<const char*, AttnSpan> kNames[] = {{"full_attention", AttnSpan::full},
                                                            {"sliding_attention", AttnSpan::window},
                                                            {"chunked_attention", AttnSpan::chunk}};
  for (const auto& [n, span] : kNames)
    if (s == n) return span;
  Fields::fail("{}: {} entry '{}' (known: full_attention, sliding_attention, chunked_attention)",
               f.origin(), f.shown("layer_types"), s);
}

void read_spans(Fields& f, const Family& fam, ModelConfig& c) {
  if (fam.spans == SpanRule::none) return;
  const bool chunked = fam.spans == SpanRule::llama4;
  const auto window = f.opt_positive(chunked ? "attention_chunk_size" : "sliding_window");
  const auto types = f.strings("layer_types", c.layers);
  const AttnSpan local = chunked ? AttnSpan::chunk : AttnSpan::window;
  std::vector<AttnSpan> spans(static_cast<std::size_t>(c.layers), AttnSpan::full);
  if (!types.empty()) {
    for (std::size_t l = 0; l < spans.size(); ++l) spans[l] = span_named(f, types[l]);
  } else if (fam.spans == SpanRule::all) {
    std::fill(spans.begin(), spans.end(), local);
  } else if (fam.spans == SpanRule::alternate) {
    for (std::size_t l = 0; l < spans.size(); l += 2) spans[l] = local;
  } else if (fam.spans == SpanRule::pattern) {
    const auto p = static_cast<std::size_t>(f.req("sliding_window_pattern"));
    for (std::size_t l = 0; l < spans.size(); ++l) spans[l] = (l + 1) % p != 0 ? local : spans[l];
  } else {  // llama4: the RoPE layers (no_rope_layers[l] = 1) are chunked, the NoPE ones global
    const auto rope = f.integers("no_rope_layers", c.layers);
    const std::int64_t every = f.req("no_rope_layer_interval");
    for (std::int64_t l = 0; l < c.layers; ++l)
      if (rope.empty() ? (l + 1) % every != 0 : rope[static_cast<std::size_t>(l)] != 0)
        spans[static_cast<std::size_t>(l)] = local;
  }
  const bool any =
      std::any_of(spans.begin(), spans.end(), [](AttnSpan s) { return s != AttnSpan::full; });
  if (!any || !window) return;  // sliding_window null: every layer sees the whole context
  c.window = *window;
  c.spans = std::move(spans);
}

// The default dtype: fp8 block-scaled weights when quantization_config says so, else the
// checkpoint's torch_dtype (dtype in newer files), in the text model's config or the wrapper's.
void read_dtype(Fields& f, const json& root, ModelConfig& c) {
  auto at = [&](const char* key) -> const json* {
    if (const json* v = f.find(key)) return v;
    auto it = root.find(key);
    return it == root.end() || it->is_null() ? nullptr : &*it;
  };
  if (const json* q = at("quantization_config"); q != nullptr && q->is_object()) {
    auto m = q->find("quant_method");
    c.fp8_weights = m != q->end() && m->is_string() && m->get<std::string>() == "fp8";
  }
  const json* t = at("torch_dtype");
  if (t == nullptr) t = at("dtype");
  if (c.fp8_weights) {
    c.dtype = DType::fp8;
    return;
  }
  if (t == nullptr || !t->is_string()) return;
  static const std::pair<const char*, DType> kTorch[] = {
      {"bfloat16", DType::bf16}, {"float16", DType::f16}, {"float32", DType::f32}};
  for (const auto& [name, dt] : kTorch)
    if (*t == name) {
      c.dtype = dt;
      return;
    }
  c.notes.push_back(
      fmt::format("torch_dtype {} has no attain dtype: bf16 is the default", t->dump()));
}

std::string model_type_of(const json& j, std::string_view origin, const char* where) {
  auto mt = j.find("model_type");
  if (mt == j.end() || !mt->is_string())
    throw InputError(fmt::format("{}: missing field '{}'", origin, where));
  return mt->get<std::string>();
}

}  // namespace

std::vector<std::string> supported_model_types() {
  std::vector<std::string> out;
  for (const Family& f : families()) out.emplace_back(f.type);
  return out;
}

ModelConfig parse_model_config(std::string_view text, std::string_view name,
                               const ConfigOptions& opts) {
  const json root = parse_json_input(text, name);
  if (!root.is_object())
    throw InputError(fmt::format("{}: a model config must be a JSON object", name));
  ModelConfig c;
  c.name = std::string(name);
  std::string type = model_type_of(root, name, "model_type");
  // A multimodal config: the language model is its text_config (the vision tower is left out).
  const json* body = &root;
  std::string prefix;
  if (auto tc = root.find("text_config"); tc != root.end() && !tc->is_null()) {
    if (!tc->is_object())
      throw InputError(fmt::format("{}: field 'text_config' must be an object", name));
    body = &*tc;
    prefix = "text_config.";
    if (body->contains("model_type") && find_family(type) == nullptr)
      type = model_type_of(*body, name, "text_config.model_type");
    c.notes.push_back(fmt::format(
        "{}: the language model's ops (text_config); the vision tower is out of scope", type));
  }
  const Family* fam = find_family(type);
  if (fam == nullptr && !opts.assume_llama)
    throw InputError(fmt::format(
        "{}: unknown model_type '{}' (supported: {}; a config with the Llama fields reads as "
        "Llama-like with --assume-llama)",
        name, type, supported_list()));
  if (fam == nullptr) {
    fam = find_family("llama");
    c.notes.push_back(fmt::format(
        "model_type '{}' is not a known family: read as Llama-like (--assume-llama): q, k, v and "
        "o projections over num_key_value_heads, a gated MLP of intermediate_size, the LM head",
        type));
  }
  c.model_type = fam->type == "llama" ? type : std::string(fam->type);
  c.mla = fam->mla;
  Fields f(*body, *fam, std::string(name), prefix);
  f.find("model_type");
  c.hidden = f.req("hidden_size");
  c.layers = f.req("num_hidden_layers");
  if (c.layers > kMaxLayers)
    Fields::fail("{}: {} {} is out of range (at most {})", name, f.shown("num_hidden_layers"),
                 c.layers, kMaxLayers);
  c.vocab = f.req("vocab_size");
  c.heads = f.req("num_attention_heads");
  c.intermediate = f.req("intermediate_size");
  const json* tied = f.find("tie_word_embeddings");
  c.tied_embeddings = tied != nullptr && tied->is_boolean() ? tied->get<bool>() : fam->tied;
  read_attention(f, *fam, c);
  read_moe(f, *fam, c);
  read_spans(f, *fam, c);
  read_dtype(f, root, c);
  f.find("text_config");
  std::string unread;
  for (const auto& k : f.unread())
    if (!contains(kNeutral, k) && !contains(fam->neutral, k))
      unread += (unread.empty() ? "" : ", ") + k;
  if (!unread.empty())
    c.notes.push_back(fmt::format("fields no {} rule reads (left out): {}", fam->type, unread));
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& file, const ConfigOptions& opts) {
  ModelConfig c = parse_model_config(read_input_file(file, kMaxConfigBytes, "model config"),
                                     file.string(), opts);
  c.name = file.stem().string();
  return c;
}

bool ModelConfig::layer_is_dense(std::int64_t layer) const {
  if (!is_moe()) return true;
  if (layer < first_k_dense || layer % moe_step != moe_phase) return true;
  return std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end();
}

std::int64_t ModelConfig::dense_layers() const {
  std::int64_t n = 0;
  for (std::int64_t l = 0; l < layers; ++l) n += layer_is_dense(l) ? 1 : 0;
  return n;
}

AttnSpan ModelConfig::span(std::int64_t layer) const {
  return spans.empty() ? AttnSpan::full : spans[static_cast<std::size_t>(layer)];
}

std::int64_t ModelConfig::attention_keys(std::int64_t layer, std::int64_t context) const {
  switch (span(layer)) {
    case AttnSpan::window:
      return std::min(context, window);
    case AttnSpan::chunk:  // the tokens of the current chunk, this one included
      return (context - 1) % window + 1;
    case AttnSpan::full:
      break;
  }
  return context;
}

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("ATTAIN_DATA_DIR"); env && *env) return env;
  return ATTAIN_DATA_DIR;
}

std::vector<std::string> bundled_models() {
  std::vector<std::string> names;
  const auto dir = data_dir() / "models";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

ModelConfig load_bundled_model(std::string_view name, const ConfigOptions& opts) {
  const std::filesystem::path p(name);
  if (p.extension() == ".json" || p.has_parent_path()) return load_model_config(p, opts);
  const auto file = data_dir() / "models" / (std::string(name) + ".json");
  if (!std::filesystem::exists(file)) {
    std::string known;
    for (const auto& n : bundled_models()) known += (known.empty() ? "" : ", ") + n;
    throw InputError(
        fmt::format("unknown model '{}' (bundled: {}; or give a config.json path)", name, known));
  }
  return load_model_config(file, opts);
}

}  // namespace attain
