// Catalog rules: exact shapes of known models, suite counts, config errors.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "attain/catalog.hpp"

using namespace attain;

namespace {
std::map<std::string, CatalogOp> by_layer(const std::vector<CatalogOp>& ops) {
  std::map<std::string, CatalogOp> m;
  for (const auto& e : ops) m.emplace(e.prov.layer, e);
  return m;
}
std::string msg_of(std::string_view json) {
  try {
    parse_model_config(json, "cfg.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(Catalog, DeepSeekV3Decode) {
  const auto cfg = load_bundled_model("deepseek-v3");
  EXPECT_EQ(cfg.dense_layers(), 3);
  EXPECT_TRUE(cfg.fp8_weights);
  const auto ops = by_layer(model_ops(cfg, {"decode", 8, 4096, DType::fp8}));
  auto spec = [&](const char* l) { return ops.at(l).op.spec(); };
  // DeepGEMM's (n, k) pairs for DeepSeek-V3.
  EXPECT_EQ(spec("q_a+kv_a"), "gemm:m=8,n=2112,k=7168,dtype=fp8");
  EXPECT_EQ(spec("q_b"), "gemm:m=8,n=24576,k=1536,dtype=fp8");
  EXPECT_EQ(spec("kv_b"), "gemm:m=8,n=32768,k=512,dtype=fp8");
  EXPECT_EQ(spec("o"), "gemm:m=8,n=7168,k=16384,dtype=fp8");
  EXPECT_EQ(spec("shared_gate_up"), "gemm:m=8,n=4096,k=7168,dtype=fp8");
  EXPECT_EQ(spec("shared_down"), "gemm:m=8,n=7168,k=2048,dtype=fp8");
  EXPECT_EQ(spec("gate_up"), "gemm:m=8,n=36864,k=7168,dtype=fp8");
  EXPECT_EQ(spec("down"), "gemm:m=8,n=7168,k=18432,dtype=fp8");
  EXPECT_EQ(spec("router"), "gemm:m=8,n=256,k=7168,dtype=bf16");
  EXPECT_EQ(spec("experts_gate_up"),
            "grouped_gemm:groups=64,m=1,n=4096,k=7168,dtype=fp8,layout=masked");
  EXPECT_EQ(spec("experts_down"),
            "grouped_gemm:groups=64,m=1,n=7168,k=2048,dtype=fp8,layout=masked");
  EXPECT_EQ(spec("mla_decode"), "mla_decode:b=8,s=4096,h=128,dtype=fp8");
  EXPECT_EQ(spec("lm_head"), "gemm:m=8,n=129280,k=7168,dtype=bf16");
  EXPECT_EQ(ops.at("q_b").prov.count, 61);
  EXPECT_EQ(ops.at("gate_up").prov.count, 3);
  EXPECT_EQ(ops.at("experts_down").prov.count, 58);
  EXPECT_EQ(ops.at("lm_head").prov.count, 1);
  // ~671B parameters in all, ~37B active per token.
  EXPECT_NEAR(cfg.params() / 1e9, 671, 10);
  EXPECT_NEAR(cfg.active_params() / 1e9, 37, 2);
}

TEST(Catalog, DeepSeekV3PrefillUsesContiguousExperts) {
  const auto ops =
      by_layer(model_ops(load_bundled_model("deepseek-v3"), {"prefill", 512, 512, DType::bf16}));
  EXPECT_EQ(ops.at("experts_gate_up").op.spec(),
            "grouped_gemm:groups=256,m=16,n=4096,k=7168,dtype=bf16");
  EXPECT_EQ(ops.at("attn_qk").op.spec(), "batched_gemm:batch=128,m=512,n=512,k=192,dtype=bf16");
  EXPECT_EQ(ops.at("attn_pv").op.spec(), "batched_gemm:batch=128,m=512,n=128,k=512,dtype=bf16");
}

TEST(Catalog, Llama70B) {
  const auto cfg = load_bundled_model("llama-3.1-70b");
  const auto d = by_layer(model_ops(cfg, {"decode", 32, 8192, DType::bf16}));
  EXPECT_EQ(d.at("qkv").op.spec(), "gemm:m=32,n=10240,k=8192,dtype=bf16");
  EXPECT_EQ(d.at("o").op.spec(), "gemm:m=32,n=8192,k=8192,dtype=bf16");
  EXPECT_EQ(d.at("gate_up").op.spec(), "gemm:m=32,n=57344,k=8192,dtype=bf16");
  EXPECT_EQ(d.at("down").op.spec(), "gemm:m=32,n=8192,k=28672,dtype=bf16");
  EXPECT_EQ(d.at("lm_head").op.spec(), "gemm:m=32,n=128256,k=8192,dtype=bf16");
  EXPECT_EQ(d.at("attn_qk").op.spec(), "batched_gemm:batch=256,m=8,n=8192,k=128,dtype=bf16");
  EXPECT_EQ(d.at("attn_pv").op.spec(), "batched_gemm:batch=256,m=8,n=128,k=8192,dtype=bf16");
  EXPECT_EQ(d.at("qkv").prov.count, 80);
  EXPECT_NEAR(cfg.params() / 1e9, 70.6, 1.0);
  const auto p = by_layer(model_ops(cfg, {"prefill", 1024, 1024, DType::f32}));
  EXPECT_EQ(p.at("attn_qk").op.spec(), "batched_gemm:batch=8,m=8192,n=1024,k=128,dtype=fp32");
}

TEST(Catalog, Mixtral) {
  const auto cfg = load_bundled_model("mixtral-8x7b");
  const auto p = by_layer(model_ops(cfg, {"prefill", 512, 512, DType::bf16}));
  EXPECT_EQ(p.at("qkv").op.spec(), "gemm:m=512,n=6144,k=4096,dtype=bf16");
  EXPECT_EQ(p.at("router").op.spec(), "gemm:m=512,n=8,k=4096,dtype=bf16");
  EXPECT_EQ(p.at("experts_gate_up").op.spec(),
            "grouped_gemm:groups=8,m=128,n=28672,k=4096,dtype=bf16");
  EXPECT_EQ(p.at("experts_down").op.spec(),
            "grouped_gemm:groups=8,m=128,n=4096,k=14336,dtype=bf16");
  EXPECT_EQ(p.count("gate_up"), 0u);  // no dense MLP layers
  const auto d = by_layer(model_ops(cfg, {"decode", 1, 4096, DType::bf16}));
  EXPECT_EQ(d.at("experts_gate_up").op.spec(),
            "grouped_gemm:groups=2,m=1,n=28672,k=4096,dtype=bf16,layout=masked");
  EXPECT_NEAR(cfg.params() / 1e9, 46.7, 0.5);
  EXPECT_NEAR(cfg.active_params() / 1e9, 12.9, 0.5);
}

TEST(Catalog, Qwen3MoeMlpOnlyLayersAndGptOssAlias) {
  auto cfg = load_bundled_model("qwen3-30b-a3b");
  EXPECT_EQ(cfg.expert_intermediate, 768);
  cfg.mlp_only_layers = {0, 5};
  EXPECT_EQ(cfg.dense_layers(), 2);
  const auto ops = by_layer(model_ops(cfg, {"decode", 4, 1024, DType::bf16}));
  EXPECT_EQ(ops.at("gate_up").prov.count, 2);
  EXPECT_EQ(ops.at("experts_down").prov.count, 46);
  const auto oss = load_bundled_model("gpt-oss-120b");
  EXPECT_EQ(oss.experts, 128);
  EXPECT_EQ(oss.experts_per_tok, 4);
  EXPECT_EQ(oss.expert_intermediate, 2880);
}

TEST(Catalog, SuitesAreExactDeterministicAndUnique) {
  const auto a = suite("llm-1055");
  ASSERT_EQ(a.size(), 1055u);
  std::set<std::string> specs;
  std::set<std::string> kinds, phases, dtypes;
  for (const auto& e : a) {
    specs.insert(e.op.spec());
    kinds.insert(std::string(kind_name(e.op.kind)));
    phases.insert(e.prov.phase);
    dtypes.insert(std::string(dtype_name(e.op.dtype)));
    EXPECT_FALSE(e.prov.model.empty());
    EXPECT_GE(e.prov.count, 1);
  }
  EXPECT_EQ(specs.size(), 1055u);
  EXPECT_EQ(kinds.size(), 4u);
  EXPECT_EQ(phases.size(), 2u);
  EXPECT_EQ(dtypes.size(), 4u);
  const auto b = suite("llm-1055");
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].op.spec(), b[i].op.spec());

  const auto q = suite("quick");
  EXPECT_GE(q.size(), 50u);
  EXPECT_LE(q.size(), 70u);
  std::set<std::string> strata;
  for (const auto& e : q) {
    strata.insert(std::string(kind_name(e.op.kind)) + e.prov.phase);
    strata.insert(std::string(dtype_name(e.op.dtype)));
  }
  for (const char* s : {"gemmdecode", "gemmprefill", "batched_gemmdecode", "batched_gemmprefill",
                        "grouped_gemmdecode", "grouped_gemmprefill", "mla_decodedecode", "fp32",
                        "bf16", "fp16", "fp8"})
    EXPECT_TRUE(strata.count(s)) << s;
  EXPECT_THROW(suite("nope"), InputError);
}

TEST(Catalog, ConfigErrorsNameTheField) {
  EXPECT_NE(msg_of("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(msg_of("[]").find("JSON object"), std::string::npos);
  EXPECT_NE(msg_of(R"({"hidden_size": 8})").find("'model_type'"), std::string::npos);
  EXPECT_NE(msg_of(R"({"model_type": "bert"})").find("unknown model_type 'bert'"),
            std::string::npos);
  const std::string base =
      R"("model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 2, "vocab_size": 100,
      "num_attention_heads": 32, "intermediate_size": 1000)";
  EXPECT_NE(msg_of("{" + base + R"(, "num_key_value_heads": 5})").find("not a multiple"),
            std::string::npos);
  EXPECT_NE(msg_of("{" + base + R"(, "num_key_value_heads": "8"})").find("must be an integer"),
            std::string::npos);
  EXPECT_NE(
      msg_of(R"({"model_type": "mixtral", "hidden_size": 8, "num_hidden_layers": 1, "vocab_size": 1,
      "num_attention_heads": 1, "num_key_value_heads": 1, "intermediate_size": 8, "num_experts_per_tok": 2})")
          .find("'num_local_experts'"),
      std::string::npos);
  EXPECT_NE(
      msg_of(
          R"({"model_type": "deepseek_v3", "hidden_size": 8, "num_hidden_layers": 1, "vocab_size": 1,
      "num_attention_heads": 1, "intermediate_size": 8})")
          .find("'kv_lora_rank'"),
      std::string::npos);
  EXPECT_THROW(load_bundled_model("no-such-model"), InputError);
  EXPECT_THROW(load_model_config("/nonexistent/config.json"), InputError);
}

// ---- families beyond the llm-1055 seven: each bundled config's projections, by hand ----------

namespace {
std::string spec_at(const std::map<std::string, CatalogOp>& ops, const char* layer) {
  auto it = ops.find(layer);
  return it == ops.end() ? std::string("no op ") + layer : it->second.op.spec();
}
bool has_note(const ModelConfig& c, std::string_view text) {
  for (const auto& n : c.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST(CatalogFamilies, MistralSlidingWindowCapsDecodeKeys) {
  const auto cfg = load_bundled_model("mistral-7b-v0.1");
  const auto d = by_layer(model_ops(cfg, {"decode", 8, 8192, DType::bf16}));
  // head_dim = 4096 / 32 = 128; qkv n = (32 + 2 x 8) x 128 = 6144, k = hidden 4096
  EXPECT_EQ(spec_at(d, "qkv"), "gemm:m=8,n=6144,k=4096,dtype=bf16");
  // gate_up n = 2 x 14336 = 28672; down n = 4096, k = 14336
  EXPECT_EQ(spec_at(d, "gate_up"), "gemm:m=8,n=28672,k=4096,dtype=bf16");
  EXPECT_EQ(spec_at(d, "down"), "gemm:m=8,n=4096,k=14336,dtype=bf16");
  // every layer windowed: batch = 8 sequences x 8 kv heads = 64, m = 32 / 8 = 4 query heads,
  // n = min(context 8192, sliding_window 4096) = 4096 keys, k = head_dim 128
  EXPECT_EQ(spec_at(d, "attn_qk_window"), "batched_gemm:batch=64,m=4,n=4096,k=128,dtype=bf16");
  EXPECT_EQ(d.at("attn_qk_window").prov.count, 32);
  EXPECT_EQ(d.count("attn_qk"), 0u);
  // a context inside the window: the whole context, named as full attention
  const auto s = by_layer(model_ops(cfg, {"decode", 8, 2048, DType::bf16}));
  EXPECT_EQ(spec_at(s, "attn_qk"), "batched_gemm:batch=64,m=4,n=2048,k=128,dtype=bf16");
  EXPECT_EQ(cfg.dtype, DType::bf16);
  EXPECT_NEAR(cfg.params() / 1e9, 7.24, 0.05);
}

TEST(CatalogFamilies, GemmaHeadDimIsItsOwnAndEmbeddingsAreTied) {
  const auto cfg = load_bundled_model("gemma-7b");
  EXPECT_TRUE(cfg.tied_embeddings);  // gemma's default (the file does not say)
  const auto d = by_layer(model_ops(cfg, {"decode", 1, 4096, DType::bf16}));
  // head_dim 256 (not 3072 / 16 = 192): qkv n = (16 + 2 x 16) x 256 = 12288, k = 3072
  EXPECT_EQ(spec_at(d, "qkv"), "gemm:m=1,n=12288,k=3072,dtype=bf16");
  // o: n = hidden 3072, k = 16 heads x 256 = 4096 (wider than hidden)
  EXPECT_EQ(spec_at(d, "o"), "gemm:m=1,n=3072,k=4096,dtype=bf16");
  // gate_up n = 2 x 24576 = 49152
  EXPECT_EQ(spec_at(d, "gate_up"), "gemm:m=1,n=49152,k=3072,dtype=bf16");
  // 28 x (12288x3072 + 3072x4096 + 49152x3072 + 3072x24576) + 256000x3072 once = 8.54B
  EXPECT_NEAR(cfg.params() / 1e9, 8.54, 0.01);
}

TEST(CatalogFamilies, Gemma2AlternatesWindowedAndGlobalLayers) {
  const auto cfg = load_bundled_model("gemma-2-9b");
  const auto d = by_layer(model_ops(cfg, {"decode", 1, 8192, DType::bf16}));
  // qkv n = (16 + 2 x 8) x 256 = 8192, k = 3584
  EXPECT_EQ(spec_at(d, "qkv"), "gemm:m=1,n=8192,k=3584,dtype=bf16");
  // o: n = 3584, k = 16 x 256 = 4096
  EXPECT_EQ(spec_at(d, "o"), "gemm:m=1,n=3584,k=4096,dtype=bf16");
  // gate_up n = 2 x 14336 = 28672
  EXPECT_EQ(spec_at(d, "gate_up"), "gemm:m=1,n=28672,k=3584,dtype=bf16");
  // even layers (21 of 42) read min(8192, 4096) keys, odd layers the whole 8192; m = 16 / 8 = 2
  EXPECT_EQ(spec_at(d, "attn_qk_window"), "batched_gemm:batch=8,m=2,n=4096,k=256,dtype=bf16");
  EXPECT_EQ(spec_at(d, "attn_qk"), "batched_gemm:batch=8,m=2,n=8192,k=256,dtype=bf16");
  EXPECT_EQ(d.at("attn_qk_window").prov.count, 21);
  EXPECT_EQ(d.at("attn_pv").prov.count, 21);
  // prefill: the windowed layers' products are counted in full, one op for all 42 layers
  const auto p = by_layer(model_ops(cfg, {"prefill", 512, 512, DType::bf16}));
  EXPECT_EQ(p.at("attn_qk").prov.count, 42);
  EXPECT_NEAR(cfg.params() / 1e9, 9.24, 0.01);
}

TEST(CatalogFamilies, Gemma3MultimodalTextConfig) {
  const auto cfg = load_bundled_model("gemma-3-27b-it");
  EXPECT_EQ(cfg.model_type, "gemma3");
  EXPECT_TRUE(has_note(cfg, "vision tower is out of scope"));
  EXPECT_EQ(cfg.vocab, 262208);  // Gemma3TextConfig's default: the published file leaves it out
  const auto d = by_layer(model_ops(cfg, {"decode", 1, 4096, DType::bf16}));
  // qkv n = (32 + 2 x 16) x 128 = 8192, k = 5376
  EXPECT_EQ(spec_at(d, "qkv"), "gemm:m=1,n=8192,k=5376,dtype=bf16");
  // o: n = 5376, k = 32 x 128 = 4096
  EXPECT_EQ(spec_at(d, "o"), "gemm:m=1,n=5376,k=4096,dtype=bf16");
  // gate_up n = 2 x 21504 = 43008; lm_head n = vocab 262208
  EXPECT_EQ(spec_at(d, "gate_up"), "gemm:m=1,n=43008,k=5376,dtype=bf16");
  EXPECT_EQ(spec_at(d, "lm_head"), "gemm:m=1,n=262208,k=5376,dtype=bf16");
  // sliding_window_pattern 6: layers 5, 11, ..., 59 global (10), the other 52 read 1024 keys
  EXPECT_EQ(spec_at(d, "attn_qk_window"), "batched_gemm:batch=16,m=2,n=1024,k=128,dtype=bf16");
  EXPECT_EQ(d.at("attn_qk_window").prov.count, 52);
  EXPECT_EQ(d.at("attn_qk").prov.count, 10);
}

TEST(CatalogFamilies, Phi3FusedProjectionsAsStored) {
  const auto cfg = load_bundled_model("phi-3-mini-4k");
  const auto d = by_layer(model_ops(cfg, {"decode", 4, 4096, DType::bf16}));
  // qkv_proj [9216, 3072]: head_dim = 3072 / 32 = 96, (32 + 2 x 32) x 96 = 9216
  EXPECT_EQ(spec_at(d, "qkv"), "gemm:m=4,n=9216,k=3072,dtype=bf16");
  // gate_up_proj [16384, 3072]: 2 x 8192
  EXPECT_EQ(spec_at(d, "gate_up"), "gemm:m=4,n=16384,k=3072,dtype=bf16");
  // down_proj [3072, 8192]
  EXPECT_EQ(spec_at(d, "down"), "gemm:m=4,n=3072,k=8192,dtype=bf16");
  // sliding_window 2047 on every layer: batch = 4 x 32 kv heads, m = 1 (MHA)
  EXPECT_EQ(spec_at(d, "attn_qk_window"), "batched_gemm:batch=128,m=1,n=2047,k=96,dtype=bf16");
  EXPECT_NEAR(cfg.params() / 1e9, 3.82, 0.01);
}

TEST(CatalogFamilies, DeepSeekV2LiteDirectQProjection) {
  const auto cfg = load_bundled_model("deepseek-v2-lite");
  EXPECT_TRUE(cfg.is_mla());
  EXPECT_EQ(cfg.q_lora_rank, 0);  // q_lora_rank: null
  EXPECT_EQ(cfg.dense_layers(), 1);
  const auto d = by_layer(model_ops(cfg, {"decode", 1, 4096, DType::bf16}));
  // q projected directly, fused with kv_a: 16 heads x (128 + 64) + (512 + 64) = 3648, k = 2048
  EXPECT_EQ(spec_at(d, "q+kv_a"), "gemm:m=1,n=3648,k=2048,dtype=bf16");
  EXPECT_EQ(d.count("q_b"), 0u);
  // kv_b: 16 x (128 + 128) = 4096, k = kv_lora_rank 512
  EXPECT_EQ(spec_at(d, "kv_b"), "gemm:m=1,n=4096,k=512,dtype=bf16");
  // 2 shared experts of 1408: gate_up n = 2 x 2 x 1408 = 5632, down k = 2816
  EXPECT_EQ(spec_at(d, "shared_gate_up"), "gemm:m=1,n=5632,k=2048,dtype=bf16");
  EXPECT_EQ(spec_at(d, "shared_down"), "gemm:m=1,n=2048,k=2816,dtype=bf16");
  // first_k_dense_replace 1: layer 0 dense (gate_up n = 2 x 10944 = 21888), 26 MoE layers
  EXPECT_EQ(spec_at(d, "gate_up"), "gemm:m=1,n=21888,k=2048,dtype=bf16");
  EXPECT_EQ(d.at("router").prov.count, 26);
  // top-6 of 64 experts, one token: 6 groups of one row, gate_up n = 2 x 1408 = 2816
  EXPECT_EQ(spec_at(d, "experts_gate_up"),
            "grouped_gemm:groups=6,m=1,n=2816,k=2048,dtype=bf16,layout=masked");
  EXPECT_EQ(spec_at(d, "mla_decode"), "mla_decode:b=1,s=4096,h=16,dtype=bf16");
  EXPECT_NEAR(cfg.params() / 1e9, 15.7, 0.2);
  EXPECT_NEAR(cfg.active_params() / 1e9, 2.7, 0.2);
}

TEST(CatalogFamilies, Qwen2MoeSharedExpertHasItsOwnWidth) {
  const auto cfg = load_bundled_model("qwen1.5-moe-a2.7b");
  const auto p = by_layer(model_ops(cfg, {"prefill", 512, 512, DType::bf16}));
  // qkv n = (16 + 2 x 16) x 128 = 6144, k = 2048
  EXPECT_EQ(spec_at(p, "qkv"), "gemm:m=512,n=6144,k=2048,dtype=bf16");
  // shared expert of shared_expert_intermediate_size 5632: gate_up n = 11264, down k = 5632
  EXPECT_EQ(spec_at(p, "shared_gate_up"), "gemm:m=512,n=11264,k=2048,dtype=bf16");
  EXPECT_EQ(spec_at(p, "shared_down"), "gemm:m=512,n=2048,k=5632,dtype=bf16");
  // its sigmoid gate: [1, 2048]
  EXPECT_EQ(spec_at(p, "shared_gate"), "gemm:m=512,n=1,k=2048,dtype=bf16");
  // routed: 512 tokens x top-4 = 2048 rows over 60 experts = ceil(34.1) = 35 rows each,
  // gate_up n = 2 x moe_intermediate_size 1408 = 2816
  EXPECT_EQ(spec_at(p, "experts_gate_up"), "grouped_gemm:groups=60,m=35,n=2816,k=2048,dtype=bf16");
  EXPECT_EQ(spec_at(p, "router"), "gemm:m=512,n=60,k=2048,dtype=bf16");
  EXPECT_NEAR(cfg.params() / 1e9, 14.3, 0.2);
  EXPECT_NEAR(cfg.active_params() / 1e9, 2.7, 0.1);
}

TEST(CatalogFamilies, Llama4ChunkedAttentionAndSharedExpert) {
  const auto cfg = load_bundled_model("llama-4-scout-17b-16e");
  EXPECT_EQ(cfg.model_type, "llama4");
  EXPECT_TRUE(has_note(cfg, "vision tower"));
  EXPECT_EQ(cfg.dense_layers(), 0);  // moe_layers: all 48
  const auto d = by_layer(model_ops(cfg, {"decode", 1, 10000, DType::bf16}));
  // qkv n = (40 + 2 x 8) x 128 = 7168, k = 5120
  EXPECT_EQ(spec_at(d, "qkv"), "gemm:m=1,n=7168,k=5120,dtype=bf16");
  // shared expert of intermediate_size 8192: gate_up n = 16384, down k = 8192
  EXPECT_EQ(spec_at(d, "shared_gate_up"), "gemm:m=1,n=16384,k=5120,dtype=bf16");
  EXPECT_EQ(spec_at(d, "shared_down"), "gemm:m=1,n=5120,k=8192,dtype=bf16");
  // top-1 of 16: one group, the same width as the shared expert
  EXPECT_EQ(spec_at(d, "experts_gate_up"),
            "grouped_gemm:groups=1,m=1,n=16384,k=5120,dtype=bf16,layout=masked");
  EXPECT_EQ(spec_at(d, "router"), "gemm:m=1,n=16,k=5120,dtype=bf16");
  // chunked RoPE layers (36 of 48): the token at position 9999 reads its chunk's
  // 9999 - 8192 + 1 = 1808 keys; the 12 NoPE layers read all 10000. m = 40 / 8 = 5
  EXPECT_EQ(spec_at(d, "attn_qk_chunk"), "batched_gemm:batch=8,m=5,n=1808,k=128,dtype=bf16");
  EXPECT_EQ(d.at("attn_qk_chunk").prov.count, 36);
  EXPECT_EQ(spec_at(d, "attn_qk"), "batched_gemm:batch=8,m=5,n=10000,k=128,dtype=bf16");
  EXPECT_EQ(d.at("attn_qk").prov.count, 12);
  // interleave_moe_layer_step 2 (Maverick's layout): every second layer MoE, the others dense
  // with intermediate_size_mlp 16384 (gate_up n = 32768)
  auto alt = cfg;
  alt.mlp_only_layers.clear();
  alt.moe_step = 2, alt.moe_phase = 1;
  const auto a = by_layer(model_ops(alt, {"decode", 1, 4096, DType::bf16}));
  EXPECT_EQ(spec_at(a, "gate_up"), "gemm:m=1,n=32768,k=5120,dtype=bf16");
  EXPECT_EQ(a.at("gate_up").prov.count, 24);
  EXPECT_NEAR(cfg.params() / 1e9, 107.8, 0.5);  // 109B with the vision tower
  EXPECT_NEAR(cfg.active_params() / 1e9, 17.2, 0.3);
}

TEST(CatalogFamilies, Glm4Moe) {
  const auto cfg = load_bundled_model("glm-4.5-air");
  EXPECT_EQ(cfg.scoring_func, "sigmoid");
  const auto d = by_layer(model_ops(cfg, {"decode", 8, 4096, DType::bf16}));
  // head_dim 128 x 96 heads = 12288 > hidden 4096: qkv n = (96 + 2 x 8) x 128 = 14336
  EXPECT_EQ(spec_at(d, "qkv"), "gemm:m=8,n=14336,k=4096,dtype=bf16");
  // o: n = 4096, k = 96 x 128 = 12288
  EXPECT_EQ(spec_at(d, "o"), "gemm:m=8,n=4096,k=12288,dtype=bf16");
  // one shared expert of 1408: gate_up n = 2816
  EXPECT_EQ(spec_at(d, "shared_gate_up"), "gemm:m=8,n=2816,k=4096,dtype=bf16");
  // 8 tokens x top-8 = 64 rows over 128 experts: 64 groups of one row
  EXPECT_EQ(spec_at(d, "experts_gate_up"),
            "grouped_gemm:groups=64,m=1,n=2816,k=4096,dtype=bf16,layout=masked");
  // first_k_dense_replace 1: layer 0 dense, gate_up n = 2 x 10944 = 21888
  EXPECT_EQ(spec_at(d, "gate_up"), "gemm:m=8,n=21888,k=4096,dtype=bf16");
  EXPECT_EQ(d.at("gate_up").prov.count, 1);
  EXPECT_NEAR(cfg.params() / 1e9, 106.8, 0.5);
}

TEST(CatalogFamilies, DbrxNestedFieldNames) {
  const auto cfg = load_bundled_model("dbrx-instruct");
  EXPECT_EQ(cfg.hidden, 6144);        // d_model
  EXPECT_EQ(cfg.kv_heads, 8);         // attn_config.kv_n_heads
  EXPECT_EQ(cfg.experts, 16);         // ffn_config.moe_num_experts
  EXPECT_EQ(cfg.experts_per_tok, 4);  // ffn_config.moe_top_k
  const auto p = by_layer(model_ops(cfg, {"prefill", 512, 512, DType::bf16}));
  // Wqkv: head_dim = 6144 / 48 = 128, (48 + 2 x 8) x 128 = 8192
  EXPECT_EQ(spec_at(p, "qkv"), "gemm:m=512,n=8192,k=6144,dtype=bf16");
  // 512 x top-4 = 2048 rows over 16 experts = 128 each; gate_up n = 2 x 10752 = 21504
  EXPECT_EQ(spec_at(p, "experts_gate_up"),
            "grouped_gemm:groups=16,m=128,n=21504,k=6144,dtype=bf16");
  EXPECT_EQ(spec_at(p, "experts_down"), "grouped_gemm:groups=16,m=128,n=6144,k=10752,dtype=bf16");
  EXPECT_NEAR(cfg.params() / 1e9, 131.6, 0.5);
  EXPECT_NEAR(cfg.active_params() / 1e9, 36.5, 0.5);
}

TEST(CatalogFamilies, EveryBundledConfigIsReadWholly) {
  // Every field of a bundled config is read by a rule or listed as shape-neutral.
  for (const auto& name : bundled_models()) {
    const auto cfg = load_bundled_model(name);
    EXPECT_FALSE(has_note(cfg, "left out")) << name << ": " << cfg.notes.back();
  }
}

TEST(CatalogFamilies, DefaultDtypeFromTheConfig) {
  EXPECT_EQ(load_bundled_model("deepseek-v3").dtype, DType::fp8);  // fp8 block scales
  EXPECT_EQ(load_bundled_model("qwen3-8b").dtype, DType::bf16);
  const std::string dense =
      R"("hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 100,
      "num_attention_heads": 4, "intermediate_size": 128)";
  EXPECT_EQ(
      parse_model_config(R"({"model_type": "llama", "torch_dtype": "float16", )" + dense + "}", "c")
          .dtype,
      DType::f16);
  EXPECT_EQ(parse_model_config(R"({"model_type": "llama", "dtype": "float32", )" + dense + "}", "c")
                .dtype,
            DType::f32);
  // num_key_value_heads absent: multi-head attention
  const auto mha = parse_model_config(R"({"model_type": "llama", )" + dense + "}", "c");
  EXPECT_EQ(mha.kv_heads, 4);
  EXPECT_EQ(mha.dtype, DType::bf16);
}

TEST(CatalogFamilies, AssumeLlamaReadsAnUnknownFamily) {
  const std::string text =
      R"({"model_type": "my_llama", "hidden_size": 1024, "num_hidden_layers": 4,
      "vocab_size": 1000, "num_attention_heads": 8, "num_key_value_heads": 2,
      "intermediate_size": 2816, "some_new_field": 1})";
  EXPECT_NE(msg_of(text).find("unknown model_type 'my_llama'"), std::string::npos);
  EXPECT_NE(msg_of(text).find("--assume-llama"), std::string::npos);
  EXPECT_NE(msg_of(text).find("gemma3"), std::string::npos);  // lists the supported ones
  const auto cfg = parse_model_config(text, "c", {true});
  EXPECT_EQ(cfg.model_type, "my_llama");
  EXPECT_TRUE(has_note(cfg, "read as Llama-like"));
  EXPECT_TRUE(has_note(cfg, "some_new_field"));  // and what it did not read
  const auto d = by_layer(model_ops(cfg, {"decode", 1, 64, DType::bf16}));
  // head_dim = 1024 / 8 = 128: qkv n = (8 + 2 x 2) x 128 = 1536
  EXPECT_EQ(spec_at(d, "qkv"), "gemm:m=1,n=1536,k=1024,dtype=bf16");
}

TEST(CatalogFamilies, MultimodalTextConfigOfAnotherFamily) {
  // An unknown wrapper (e.g. mistral3) around a known language model: its text_config is read.
  const auto cfg = parse_model_config(
      R"({"model_type": "mistral3", "vision_config": {"hidden_size": 1024},
      "torch_dtype": "bfloat16", "text_config": {"model_type": "mistral", "hidden_size": 5120,
      "num_hidden_layers": 40, "vocab_size": 131072, "num_attention_heads": 32,
      "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 32768}})",
      "c");
  EXPECT_EQ(cfg.model_type, "mistral");
  EXPECT_TRUE(has_note(cfg, "vision tower"));
  const auto d = by_layer(model_ops(cfg, {"decode", 1, 64, DType::bf16}));
  // qkv n = (32 + 2 x 8) x 128 = 6144, k = 5120; o k = 32 x 128 = 4096
  EXPECT_EQ(spec_at(d, "qkv"), "gemm:m=1,n=6144,k=5120,dtype=bf16");
  EXPECT_EQ(spec_at(d, "o"), "gemm:m=1,n=5120,k=4096,dtype=bf16");
  EXPECT_EQ(spec_at(d, "gate_up"), "gemm:m=1,n=65536,k=5120,dtype=bf16");
}

TEST(CatalogFamilies, MissingOrContradictoryFieldsAreNamed) {
  // phi3's q projection is hidden_size wide: head_dim 128 x 32 heads = 4096 != 3072
  EXPECT_NE(msg_of(R"({"model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 2,
      "vocab_size": 10, "num_attention_heads": 32, "head_dim": 128, "intermediate_size": 64})")
                .find("head_dim 128 x num_attention_heads 32 = 4096"),
            std::string::npos);
  // a field inside text_config is named with its path
  EXPECT_NE(msg_of(R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text",
      "num_hidden_layers": 2, "intermediate_size": 64}})")
                .find("missing field 'text_config.hidden_size'"),
            std::string::npos);
  EXPECT_NE(msg_of(R"({"model_type": "gemma3", "text_config": 3})").find("'text_config'"),
            std::string::npos);
  // dbrx's own spelling
  EXPECT_NE(msg_of(R"({"model_type": "dbrx", "n_layers": 2, "vocab_size": 10, "n_heads": 4})")
                .find("missing field 'd_model'"),
            std::string::npos);
  EXPECT_NE(msg_of(R"({"model_type": "dbrx", "d_model": 64, "n_layers": 2, "vocab_size": 10,
      "n_heads": 4, "ffn_config": {"ffn_hidden_size": 128, "moe_num_experts": 4}})")
                .find("missing field 'ffn_config.moe_top_k'"),
            std::string::npos);
  EXPECT_NE(msg_of(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 100000,
      "vocab_size": 10, "num_attention_heads": 4, "intermediate_size": 64})")
                .find("num_hidden_layers 100000 is out of range"),
            std::string::npos);
  // one layer_types entry per layer
  EXPECT_NE(msg_of(R"({"model_type": "gemma2", "hidden_size": 64, "num_hidden_layers": 4,
      "vocab_size": 10, "num_attention_heads": 4, "intermediate_size": 64,
      "layer_types": ["sliding_attention", "full_attention"]})")
                .find("'layer_types' has 2 entries for 4 layers"),
            std::string::npos);
  EXPECT_NE(msg_of(R"({"model_type": "deepseek_v2", "hidden_size": 64, "num_hidden_layers": 2,
      "vocab_size": 10, "num_attention_heads": 4, "intermediate_size": 64, "kv_lora_rank": 512,
      "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 8,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32, "first_k_dense_replace": 5})")
                .find("first_k_dense_replace 5 exceeds the 2 layers"),
            std::string::npos);
}

TEST(CatalogFamilies, Llm1055IsUnchanged) {
  // FNV-1a 64 over the 1,055 specs in order, one per line: any change to the suite's ops or
  // order shows here (the new families go to --model only).
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& e : suite("llm-1055"))
    for (char ch : e.op.spec() + "\n") {
      h ^= static_cast<unsigned char>(ch);
      h *= 0x100000001b3ull;
    }
  EXPECT_EQ(h, 0x267a3c1b94591e49ull);
}
