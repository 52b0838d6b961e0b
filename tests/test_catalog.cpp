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
  EXPECT_NE(msg_of("{" + base + "}").find("'num_key_value_heads'"), std::string::npos);
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
