// Hugging Face config.json -> ModelConfig, with errors that name the file and the field.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attain/catalog.hpp"
#include "attain/files.hpp"

namespace attain {

namespace {

using nlohmann::json;

class Fields {
 public:
  Fields(const json& j, std::string_view origin) : j_(j), origin_(origin) {}

  std::int64_t req(const char* key) const {
    auto v = opt(key);
    if (!v) throw InputError(fmt::format("{}: missing field '{}'", origin_, key));
    return *v;
  }
  // The first of several accepted spellings (configs differ: num_local_experts / num_experts ...).
  std::int64_t req_any(std::initializer_list<const char*> keys) const {
    for (const char* k : keys)
      if (auto v = opt(k)) return *v;
    std::string names;
    for (const char* k : keys) names += (names.empty() ? "'" : " or '") + std::string(k) + "'";
    throw InputError(fmt::format("{}: missing field {}", origin_, names));
  }
  std::optional<std::int64_t> opt(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer())
      throw InputError(
          fmt::format("{}: field '{}' must be an integer (got {})", origin_, key, it->dump()));
    const auto v = it->get<std::int64_t>();
    if (v < 0 || v >= kMaxDim)
      throw InputError(fmt::format("{}: field '{}' = {} is out of range", origin_, key, v));
    return v;
  }
  std::int64_t positive(const char* key, std::int64_t v) const {
    if (v <= 0)
      throw InputError(fmt::format("{}: field '{}' must be positive (got {})", origin_, key, v));
    return v;
  }

 private:
  const json& j_;
  std::string origin_;
};

}  // namespace

ModelConfig parse_model_config(std::string_view text, std::string_view name) {
  const json j = parse_json_input(text, name);
  if (!j.is_object())
    throw InputError(fmt::format("{}: a model config must be a JSON object", name));
  const Fields f(j, name);
  ModelConfig c;
  c.name = std::string(name);
  auto mt = j.find("model_type");
  if (mt == j.end() || !mt->is_string())
    throw InputError(fmt::format("{}: missing field 'model_type'", name));
  c.model_type = mt->get<std::string>();
  static const char* kKnown[] = {"llama",     "qwen2",   "qwen3",      "mixtral",
                                 "qwen3_moe", "gpt_oss", "deepseek_v3"};
  if (std::find_if(std::begin(kKnown), std::end(kKnown),
                   [&](const char* k) { return c.model_type == k; }) == std::end(kKnown))
    throw InputError(
        fmt::format("{}: unknown model_type '{}' (supported: llama, qwen2, qwen3, mixtral, "
                    "qwen3_moe, gpt_oss, deepseek_v3)",
                    name, c.model_type));

  c.hidden = f.positive("hidden_size", f.req("hidden_size"));
  c.layers = f.positive("num_hidden_layers", f.req("num_hidden_layers"));
  c.vocab = f.positive("vocab_size", f.req("vocab_size"));
  c.heads = f.positive("num_attention_heads", f.req("num_attention_heads"));
  c.intermediate = f.positive("intermediate_size", f.req("intermediate_size"));

  if (c.is_mla()) {
    c.kv_heads = c.heads;                              // MLA: every head reads the one latent cache
    c.q_lora_rank = f.opt("q_lora_rank").value_or(0);  // null in V2-Lite: q is projected directly
    c.kv_lora_rank = f.positive("kv_lora_rank", f.req("kv_lora_rank"));
    c.qk_nope_head_dim = f.positive("qk_nope_head_dim", f.req("qk_nope_head_dim"));
    c.qk_rope_head_dim = f.positive("qk_rope_head_dim", f.req("qk_rope_head_dim"));
    c.v_head_dim = f.positive("v_head_dim", f.req("v_head_dim"));
    c.head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim;
    c.experts = f.positive("n_routed_experts", f.req("n_routed_experts"));
    c.experts_per_tok = f.positive("num_experts_per_tok", f.req("num_experts_per_tok"));
    c.expert_intermediate = f.positive("moe_intermediate_size", f.req("moe_intermediate_size"));
    c.shared_experts = f.opt("n_shared_experts").value_or(0);
    c.first_k_dense = f.opt("first_k_dense_replace").value_or(0);
    c.n_group = f.opt("n_group").value_or(1);
    c.topk_group = f.opt("topk_group").value_or(1);
    if (auto it = j.find("routed_scaling_factor"); it != j.end() && it->is_number())
      c.routed_scaling_factor = it->get<double>();
    if (auto it = j.find("scoring_func"); it != j.end() && it->is_string())
      c.scoring_func = it->get<std::string>();
    if (c.kv_lora_rank + c.qk_rope_head_dim != kMlaDk || c.kv_lora_rank != kMlaDv)
      throw InputError(fmt::format(
          "{}: kv_lora_rank {} + qk_rope_head_dim {}: attain's MLA decode op needs 512 + 64", name,
          c.kv_lora_rank, c.qk_rope_head_dim));
  } else {
    c.kv_heads = f.positive("num_key_value_heads", f.req("num_key_value_heads"));
    if (!f.opt("head_dim") && c.hidden % c.heads != 0)
      throw InputError(
          fmt::format("{}: hidden_size {} is not a multiple of num_attention_heads {} (and no "
                      "head_dim is given)",
                      name, c.hidden, c.heads));
    c.head_dim = f.opt("head_dim").value_or(c.hidden / c.heads);
    f.positive("head_dim", c.head_dim);
    if (c.heads % c.kv_heads != 0)
      throw InputError(
          fmt::format("{}: num_attention_heads {} is not a multiple of num_key_value_heads {}",
                      name, c.heads, c.kv_heads));
    if (c.model_type == "mixtral" || c.model_type == "gpt_oss") {
      c.experts = f.positive("num_local_experts", f.req("num_local_experts"));
      c.experts_per_tok = f.positive("num_experts_per_tok",
                                     f.req_any({"num_experts_per_tok", "experts_per_token"}));
      c.expert_intermediate = c.intermediate;
    } else if (c.model_type == "qwen3_moe") {
      c.experts = f.positive("num_experts", f.req("num_experts"));
      c.experts_per_tok = f.positive("num_experts_per_tok", f.req("num_experts_per_tok"));
      c.expert_intermediate = f.positive("moe_intermediate_size", f.req("moe_intermediate_size"));
      if (auto it = j.find("mlp_only_layers"); it != j.end() && !it->is_null()) {
        if (!it->is_array())
          throw InputError(fmt::format("{}: field 'mlp_only_layers' must be an array", name));
        for (const auto& v : *it) {
          if (!v.is_number_integer())
            throw InputError(fmt::format("{}: field 'mlp_only_layers' must hold integers", name));
          c.mlp_only_layers.push_back(v.get<std::int64_t>());
        }
      }
    }
  }
  if (c.is_moe() && c.experts_per_tok > c.experts)
    throw InputError(fmt::format("{}: num_experts_per_tok {} exceeds the {} experts", name,
                                 c.experts_per_tok, c.experts));
  if (auto q = j.find("quantization_config"); q != j.end() && q->is_object()) {
    auto m = q->find("quant_method");
    c.fp8_weights = m != q->end() && m->is_string() && m->get<std::string>() == "fp8";
  }
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& file) {
  ModelConfig c =
      parse_model_config(read_input_file(file, kMaxConfigBytes, "model config"), file.string());
  c.name = file.stem().string();
  return c;
}

bool ModelConfig::layer_is_dense(std::int64_t layer) const {
  if (!is_moe()) return true;
  if (layer < first_k_dense) return true;
  return std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end();
}

std::int64_t ModelConfig::dense_layers() const {
  std::int64_t n = 0;
  for (std::int64_t l = 0; l < layers; ++l) n += layer_is_dense(l) ? 1 : 0;
  return n;
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

ModelConfig load_bundled_model(std::string_view name) {
  const std::filesystem::path p(name);
  if (p.extension() == ".json" || p.has_parent_path()) return load_model_config(p);
  const auto file = data_dir() / "models" / (std::string(name) + ".json");
  if (!std::filesystem::exists(file)) {
    std::string known;
    for (const auto& n : bundled_models()) known += (known.empty() ? "" : ", ") + n;
    throw InputError(
        fmt::format("unknown model '{}' (bundled: {}; or give a config.json path)", name, known));
  }
  return load_model_config(file);
}

}  // namespace attain
