// The auto-scheduler: every schedule the search can produce is correct (randomized over shapes
// and candidates), the executor's forms agree, schedules round-trip as text, the heuristic is
// deterministic, the scheduler's sources (tuned, nearest, model), tuning into a cache, and one
// decoder layer run grouped and op by op.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <random>
#include <string>

#include "attain/gemm_plan.hpp"
#include "attain/layer.hpp"
#include "attain/tune.hpp"
#include "attain/verify.hpp"

namespace attain {
namespace {

namespace fs = std::filesystem;

tune::Machine test_machine(int threads) {
  tune::Machine m;
  m.threads = threads;
  m.fma_gflops_1t = 200;
  m.read_gbps_1t = 30;
  m.read_gbps_all = 30.0 * threads * 0.9;
  return m;
}

// Runs the op under schedule s and checks it against the fp64 reference.
void check_schedule(TensorSet& set, gemm::Call c, const gemm::Schedule& s) {
  SCOPED_TRACE(gemm::to_string(s));
  poison_outputs(set);
  c.p.schedule = s;
  gemm::run(c);
  const Verification v = verify(set);
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_TRUE(set.guards_intact());
}

TEST(Tune, EveryCandidateGivesTheReferenceAnswer) {
  std::mt19937 rng(5);
  const char* dtypes[] = {"fp32", "bf16", "fp16", "fp8"};
  const char* forms[] = {"gemm:", "batched_gemm:batch=3,", "grouped_gemm:groups=3,",
                         "grouped_gemm:groups=4,layout=masked,skew=1,"};
  std::size_t runs = 0;
  for (int trial = 0; trial < 12; ++trial) {
    const int m = std::uniform_int_distribution<int>(1, 40)(rng);
    const int n = std::uniform_int_distribution<int>(1, 70)(rng);
    const int k = std::uniform_int_distribution<int>(1, 600)(rng);
    const std::string spec = std::string(forms[trial % 4]) + "m=" + std::to_string(m) +
                             ",n=" + std::to_string(n) + ",k=" + std::to_string(k) +
                             ",dtype=" + dtypes[(trial / 4 + trial) % 4];
    SCOPED_TRACE(spec);
    TensorSet set(Op::parse(spec));
    fill_inputs(set, 100 + trial);
    RunOptions opt;
    opt.threads = 2;
    const gemm::Call c = backends::gemm_call(set, opt);
    const auto cands = tune::candidates(c, test_machine(2));
    ASSERT_GE(cands.size(), 3u);
    // Every candidate on the first shapes, a random third of them on the rest (time).
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (trial >= 4 && rng() % 3 != 0) continue;
      check_schedule(set, c, cands[i]);
      ++runs;
    }
  }
  EXPECT_GT(runs, 200u);
}

TEST(Tune, RunTogetherMatchesOneByOne) {
  std::vector<std::unique_ptr<TensorSet>> sets;
  std::vector<gemm::Call> calls;
  RunOptions opt;
  opt.threads = 2;
  for (const char* spec : {"gemm:m=1,n=300,k=700,dtype=bf16", "gemm:m=20,n=33,k=129,dtype=fp32",
                           "batched_gemm:batch=5,m=4,n=40,k=64,dtype=fp16",
                           "grouped_gemm:groups=6,m=3,n=50,k=256,layout=masked,dtype=fp8",
                           "gemm:m=70,n=90,k=300,dtype=fp32"}) {
    sets.push_back(std::make_unique<TensorSet>(Op::parse(spec)));
    fill_inputs(*sets.back(), 3);
    poison_outputs(*sets.back());
    calls.push_back(backends::gemm_call(*sets.back(), opt));
  }
  calls[0].p.schedule.split_k = 2;  // a split-K call among them
  calls[2].p.schedule.threads_m = 1, calls[2].p.schedule.threads_n = 2;
  for (int threads : {1, 2}) {
    gemm::run_together(calls.data(), calls.size(), threads);
    for (auto& s : sets) {
      const Verification v = verify(*s);
      EXPECT_TRUE(v.ok) << s->op().spec() << ": " << v.detail;
      poison_outputs(*s);
    }
  }
}

TEST(Tune, SplitKAndFusedItemsAreExact) {
  // fp32 with integer inputs: every summation order gives the same bits. Split-K on the
  // decode path (chosen by default for m=3) and on the packed path.
  const std::pair<const char*, gemm::Path> forms[] = {
      {"gemm:m=3,n=10,k=1000,dtype=fp8", gemm::Path::automatic},
      {"gemm:m=30,n=10,k=1000,dtype=fp32", gemm::Path::packed}};
  for (const auto& [spec, path] : forms)
    for (int split : {2, 3, 8}) {
      TensorSet set(Op::parse(spec));
      fill_inputs(set, 9);
      RunOptions opt;
      opt.threads = 2;
      gemm::Call c = backends::gemm_call(set, opt);
      gemm::Schedule s;
      s.split_k = split;
      s.path = path;
      check_schedule(set, c, s);
    }
  TensorSet set(Op::parse("gemm:m=3,n=10,k=1000,dtype=fp32"));
  fill_inputs(set, 9);
  gemm::Call c = backends::gemm_call(set, RunOptions{});
  c.p.threads = 2;
  c.p.schedule = {};
  c.p.schedule.path = gemm::Path::packed;
  c.p.schedule.split_k = 3;  // 1 x 1 grid x 3 slices: neither fills the 2 threads exactly
  c.p.schedule.threads_m = 1;
  c.p.schedule.threads_n = 1;
  EXPECT_THROW(gemm::run(c), std::invalid_argument);
  c.p.schedule = {};
  c.p.schedule.threads = 4;  // more than Params::threads
  EXPECT_THROW(gemm::run(c), std::invalid_argument);
}

TEST(Tune, ScheduleTextRoundTrips) {
  gemm::Schedule s;
  s.path = gemm::Path::decode;
  s.isa = gemm::Isa::scalar;
  s.mc = 48, s.nc = 96, s.kc = 128, s.threads = 2, s.threads_m = 1, s.threads_n = 2;
  s.decode_k_tile = 512, s.split_k = 4, s.stages = 3, s.fuse_items = gemm::Fuse::on;
  EXPECT_EQ(gemm::parse_schedule(gemm::to_string(s)), s);
  s.fuse_items = gemm::Fuse::off;
  EXPECT_EQ(gemm::parse_schedule(gemm::to_string(s)), s);
  for (gemm::Order o : {gemm::Order::mk, gemm::Order::km}) {
    s.order = o;
    EXPECT_EQ(gemm::parse_schedule(gemm::to_string(s)), s);
  }
  EXPECT_EQ(gemm::parse_schedule(gemm::to_string(gemm::Schedule{})), gemm::Schedule{});
  EXPECT_EQ(gemm::parse_schedule("threads=1"), [] {
    gemm::Schedule x;
    x.threads = 1;
    return x;
  }());
  for (const char* bad :
       {"path=fast", "threads=-1", "grid=2", "colour=red", "mc=12x", "kc", "order=nk", "fuse=2"})
    EXPECT_THROW(gemm::parse_schedule(bad), std::invalid_argument) << bad;
}

TEST(Tune, HeuristicAndModelAreDeterministicAndSane) {
  TensorSet tiny(Op::parse("gemm:m=1,n=8,k=512,dtype=fp32"));
  TensorSet many(Op::parse("batched_gemm:batch=64,m=4,n=64,k=128,dtype=bf16"));
  TensorSet big(Op::parse("gemm:m=256,n=256,k=512,dtype=fp32"));
  RunOptions opt;
  opt.threads = 2;
  const auto m = test_machine(2);
  const gemm::Call ct = backends::gemm_call(tiny, opt), cm = backends::gemm_call(many, opt),
                   cb = backends::gemm_call(big, opt);
  EXPECT_EQ(tune::heuristic(ct, m), tune::heuristic(ct, m));
  EXPECT_EQ(tune::heuristic(ct, m).threads, 1);  // tiny: no second thread
  EXPECT_EQ(tune::heuristic(cm, m).fuse_items, gemm::Fuse::on);
  EXPECT_EQ(tune::heuristic(cb, m).threads, 2);
  // The model: waking a thread for a tiny op costs more than it saves; one region for 64
  // small items beats 64 regions (and is the engine's own choice there); a big op wants both
  // threads.
  gemm::Schedule one, fused, per_item;
  one.threads = 1;
  fused.fuse_items = gemm::Fuse::on;
  per_item.fuse_items = gemm::Fuse::off;
  EXPECT_LT(tune::estimate(ct, one, m), tune::estimate(ct, {}, m));
  EXPECT_LT(tune::estimate(cm, fused, m), tune::estimate(cm, per_item, m));
  EXPECT_EQ(tune::estimate(cm, fused, m), tune::estimate(cm, {}, m));
  EXPECT_LT(tune::estimate(cb, {}, m), tune::estimate(cb, one, m));
  const auto a = tune::candidates(cb, m), b = tune::candidates(cb, m);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]);
  EXPECT_EQ(a.front(), gemm::Schedule{});  // the default is always a candidate
  // The direct path with 8 rows of A computes half the vectors of 16 rows (the AVX-512
  // family's k-pairs kernel; the AVX2 family's vectors hold 8 rows): on a machine whose FMAs,
  // not the W broadcasts, bound the kernel, it is estimated faster.
  tune::Machine slow = m;
  slow.fma_gflops_1t = 100;
  TensorSet m8(Op::parse("gemm:m=8,n=4096,k=4096,dtype=fp32")),
      m16(Op::parse("gemm:m=16,n=4096,k=4096,dtype=fp32"));
  gemm::Schedule direct;
  direct.path = gemm::Path::direct;
  EXPECT_LT(tune::estimate(backends::gemm_call(m8, opt), direct, slow),
            0.8 * tune::estimate(backends::gemm_call(m16, opt), direct, slow));
  // Over a short K the direct path's transposed write of C outweighs packing W^T: swapped, the
  // tile leaves as rows of C, and the model ranks it ahead (1.2x measured on the Zen 5 guest).
  TensorSet heads(Op::parse("batched_gemm:batch=128,m=128,n=128,k=128,dtype=bf16"));
  const gemm::Call ch = backends::gemm_call(heads, opt);
  gemm::Schedule swapped = direct;
  swapped.swap = true;
  ASSERT_TRUE(gemm::schedule_fits(ch.p, swapped));
  EXPECT_LT(tune::estimate(ch, swapped, m), tune::estimate(ch, direct, m));
}

class TuneCacheDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attain-test-tune-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(TuneCacheDir, SchedulerSources) {
  tune::Scheduler s(dir_ / "tuning.json");
  TensorSet set(Op::parse("gemm:m=8,n=64,k=256,dtype=bf16"));
  fill_inputs(set, 1);
  RunOptions opt;
  opt.threads = 2;
  gemm::Call c = backends::gemm_call(set, opt);
  const auto m = test_machine(2);
  EXPECT_EQ(s.choose(c, m).source, tune::Scheduler::Source::model);
  tune::Entry e;
  e.key = tune::key_of(c);
  e.best = "threads=1 path=decode";
  s.cache().put(e);
  auto ch = s.choose(c, m);
  EXPECT_EQ(ch.source, tune::Scheduler::Source::tuned);
  EXPECT_EQ(ch.schedule.threads, 1);
  // A neighbour shape takes the tuned schedule as its nearest.
  c.p.n = 72;
  EXPECT_EQ(s.choose(c, m).source, tune::Scheduler::Source::nearest);
  // A decode schedule is not usable above the decode path's M: the model decides.
  c.p.m = 100;
  EXPECT_NE(s.choose(c, m).schedule.path, gemm::Path::decode);
}

// Tuning-cache entries are input from a file: a schedule outside the engine's ranges (a cache
// block of 2^31 - 1 overflowed the blocking arithmetic: SIGFPE, or a hang), or a grid that
// does not make the key's threads, is dropped when the cache is read, with one warning, never
// run; `tune` measures the op again, and the next save removes it from the file.
TEST_F(TuneCacheDir, HostileEntriesAreDroppedNeverRun) {
  const fs::path file = dir_ / "tuning.json";
  RunOptions opt;
  opt.threads = 1;
  auto key_for = [&](const std::string& spec) {
    TensorSet set(Op::parse(spec));
    return tune::key_of(backends::gemm_call(set, opt));
  };
  const std::vector<std::pair<std::string, std::string>> entries = {
      {"gemm:m=64,n=64,k=128,dtype=fp32", "path=packed nc=2147483647"},
      {"gemm:m=64,n=64,k=136,dtype=fp32", "path=packed mc=2147483647 nc=2147483647 kc=2147483647"},
      {"gemm:m=64,n=64,k=144,dtype=fp32", "path=packed mc=2147483647"},
      {"gemm:m=64,n=64,k=152,dtype=fp32", "path=packed grid=1000x1000"},
      {"gemm:m=64,n=64,k=160,dtype=fp32", "path=packed grid=0x5"},
      {"gemm:m=64,n=64,k=168,dtype=fp32", "path=packed stages=99"},
      {"gemm:m=64,n=64,k=176,dtype=fp32", "path=packed threads=4"},
      {"gemm:m=64,n=64,k=184,dtype=fp32", "path=packed mc=96 nc=64 kc=128"},  // the good one
  };
  {
    tune::Cache raw(file, tune::current_identity(gemm::isa_name(gemm::detected_isa())));
    for (const auto& [spec, best] : entries) {
      tune::Entry e;
      e.key = key_for(spec);
      e.best = best;
      raw.put(e);
    }
    raw.save();
  }
  tune::Scheduler s(file);
  EXPECT_EQ(s.cache().size(), 1u);
  EXPECT_NE(s.cache().last_warning().find("7 entries dropped"), std::string::npos)
      << s.cache().last_warning();
  EXPECT_NE(s.cache().last_warning().find("nc=2147483647 outside 0..65536"), std::string::npos)
      << s.cache().last_warning();
  const auto m = test_machine(1);
  for (const auto& [spec, best] : entries) {
    TensorSet set(Op::parse(spec));
    fill_inputs(set, 3);
    gemm::Call c = backends::gemm_call(set, opt);
    const tune::Scheduler::Choice ch = s.choose(c, m);
    EXPECT_NO_THROW(gemm::check_schedule_ranges(ch.schedule)) << spec;
    c.p.schedule = ch.schedule;
    gemm::run(c);
    EXPECT_TRUE(verify(set).ok) << spec;
  }
  // Saving rewrites the file without them.
  s.cache().save();
  tune::Cache reread(file, tune::current_identity(gemm::isa_name(gemm::detected_isa())));
  EXPECT_EQ(reread.load(), "");
  EXPECT_EQ(reread.size(), 1u);
}

TEST_F(TuneCacheDir, TuneOpsStoresEveryTrialAndSkipsCached) {
  tune::Scheduler s(dir_ / "tuning.json");
  tune::TuneConfig cfg;
  cfg.threads = 2;
  cfg.search.top = 3;
  cfg.search.budget_s = 0.5;
  cfg.search.seconds_per_trial = 0.005;
  cfg.search.llc_bytes = 8 << 20;
  std::vector<CatalogOp> ops;
  for (const char* spec : {"gemm:m=2,n=64,k=300,dtype=bf16", "mla_decode:b=1,s=64,h=16,dtype=bf16"})
    ops.push_back({Op::parse(spec), {}});
  const auto m = test_machine(2);
  auto outs = tune::tune_ops(ops, cfg, s, m);
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].status, "tuned") << outs[0].reason;
  EXPECT_EQ(outs[1].status, "skipped");
  const tune::Entry* e = s.cache().find(outs[0].key);
  ASSERT_NE(e, nullptr);
  EXPECT_GE(e->trials.size(), 2u);
  EXPECT_EQ(e->trials.front().schedule, gemm::to_string(gemm::Schedule{}));  // default first
  EXPECT_NO_THROW(gemm::parse_schedule(e->best));
  // A fresh scheduler on the same file sees it; a second tuning run skips it.
  tune::Scheduler again(dir_ / "tuning.json");
  EXPECT_NE(again.cache().find(outs[0].key), nullptr);
  outs = tune::tune_ops(ops, cfg, again, m);
  EXPECT_EQ(outs[0].status, "cached");
}

// Two small models (dense and MoE) so the layer runs fast.
const char* kTinyLlama = R"({"model_type":"llama","hidden_size":256,"intermediate_size":512,
  "num_hidden_layers":2,"vocab_size":1000,"num_attention_heads":4,"num_key_value_heads":2})";
const char* kTinyMoe = R"({"model_type":"deepseek_v3","hidden_size":256,"intermediate_size":512,
  "moe_intermediate_size":64,"num_hidden_layers":2,"first_k_dense_replace":1,"vocab_size":1000,
  "num_attention_heads":8,"num_key_value_heads":8,"n_routed_experts":16,"num_experts_per_tok":4,
  "n_shared_experts":1,"n_group":4,"topk_group":2,"routed_scaling_factor":2.5,
  "scoring_func":"sigmoid","q_lora_rank":128,"kv_lora_rank":512,"qk_nope_head_dim":128,
  "qk_rope_head_dim":64,"v_head_dim":128})";

TEST(Layer, OpsAndStages) {
  const ModelConfig ds = load_bundled_model("deepseek-v3");
  PassSpec pass{"decode", 32, 4096, DType::bf16};
  const auto ops = layer_ops(ds, pass);
  std::vector<std::string> roles;
  for (const auto& o : ops) roles.push_back(o.role);
  EXPECT_EQ(roles, (std::vector<std::string>{"q_a+kv_a", "q_b", "kv_b", "mla_decode", "o", "router",
                                             "shared_gate_up", "experts_gate_up", "experts_down",
                                             "shared_down"}));
  for (std::size_t i = 1; i < ops.size(); ++i) EXPECT_LE(ops[i - 1].stage, ops[i].stage);
  const auto dense = layer_ops(parse_model_config(kTinyLlama, "tiny"), pass);
  EXPECT_EQ(dense.size(), 6u);  // qkv, attn_qk, attn_pv, o, gate_up, down
  EXPECT_THROW(parse_layer_spec("deepseek-v3:decode", 4096, DType::bf16), InputError);
  EXPECT_THROW(parse_layer_spec("deepseek-v3:train:1", 4096, DType::bf16), InputError);
  EXPECT_THROW(parse_layer_spec("deepseek-v3:decode:0", 4096, DType::bf16), InputError);
  EXPECT_THROW(parse_layer_spec("deepseek-v3:decode:3x", 4096, DType::bf16), InputError);
  const LayerSpec l = parse_layer_spec("llama-3.1-8b:decode:8", 1024, DType::f32);
  EXPECT_EQ(l.pass.tokens, 8);
  EXPECT_EQ(l.pass.context, 1024);
}

TEST_F(TuneCacheDir, LayerGroupedAndOpByOpAreVerified) {
  ::setenv("ATTAIN_TUNE_CACHE", (dir_ / "tuning.json").c_str(), 1);
  for (const char* cfg_text : {kTinyLlama, kTinyMoe}) {
    const ModelConfig cfg = parse_model_config(cfg_text, "tiny");
    const auto ops = layer_ops(cfg, PassSpec{"decode", 4, 256, DType::bf16});
    BenchConfig bc;
    bc.backends = {"attain", "attain:auto"};
    bc.run.threads = 2;
    bc.timing.max_seconds = 0.01;
    bc.timing.llc_bytes = 8 << 20;
    const auto rs = run_layer(ops, bc);
    ASSERT_EQ(rs.size(), 2u);
    for (const auto& r : rs) {
      EXPECT_EQ(r.status, "ok") << r.backend << ": " << r.reason;
      EXPECT_TRUE(r.verified);
      EXPECT_GT(r.median_s, 0);
    }
    if (cfg.is_moe()) {
      EXPECT_LT(rs[1].regions, rs[0].regions);  // q_b + kv_b, router + shared_gate_up grouped
    }
  }
}

}  // namespace
}  // namespace attain
