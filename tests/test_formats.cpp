// The report files attain writes, each through the one file that defines its schema: written,
// read back and written again gives the same document; a wrong schema, a missing field and a
// field of the wrong type are refused with the file's name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "attain/bench_session.hpp"
#include "attain/cluster_job.hpp"
#include "attain/mla_bench.hpp"
#include "attain/moe.hpp"
#include "attain/report.hpp"

using namespace attain;
using nlohmann::json;

namespace {

MlaReport mla_sample() {
  MlaReport r;
  r.config.op = Op::parse("mla_decode:b=3,s=130,h=4,dtype=fp8,s_q=2");
  r.config.varlen = true;
  r.config.threads = 2;
  r.config.seed = 9;
  r.config.timing.max_seconds = 0.01, r.config.timing.min_reps = 2;
  r.isa = "avx512";
  r.peak_tflops = 0.22, r.bw_gbps = 35.0, r.roofline_source = "probe (2 threads)";
  r.created = "2026-12-05T00:00:00Z", r.command = "attain mla -b 3";
  MlaVariantResult a;
  a.variant = "attain", a.verified = a.timed = true, a.error = 1e-3, a.tolerance = 2e-2;
  a.flops = 1e9, a.bytes = 2e6, a.t = {1e-4, 9e-5, 1e-6, 20};
  MlaVariantResult n = a;
  n.variant = "naive", n.t.median_s = 3e-4;
  MlaVariantResult s;
  s.variant = "separate_kv", s.verified = false, s.detail = "max error 0.5 at o[0]", s.flops = 5e8,
  s.bytes = 4e6, s.note = "pool shared";
  r.results = {a, s, n};
  r.config.variants = {"attain", "separate_kv", "naive"};
  return r;
}

moe::MoeReport moe_sample() {
  moe::MoeReport r;
  r.config.mode = moe::Mode::low_latency;
  r.config.dtype = moe::Payload::fp8;
  r.config.tokens = 128, r.config.hidden = 7168, r.config.inter = 256;
  r.config.gate.experts = 16, r.config.gate.topk = 8;
  r.config.reps = 10, r.config.threads = 1, r.config.skew = 0.5, r.config.seed = 42;
  r.result.ranks = 2, r.result.transport = "shm", r.result.expert_backend = "attain";
  r.config.expert_backend = "attain";
  r.result.dispatch = {120.5, 100.25, 20.25, 1.5e6, 14.9, 0.61, 0.5};
  r.result.combine = {140.5, 110.25, 30.25, 2.5e6, 22.7, 0.71, 0.55};
  r.result.copy_gbps = 49, r.result.copy_gbps_probe = 49, r.result.copy_gbps_memcpy = 41;
  r.result.verified = true, r.result.verification = "sentinel rows reached their experts";
  r.result.serial_ms = 2.5, r.result.overlapped_ms = 2.0, r.result.comm_ms = 1.0,
  r.result.hidden_fraction = 0.5;  // contention left unmeasured: nulls
  r.result.skipped = "contention not measurable here";
  r.result.gemm_gflops = 80;
  r.created = "2026-12-05T00:00:00Z", r.command = "attain moe";
  return r;
}

}  // namespace

TEST(Formats, MlaRoundTrip) {
  const MlaReport r = mla_sample();
  const json j = to_json(r);
  EXPECT_EQ(j["schema"], "attain.mla/1");
  const MlaReport back = mla_report_from_json(j, "m.json");
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back.config.op, r.config.op);
  ASSERT_TRUE(back.speedup_vs("naive"));
  EXPECT_DOUBLE_EQ(*back.speedup_vs("naive"), 3.0);
  EXPECT_FALSE(back.speedup_vs("separate_kv"));  // not timed
  EXPECT_FALSE(back.all_verified());
  // Without ceilings: no efficiency, no bound, and still a round trip.
  MlaReport bare = r;
  bare.peak_tflops.reset(), bare.bw_gbps.reset();
  const json jb = to_json(bare);
  EXPECT_TRUE(jb["roofline"].is_null());
  EXPECT_TRUE(jb["results"][0]["efficiency"].is_null());
  EXPECT_EQ(to_json(mla_report_from_json(jb, "b.json")), jb);
  // The text names every variant and the speedup.
  const std::string text = mla_report_text(r);
  for (const char* w : {"attain", "naive", "separate_kv", "WRONG", "attain vs naive", "bytes:"})
    EXPECT_NE(text.find(w), std::string::npos) << w;
}

TEST(Formats, MlaRefusesOtherDocuments) {
  json j = to_json(mla_sample());
  j["schema"] = "attain.mla/2";
  EXPECT_THROW(mla_report_from_json(j, "m.json"), InputError);
  j = to_json(mla_sample());
  j.erase("results");
  EXPECT_THROW(mla_report_from_json(j, "m.json"), InputError);
  j = to_json(mla_sample());
  j["op"] = "gemm:m=1,n=2,k=3,dtype=fp32";
  EXPECT_THROW(mla_report_from_json(j, "m.json"), InputError);
  j = to_json(mla_sample());
  j["threads"] = "two";
  try {
    mla_report_from_json(j, "m.json");
    FAIL() << "a string thread count was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("m.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("threads"), std::string::npos) << e.what();
  }
}

TEST(Formats, MoeRoundTrip) {
  const moe::MoeReport r = moe_sample();
  const json j = moe::to_json(r);
  EXPECT_EQ(j["schema"], "attain.moe/1");
  EXPECT_TRUE(j["contention"]["gemm_slowdown"].is_null());
  const moe::MoeReport back = moe::moe_report_from_json(j, "moe.json");
  EXPECT_EQ(moe::to_json(back), j);
  EXPECT_EQ(back.config.mode, moe::Mode::low_latency);
  EXPECT_FALSE(back.result.gemm_slowdown);
  ASSERT_TRUE(back.result.hidden_fraction);
  EXPECT_DOUBLE_EQ(*back.result.hidden_fraction, 0.5);
  const std::string text = moe::moe_report_text(r);
  for (const char* w : {"low-latency fp8", "dispatch", "combine", "hidden_fraction 0.50", "skipped",
                        "verified   yes"})
    EXPECT_NE(text.find(w), std::string::npos) << w;
}

TEST(Formats, MoeRefusesOtherDocuments) {
  json j = moe::to_json(moe_sample());
  j.erase("schema");
  EXPECT_THROW(moe::moe_report_from_json(j, "moe.json"), InputError);
  j = moe::to_json(moe_sample());
  j["mode"] = "fastest";
  EXPECT_THROW(moe::moe_report_from_json(j, "moe.json"), InputError);
  j = moe::to_json(moe_sample());
  j["dispatch"].erase("gbps");
  EXPECT_THROW(moe::moe_report_from_json(j, "moe.json"), InputError);
  EXPECT_THROW(moe::moe_report_from_json(json::array(), "moe.json"), InputError);
}

namespace {

LayerReport layer_sample() {
  LayerReport r;
  r.layer = "tiny:decode:4";
  r.model = "tiny";
  r.pass = {"decode", 4, 256, DType::bf16};
  r.threads = 2;
  r.created = "2026-12-05T00:00:00Z", r.command = "attain bench --layer tiny:decode:4";
  for (const auto& [spec, role, stage] :
       {std::tuple{"gemm:m=4,n=512,k=256,dtype=bf16", "qkv", 0},
        std::tuple{"gemm:m=4,n=256,k=256,dtype=bf16", "o_proj", 1}}) {
    LayerOp l;
    l.op.op = Op::parse(spec);
    l.role = role, l.stage = stage;
    r.ops.push_back(l);
  }
  r.flops = 1e6, r.bytes = 4e5, r.floor_s = 2e-5, r.checked_floor_s = 1.8e-5;
  CeilingsCheck c;
  c.when = "start", c.at = "2026-12-05T00:00:01Z", c.threads = 2, c.fma_gflops = 400,
  c.bf16_gflops = 200, c.read_gbps = 30, c.read_kernel = "prefetch", c.t_unix = 1.5e9;
  r.checks = {c};
  LayerResult a;
  a.backend = "attain", a.median_s = 1e-4, a.min_s = 9e-5, a.iqr_s = 1e-6, a.reps = 30,
  a.regions = 4, a.verified = true;
  LayerResult b = a;
  b.backend = "attain:auto", b.median_s = 8e-5, b.regions = 2;
  LayerResult w;
  w.backend = "onednn", w.status = "unsupported", w.reason = "no bf16 matmul here";
  r.results = {a, b, w};
  return r;
}

}  // namespace

TEST(Formats, LayerRoundTrip) {
  const LayerReport r = layer_sample();
  const json j = to_json(r);
  EXPECT_EQ(j["schema"], "attain.layer/1");
  EXPECT_DOUBLE_EQ(j["results"][1]["speedup_vs_attain"].get<double>(), 1e-4 / 8e-5);
  const LayerReport back = layer_report_from_json(j, "l.json");
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back.stages(), 2);
  ASSERT_NE(back.baseline(), nullptr);
  EXPECT_EQ(back.baseline()->backend, "attain");
  EXPECT_FALSE(back.any_failed());
  json bad = j;
  bad["results"][0].erase("median_s");
  EXPECT_THROW(layer_report_from_json(bad, "l.json"), InputError);
  bad = j;
  bad["schema"] = "attain.results/1";
  EXPECT_THROW(layer_report_from_json(bad, "l.json"), InputError);
  const Roofline roof{0.4, 0.2, 30, "probe (2 threads)"};
  const std::string text = layer_plan_text(r) + layer_results_text(r, roof);
  for (const char* w : {"stage 1  o_proj", "vs attain", "no bf16 matmul here", "Roofline floor"})
    EXPECT_NE(text.find(w), std::string::npos) << w;
}

// A simulated job written by attain cluster and read back by attain report: the figures the
// report shows are the figures the simulation produced.
TEST(Formats, ClusterRunAndSweepRoundTrip) {
  cluster::JobRequest q;
  q.chips = 1024, q.days = 2, q.runs = 3, q.threads = 1, q.seed = 5;
  q.model = "llama-3.1-8b";
  q.created = "2026-12-05T00:00:00Z", q.command = "attain cluster";
  q.validate();
  const cluster::JobOutcome out = cluster::simulate_job(q);
  const auto jo = cluster::to_json(out);
  EXPECT_EQ(jo["schema"], "attain.cluster/1");
  const ClusterRun run = cluster_run_from_json(nlohmann::json::parse(jo.dump()), "c.json");
  EXPECT_EQ(run.chips, out.setup.chips);
  EXPECT_EQ(run.runs, 3);
  EXPECT_EQ(run.model, out.setup.work.name);
  EXPECT_DOUBLE_EQ(run.mfu, out.step.mfu);
  EXPECT_DOUBLE_EQ(run.ettr.mean, out.mc.ettr.mean);
  EXPECT_DOUBLE_EQ(run.goodput.mean, out.mc.goodput.mean);
  EXPECT_DOUBLE_EQ(run.unexpected.mean, out.mc.unexpected.mean);
  EXPECT_EQ(run.by_cause.size(), out.failures.causes.size());
  EXPECT_TRUE(run.has_timeline);
  EXPECT_EQ(run.timeline.size(), out.mc.runs[0].timeline.size());
  EXPECT_NE(cluster::job_text(out).find("ETTR"), std::string::npos);

  q.sweep = {512, 1024};
  const cluster::SweepOutcome sw = cluster::sweep_jobs(q);
  const auto js = cluster::to_json(sw);
  EXPECT_EQ(js["schema"], "attain.cluster-sweep/1");
  const ClusterSweep back = cluster_sweep_from_json(nlohmann::json::parse(js.dump()), "s.json");
  ASSERT_EQ(back.points.size(), 2u);
  ASSERT_EQ(back.variants.size(), sw.points[0].variants.size());
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.points[i].chips, sw.points[i].setup.chips);
    for (const auto& v : sw.points[i].variants)
      EXPECT_DOUBLE_EQ(back.points[i].variants.at(v.variant.name).goodput, v.mc.goodput.mean);
  }
  EXPECT_NE(cluster::sweep_text(sw).find("async+spares"), std::string::npos);
  // Another schema is refused by the report's reader.
  auto wrong = nlohmann::json::parse(jo.dump());
  wrong["schema"] = "attain.cluster/9";
  EXPECT_THROW(report_file_kind(wrong, "c.json"), InputError);
}
