// Model configs (Hugging Face config.json) -> the matrix ops of a forward pass; suites.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "attain/op.hpp"

namespace attain {

// Which keys a layer's attention reads at decode: the whole context, the last `window` tokens
// (sliding window), or the tokens of the current `window`-sized chunk (chunked attention).
enum class AttnSpan : std::uint8_t { full, window, chunk };

struct ModelConfig {
  std::string name;        // file stem, e.g. "deepseek-v3"
  std::string model_type;  // the family (supported_model_types()), or the config's own
                           // model_type when it was read as Llama-like (--assume-llama)
  std::int64_t hidden = 0, intermediate = 0, layers = 0, vocab = 0;  // intermediate: dense MLP
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0;
  bool tied_embeddings = false;  // the LM head is the input embedding (counted once in params)
  // MoE (experts == 0 for dense models)
  std::int64_t experts = 0, experts_per_tok = 0, expert_intermediate = 0;
  std::int64_t shared_intermediate = 0;       // width of the shared expert(s), 0 = none
  bool shared_expert_gate = false;            // qwen2_moe: a [1, hidden] gate on the shared expert
  std::int64_t first_k_dense = 0;             // deepseek: first layers are dense
  std::vector<std::int64_t> mlp_only_layers;  // qwen3_moe, llama4: layers with a dense MLP
  std::int64_t moe_step = 1, moe_phase = 0;   // MoE only where layer % moe_step == moe_phase
  std::int64_t n_group = 1, topk_group = 1;   // deepseek_v3 group-limited routing
  double routed_scaling_factor = 1.0;
  std::string scoring_func = "softmax";  // "sigmoid" for deepseek_v3, glm4_moe
  // MLA (deepseek_v2, deepseek_v3)
  bool mla = false;
  std::int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0,
               v_head_dim = 0;
  // Attention spans: one per layer (empty = every layer full); window = sliding_window or
  // attention_chunk_size.
  std::vector<AttnSpan> spans;
  std::int64_t window = 0;
  bool fp8_weights = false;        // quantization_config.quant_method == "fp8"
  DType dtype = DType::bf16;       // the default dtype: fp8 for fp8 weights, else torch_dtype
  std::vector<std::string> notes;  // what the reading assumed or left out, for the user

  bool is_moe() const { return experts > 0; }
  bool is_mla() const { return mla; }
  bool layer_is_dense(std::int64_t layer) const;  // dense MLP instead of MoE at this layer
  std::int64_t dense_layers() const;
  AttnSpan span(std::int64_t layer) const;
  // The keys one decode step's attention reads at this layer with `context` tokens cached.
  std::int64_t attention_keys(std::int64_t layer, std::int64_t context) const;
  double params() const;         // total parameters (weights of all matrix ops + embeddings)
  double active_params() const;  // parameters touched per token (top-k experts only)
};

struct ConfigOptions {
  bool assume_llama = false;  // read an unknown model_type with the Llama fields as Llama-like
};

// The model_type values parse_model_config reads (its family table, in order).
std::vector<std::string> supported_model_types();

// Throws InputError naming the file and the field (unknown model_type, missing, bad or
// contradictory field). A multimodal config's text_config is read (the language model).
ModelConfig parse_model_config(std::string_view json_text, std::string_view name,
                               const ConfigOptions& opts = {});
ModelConfig load_model_config(const std::filesystem::path& file, const ConfigOptions& opts = {});

// The bundled configs (data/models/*.json), by stem name.
std::filesystem::path data_dir();
std::vector<std::string> bundled_models();
// Accepts a stem or a path.
ModelConfig load_bundled_model(std::string_view name, const ConfigOptions& opts = {});

struct PassSpec {
  std::string phase;         // "prefill" or "decode"
  std::int64_t tokens = 0;   // prefill: tokens of one sequence; decode: batch size
  std::int64_t context = 0;  // decode: context length; prefill: = tokens
  DType dtype = DType::bf16;
};

// The provenance role of the vocabulary projection, which model_ops adds once per pass after
// the last layer (the layer bench leaves it out; the cluster model puts it on the last stage).
inline constexpr std::string_view kLmHeadRole = "lm_head";

// The ops of one forward pass, unique by spec, each with its provenance and the count of
// how often it occurs in the pass.
std::vector<CatalogOp> model_ops(const ModelConfig& cfg, const PassSpec& pass);

// Named suites: "llm-1055" (exactly 1,055 unique ops) and "quick" (~60 ops, every kind,
// phase and dtype). Throws InputError for an unknown name.
std::vector<CatalogOp> suite(std::string_view name);
std::vector<std::string> suite_names();

// ---- what `attain catalog` prints and writes (src/catalog/export.cpp) ----------------------

// One op as the catalog lists it: spec, kind, dtype, m/n/k (mla: rows x keys x row width),
// FLOPs, bytes and where it comes from.
nlohmann::json to_json(const CatalogOp& op);
nlohmann::json catalog_json(const std::vector<CatalogOp>& ops);  // an array of the above
// Counts by kind, phase, dtype and model; total FLOPs and bytes (each op once).
nlohmann::json catalog_summary_json(const std::vector<CatalogOp>& ops);
std::string catalog_summary_text(const std::vector<CatalogOp>& ops);
std::string catalog_table_text(const std::vector<CatalogOp>& ops);
// The op list as CSV to run elsewhere and bring back with `attain import`: spec (quoted),
// kind, dtype, provenance, FLOPs and bytes, and an empty time_us column to fill in.
std::string catalog_csv(const std::vector<CatalogOp>& ops);

}  // namespace attain
