// Verification, results files, aggregates, timing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "attain/bench.hpp"
#include "attain/files.hpp"
#include "attain/results.hpp"
#include "attain/verify.hpp"

using namespace attain;

namespace {
// Runs the fp64 reference into the set's outputs (as the reference backend does).
void reference_into(TensorSet& set) {
  const auto outs = reference_outputs(set);
  std::size_t oi = 0;
  for (auto& t : set.all()) {
    if (!t.desc.output) continue;
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      const auto x = static_cast<float>(outs[oi][static_cast<std::size_t>(i)]);
      if (t.desc.dtype == DType::f32)
        t.as<float>()[i] = x;
      else if (t.desc.dtype == DType::bf16)
        t.as<std::uint16_t>()[i] = f32_to_bf16(x);
      else if (t.desc.dtype == DType::f16)
        t.as<std::uint16_t>()[i] = f32_to_f16(x);
    }
    ++oi;
  }
}
}  // namespace

class VerifyEveryKind : public ::testing::TestWithParam<const char*> {};

TEST_P(VerifyEveryKind, ReferencePassesAndCorruptionFails) {
  TensorSet set(Op::parse(GetParam()));
  fill_inputs(set, 1);
  poison_outputs(set);
  EXPECT_FALSE(verify(set).ok) << "poisoned (unwritten) outputs must fail";
  reference_into(set);
  const auto full = verify(set);
  EXPECT_TRUE(full.ok) << full.detail;
  const auto residual = verify(set, /*full_limit=*/0);  // the large-op path
  EXPECT_TRUE(residual.ok) << residual.detail;
  // One wrong element: scale it, the error must exceed the tolerance in both checks.
  Tensor& out = set[set.op().kind == OpKind::mla_decode ? "o" : "c"];
  const std::int64_t i = 0;
  if (out.desc.dtype == DType::f32)
    out.as<float>()[i] = out.as<float>()[i] * 50 + 10;
  else
    out.as<std::uint16_t>()[i] =
        out.desc.dtype == DType::bf16 ? f32_to_bf16(1e4f) : f32_to_f16(1e4f);
  EXPECT_FALSE(verify(set).ok);
  if (set.op().kind != OpKind::mla_decode) {
    EXPECT_FALSE(verify(set, 0).ok);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, VerifyEveryKind,
    ::testing::Values("gemm:m=5,n=33,k=70,dtype=fp32", "gemm:m=1,n=17,k=300,dtype=bf16",
                      "gemm:m=3,n=130,k=257,dtype=fp8", "gemm:m=4,n=9,k=1,dtype=fp16",
                      "batched_gemm:batch=3,m=4,n=5,k=6,dtype=fp32",
                      "grouped_gemm:groups=5,m=3,n=7,k=9,dtype=bf16,skew=1",
                      "grouped_gemm:groups=4,m=3,n=7,k=130,dtype=fp8,skew=1,layout=masked",
                      "mla_decode:b=2,s=70,h=3,dtype=bf16",
                      "mla_decode:b=2,s=65,h=2,dtype=fp8,s_q=2",
                      "mla_decode:b=1,s=10,h=2,dtype=fp32"));

TEST(Verify, NanInOutputFailsHard) {
  TensorSet set(Op::parse("gemm:m=4,n=4,k=4,dtype=fp32"));
  fill_inputs(set, 3);
  reference_into(set);
  ASSERT_TRUE(verify(set).ok);
  set["c"].as<float>()[5] = std::nanf("");
  const auto v = verify(set);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.detail.find("non-finite"), std::string::npos);
}

TEST(Verify, GuardOverwriteFails) {
  TensorSet set(Op::parse("gemm:m=4,n=4,k=4,dtype=fp32"));
  fill_inputs(set, 3);
  reference_into(set);
  set["c"].as<float>()[16] = 0;
  EXPECT_NE(verify(set).detail.find("guard"), std::string::npos);
}

TEST(Verify, MlaCachePoisonAndEmptySequences) {
  TensorSet set(Op::parse("mla_decode:b=3,s=130,h=2,dtype=bf16"));
  fill_inputs(set, 9);
  auto* sl = set["seqlens"].as<std::int32_t>();
  sl[0] = 0, sl[1] = 1;  // ragged: empty, one token, full
  fill_mla_cache(set, 10);
  reference_into(set);
  EXPECT_TRUE(verify(set).ok);
  EXPECT_TRUE(std::isinf(set["lse"].as<float>()[0]));
  // Slots past each sequence hold NaN: a kernel that reads them fails.
  const auto* bt = set["block_table"].as<std::int32_t>();
  const double poisoned = load_value(set["kcache"], (bt[1 * 3] * 64 + 5) * 576);
  EXPECT_TRUE(std::isnan(poisoned));
}

// Large inputs are filled in parallel ranges, each skipping the generator to its first draw:
// the bytes must not depend on how the values are split (grain 1 and 7: ranges that start
// inside fp8 scale blocks, matrices and rows; the largest: one sequential pass).
TEST(Fill, DataDependOnTheSeedNotOnTheRanges) {
  for (const char* spec :
       {"gemm:m=3,n=70,k=300,dtype=fp32", "batched_gemm:batch=3,m=2,n=50,k=40,dtype=bf16",
        "gemm:m=5,n=200,k=300,dtype=fp8",
        "grouped_gemm:groups=3,m=2,n=130,k=256,dtype=fp8,layout=masked",
        "mla_decode:b=2,s=70,h=2,dtype=bf16"}) {
    TensorSet once(Op::parse(spec));
    fill_inputs(once, 5, std::numeric_limits<std::int64_t>::max());
    for (std::int64_t grain : {1, 7}) {
      TensorSet split(Op::parse(spec));
      fill_inputs(split, 5, grain);
      for (std::size_t t = 0; t < once.all().size(); ++t) {
        const Tensor& a = once.all()[t];
        const Tensor& b = split.all()[t];
        if (a.desc.output) continue;
        ASSERT_EQ(a.nbytes(), b.nbytes());
        EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes()), 0)
            << spec << " grain " << grain << ": " << a.desc.name;
      }
    }
  }
}

// Files read are regular files under a size limit; files written appear whole or not at all,
// and a failed write leaves no temp file beside its target.
TEST(Files, BoundedReadsAndAtomicWrites) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("attain-files-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Written (the parent made), read back, overwritten whole.
  write_file_atomic(dir / "a" / "b.txt", "hello");
  EXPECT_EQ(read_input_file(dir / "a" / "b.txt", 5, "test file"), "hello");
  write_file_atomic(dir / "a" / "b.txt", "hi");
  EXPECT_EQ(read_input_file(dir / "a" / "b.txt", 5, "test file"), "hi");
  EXPECT_NE(message([&] {
              read_input_file(dir / "a" / "b.txt", 1, "test file");
            }).find("is 2 bytes, over the limit of 1 bytes"),
            std::string::npos);
  EXPECT_NE(message([&] {
              read_input_file("/dev/zero", 1 << 20, "test file");
            }).find("'/dev/zero' is not a regular file"),
            std::string::npos);
  EXPECT_NE(message([&] { read_input_file(dir, 1 << 20, "test file"); }).find("not a regular file"),
            std::string::npos);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);  // opened without waiting for a writer
  EXPECT_NE(message([&] {
              read_input_file(dir / "fifo", 1 << 20, "test file");
            }).find("not a regular file"),
            std::string::npos);
  EXPECT_NE(message([&] {
              read_input_file(dir / "none", 1 << 20, "test file");
            }).find("cannot read test file"),
            std::string::npos);
  // A target that is a directory, or in a directory that cannot be written: refused, no temp.
  EXPECT_NE(message([&] { write_file_atomic(dir / "a", "x"); }).find("it is a directory"),
            std::string::npos);
  if (::geteuid() != 0) {  // (root writes anywhere)
    fs::create_directories(dir / "ro");
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_NE(message([&] { write_file_atomic(dir / "ro" / "f", "x"); }).find("cannot write"),
              std::string::npos);
    fs::permissions(dir / "ro", fs::perms::owner_all);
  }
  for (const auto& e : fs::recursive_directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  fs::remove_all(dir);
}

TEST(Results, RoundTripAndSchemaErrors) {
  ResultsFile f;
  f.created = "2026-11-30T00:00:00Z";
  f.machine.cpu_model = "test cpu";
  f.machine.threads = 2;
  f.machine.roofline.peak_tflops = 0.19, f.machine.roofline.bw_gbps = 17.7,
  f.machine.roofline.source = "probe";
  Result r;
  r.op = {Op::parse("gemm:m=8,n=64,k=64,dtype=fp32"), {"m", "qkv", "decode", 8, 1024, 32}};
  r.backend = "openblas", r.median_s = 1e-5, r.min_s = 9e-6, r.reps = 10, r.flops = r.op.op.flops();
  r.tflops = 0.01, r.efficiency = 0.5, r.verified = true;
  Result u = r;
  u.backend = "onednn", u.status = "unsupported", u.reason = "bf16 not on this CPU";
  f.results = {r, u};
  f.machine.checks = {{"start", "2026-11-30T00:00:01Z", 2, 400.5, 800.25, 45.5, "plain", 0},
                      {"end", "2026-11-30T00:01:00Z", 2, 410.0, 0, 60.0, "plain", 0}};
  const auto dir = std::filesystem::temp_directory_path() / "attain_test_results";
  std::filesystem::create_directories(dir);
  const auto file = dir / "r.json";
  write_results(file, f);
  const auto g = read_results(file);
  ASSERT_EQ(g.results.size(), 2u);
  EXPECT_EQ(g.results[0].op.op.spec(), r.op.op.spec());
  EXPECT_EQ(g.results[0].op.prov.layer, "qkv");
  EXPECT_EQ(g.results[0].op.prov.count, 32);
  EXPECT_DOUBLE_EQ(g.results[0].median_s, 1e-5);
  EXPECT_EQ(g.results[1].status, "unsupported");
  EXPECT_EQ(g.results[1].reason, "bf16 not on this CPU");
  EXPECT_DOUBLE_EQ(g.machine.roofline.bw_gbps, 17.7);
  ASSERT_EQ(g.machine.checks.size(), 2u);
  EXPECT_EQ(g.machine.checks[0].when, "start");
  EXPECT_EQ(g.machine.checks[0].at, "2026-11-30T00:00:01Z");
  EXPECT_EQ(g.machine.checks[0].threads, 2);
  EXPECT_DOUBLE_EQ(g.machine.checks[0].fma_gflops, 400.5);
  EXPECT_DOUBLE_EQ(g.machine.checks[0].bf16_gflops, 800.25);
  EXPECT_DOUBLE_EQ(g.machine.checks[0].read_gbps, 45.5);
  EXPECT_DOUBLE_EQ(g.machine.checks[1].read_gbps, 60.0);

  auto write = [&](const std::string& text) {
    std::ofstream(dir / "bad.json") << text;
    try {
      read_results(dir / "bad.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(write("{\"schema\": \"attain.results/2\", \"results\": []}").find("not supported"),
            std::string::npos);
  EXPECT_NE(
      write("{\"schema\": \"attain.results/1\", \"machine\": {}, \"resu").find("not valid JSON"),
      std::string::npos);
  EXPECT_NE(write("{\"machine\": {}, \"results\": []}").find("'schema'"), std::string::npos);
  EXPECT_NE(
      write(
          R"({"schema": "attain.results/1", "machine": {}, "results": [{"op": {"spec": "gemm:m=0,n=1,k=1,dtype=fp32"}, "backend": "x", "status": "ok"}]})")
          .find("must be positive"),
      std::string::npos);
  EXPECT_THROW(read_results(dir / "missing.json"), InputError);
  std::filesystem::remove_all(dir);
}

TEST(Aggregates, GeomeanMedianQuartiles) {
  const auto a = aggregate({1, 4, 16, 0, -1});  // non-positive values are ignored
  EXPECT_EQ(a.count, 3u);
  EXPECT_NEAR(a.geomean, 4.0, 1e-12);
  EXPECT_NEAR(a.median, 4.0, 1e-12);
  EXPECT_NEAR(a.q1, 2.5, 1e-12);
  EXPECT_NEAR(a.q3, 10.0, 1e-12);
}

// The ceilings measured during a run: the highest of each over the checks.
TEST(Ceilings, CheckedRooflineIsTheHighestOfEach) {
  const std::vector<CeilingsCheck> checks = {{"start", "t0", 2, 400, 800, 40, "plain", 0},
                                             {"end", "t1", 2, 300, 600, 50, "plain", 0}};
  const Roofline roof = checked_roofline(checks);
  EXPECT_DOUBLE_EQ(roof.peak_tflops, 0.4);
  EXPECT_DOUBLE_EQ(roof.bf16_peak_tflops, 0.8);
  EXPECT_DOUBLE_EQ(roof.bw_gbps, 50);
  const Roofline best = best_of(roof, {0.5, 0, 45, "probe"});
  EXPECT_DOUBLE_EQ(best.peak_tflops, 0.5);
  EXPECT_DOUBLE_EQ(best.bf16_peak_tflops, 0.8);
  EXPECT_DOUBLE_EQ(best.bw_gbps, 50);
}

namespace {
// A memory-bound fp32 op (M = 1: 2 FLOPs per 4-byte weight) at `frac` of its roofline at
// `gbps`, timed at `t`.
Result decode_at(double gbps, double frac, double t, const char* backend = "x") {
  Result r;
  r.op = {Op::parse("gemm:m=1,n=1024,k=1024,dtype=fp32"), {}};
  r.backend = backend, r.status = "ok", r.t_unix = t;
  r.tflops = r.op.op.flops() / r.op.op.bytes() * gbps / 1e3 * frac;
  r.median_s = r.op.op.flops() / (r.tflops * 1e12);
  r.gbps = r.op.op.bytes() / r.median_s / 1e9;
  return r;
}
}  // namespace

// Each result judged against the roofline given (the best known at the end of the run) and,
// locally, against the checks just before and just after it.
TEST(Ceilings, JudgedAgainstTheBestAndTheNearestChecks) {
  std::vector<CeilingsCheck> checks = {{"start", "a", 1, 100, 0, 40, "plain", 1000},
                                       {"sample", "b", 1, 100, 0, 20, "plain", 1100},
                                       {"sample", "c", 1, 100, 0, 25, "plain", 1200},
                                       {"end", "d", 1, 100, 0, 30, "plain", 1300}};
  std::vector<Result> rs = {decode_at(20, 0.9, 1150), decode_at(20, 0.5, 1250),
                            decode_at(20, 0.5, 0)};
  rs.push_back(rs[0]);
  rs.back().status = "wrong";
  const Roofline roof{0.1, 0, 40, "best"};
  judge_results(rs, roof, checks);
  EXPECT_NEAR(rs[0].efficiency, 0.45, 1e-12);             // 18 GB/s of 40
  EXPECT_NEAR(rs[0].local_efficiency, 18.0 / 25, 1e-12);  // checks at 1100 and 1200: 25
  EXPECT_NEAR(rs[1].local_efficiency, 10.0 / 30, 1e-12);  // 1200 and 1300: 30
  EXPECT_EQ(rs[2].local_efficiency, 0);                   // no time recorded: no local figure
  // Checks hours away say nothing of the op's minute.
  std::vector<Result> late = {decode_at(20, 0.9, 1300 + 3 * 3600)};
  judge_results(late, roof, checks);
  EXPECT_EQ(late[0].local_efficiency, 0);
  EXPECT_GT(late[0].efficiency, 0);
  EXPECT_EQ(rs[3].efficiency, 0);  // only ok results are judged
  EXPECT_FALSE(rs[0].exceeds_ceiling());
  // A result faster than the best ceiling is a ceiling error: flagged, never aggregated.
  rs.push_back(decode_at(48, 1.0, 1250));
  judge_results(rs, roof, checks);
  EXPECT_TRUE(rs.back().exceeds_ceiling());
  const Summary s = summarize(rs, {"x"});
  EXPECT_EQ(s.ceiling_errors.at("x"), 1u);
  EXPECT_EQ(s.efficiency.at("x").at("all").count, 3u);
  EXPECT_EQ(s.local_efficiency.at("x").count, 2u);
  EXPECT_EQ(s.status_counts.at("x").at("ok"), 4u);
  const std::string table = format_table(rs, {"x"});
  EXPECT_NE(table.find("CEIL!"), std::string::npos) << table;
  EXPECT_NE(format_summary(s, {"x"}).find("1 above the ceiling"), std::string::npos);
  // The results file says so too.
  EXPECT_TRUE(to_json(rs.back()).value("ceiling_error", false));
  EXPECT_FALSE(to_json(rs[0]).contains("ceiling_error"));
}

// What a run measured higher than the probe raises the probe's figures: the checks, and a
// result faster than its ceiling (a memory-bound op's bytes / time).
TEST(Ceilings, RaisedByTheRunsChecksAndFastOps) {
  HostCeilings c;
  c.cores = 2, c.fma_gflops_1t = 100, c.fma_gflops_all = 190;
  c.read_gbps_1t = 15, c.read_gbps_all = 28;
  const Roofline roof = host_roofline(c, 2);
  const std::vector<CeilingsCheck> checks = {{"start", "a", 2, 180, 0, 30, "plain", 1}};
  Result fast = decode_at(34, 1.0, 2);
  fast.efficiency = 34.0 / 28;
  auto notes = raise_from_run(c, 2, checks, {fast}, roof);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_DOUBLE_EQ(c.fma_gflops_all, 190);  // 180 is lower: kept
  EXPECT_NEAR(c.read_gbps_all, 34, 1e-9);
  EXPECT_DOUBLE_EQ(c.read_gbps_1t, 15);
  EXPECT_NE(c.raised.at("read_gbps_all").find("gemm:m=1,n=1024,k=1024"), std::string::npos);
  // A run on some but not all threads has no figure of the probe's to raise.
  HostCeilings four = c;
  four.cores = 4;
  EXPECT_TRUE(raise_from_run(four, 2, checks, {fast}, roof).empty());
}

TEST(Ceilings, ChecksPrintedBesideTheCeilingsUsed) {
  MachineInfo m;
  m.roofline = {0.441, 0.822, 77.3, "probe"};
  EXPECT_EQ(format_checks(m), "");
  m.checks = {{"start", "t0", 2, 400, 800, 40, "plain", 0},
              {"sample", "t1", 2, 380, 790, 35, "plain", 0},
              {"sample", "t2", 2, 390, 795, 45, "plain", 0},
              {"end", "t3", 2, 300, 600, 50, "plain", 0}};
  const std::string text = format_checks(m);
  EXPECT_NE(text.find("read  40.0 GB/s (77.3)"), std::string::npos) << text;
  EXPECT_NE(text.find("2 samples between ops"), std::string::npos) << text;
  EXPECT_NE(text.find("read 35.0-45.0 GB/s"), std::string::npos) << text;
}

TEST(Aggregates, SummaryRatiosAgainstTheFirstBackend) {
  std::vector<Result> rs;
  for (int i = 0; i < 3; ++i) {
    Result a;
    a.op = {Op::parse("gemm:m=" + std::to_string(i + 1) + ",n=8,k=8,dtype=fp32"),
            {"", "", "decode", 1, 0, 1}};
    a.backend = "x", a.median_s = 1.0, a.efficiency = 0.5;
    Result b = a;
    b.backend = "y", b.median_s = 2.0, b.efficiency = 0.25;
    rs.push_back(a), rs.push_back(b);
  }
  const auto s = summarize(rs, {"x", "y"});
  EXPECT_NEAR(s.speed_ratio.at("x/y").geomean, 2.0, 1e-12);
  EXPECT_NEAR(s.efficiency.at("x").at("all").geomean, 0.5, 1e-12);
  EXPECT_NEAR(s.efficiency.at("y").at("phase=decode").geomean, 0.25, 1e-12);
}

// --rounds: each op and backend keeps its fastest ok run; a wrong answer or an error in any run
// stays; the later runs may list the backends in another order; the same op twice in a list
// (two models' layers) stays two results.
TEST(Aggregates, RoundsKeepTheFastestRunAndEveryFailure) {
  auto result = [](const char* spec, const char* backend, double median, const char* status) {
    Result r;
    r.op = {Op::parse(spec), {"", "", "decode", 1, 0, 1}};
    r.backend = backend, r.median_s = median, r.min_s = median / 2, r.status = status;
    return r;
  };
  const char* a = "gemm:m=1,n=8,k=8,dtype=fp32";
  const char* b = "gemm:m=2,n=8,k=8,dtype=fp32";
  std::vector<Result> kept = {result(a, "x", 2.0, "ok"),    result(a, "y", 3.0, "ok"),
                              result(b, "x", 1.0, "wrong"), result(b, "y", 5.0, "ok"),
                              result(a, "x", 4.0, "ok"),    result(a, "y", 1.0, "unsupported")};
  // The second run: backends reversed, x faster on the first a, y slower on it, y wrong on b,
  // x ok and fast on b (stays wrong), x slower on the second a.
  const std::vector<Result> round = {result(a, "y", 3.5, "ok"),          result(a, "x", 1.5, "ok"),
                                     result(b, "y", 0.5, "wrong"),       result(b, "x", 0.1, "ok"),
                                     result(a, "y", 1.0, "unsupported"), result(a, "x", 5.0, "ok")};
  keep_faster_round(kept, round);
  EXPECT_EQ(kept[0].median_s, 1.5);  // faster run kept, with its own other timings
  EXPECT_EQ(kept[0].min_s, 0.75);
  EXPECT_EQ(kept[1].median_s, 3.0);
  EXPECT_EQ(kept[2].status, "wrong");
  EXPECT_EQ(kept[3].status, "wrong");
  EXPECT_EQ(kept[3].median_s, 0.5);
  EXPECT_EQ(kept[4].median_s, 4.0);
  EXPECT_EQ(kept[5].status, "unsupported");
  // A run of another op list is a bug of the caller.
  std::vector<Result> other = {result(b, "x", 1.0, "ok")};
  EXPECT_THROW(keep_faster_round(kept, other), std::logic_error);
}

namespace {
// Sleeps `us` per run, counts its runs and, given a log, appends its id to it.
struct SleepKernel : Kernel {
  SleepKernel(int id_ = 0, int us_ = 200, std::vector<int>* log_ = nullptr)
      : id(id_), us(us_), log(log_) {}
  int id, us;
  std::vector<int>* log;
  int runs = 0;
  void run() override {
    ++runs;
    if (log != nullptr) log->push_back(id);
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  }
};
}  // namespace

TEST(Timing, InterleavedGroupsRunInTurnAndKeepTheirOwnTimes) {
  std::vector<int> log;
  SleepKernel a0(0, 200, &log), a1(0, 200, &log), b0(1, 600, &log), b1(1, 600, &log);
  const std::vector<std::vector<Kernel*>> groups = {{&a0, &a1}, {&b0, &b1}};
  TimingConfig cfg;
  cfg.max_seconds = 0.02;
  cfg.noise_target = 0;  // every group runs its whole budget
  cfg.llc_bytes = 1 << 20;
  const std::vector<Timing> t = time_interleaved(groups, 4 << 20, cfg);
  ASSERT_EQ(t.size(), 2u);
  for (const Timing& x : t) EXPECT_GE(x.reps, cfg.min_reps);
  EXPECT_GE(t[0].median_s, 150e-6);
  EXPECT_GE(t[1].median_s, 1.5 * t[0].median_s);  // 600 vs 200 us asleep (and oversleeping)
  // Warm-up: every set of each group in order; then rounds A B, B A, A B, ... while both run.
  ASSERT_GE(log.size(), 4u + 2 * static_cast<std::size_t>(cfg.min_reps));
  EXPECT_EQ(std::vector<int>(log.begin(), log.begin() + 4), (std::vector<int>{0, 0, 1, 1}));
  const std::vector<int> rounds(log.begin() + 4, log.begin() + 4 + 2 * cfg.min_reps);
  for (int r = 0; r < cfg.min_reps; ++r) {
    const int first = r % 2 == 0 ? 0 : 1;
    EXPECT_EQ(rounds[static_cast<std::size_t>(2 * r)], first) << "round " << r;
    EXPECT_EQ(rounds[static_cast<std::size_t>(2 * r + 1)], 1 - first) << "round " << r;
  }
  // The slower group reached its budget in fewer runs; both stop by their own rules.
  EXPECT_GT(t[0].reps, t[1].reps);
  EXPECT_THROW(time_interleaved(std::vector<std::vector<Kernel*>>{{}}, 1, cfg),
               std::invalid_argument);
}

TEST(Timing, InterleaveRunsAreConsecutiveBackendsOfOneGroup) {
  const std::vector<std::string_view> g = {"attain", "attain", "", "", "x", "x", "attain"};
  auto end = [&](std::size_t b) {
    return interleave_run_end(b, g.size(), [&](std::size_t i) { return g[i]; });
  };
  EXPECT_EQ(end(0), 2u);  // attain, attain:auto
  EXPECT_EQ(end(1), 2u);
  EXPECT_EQ(end(2), 3u);  // no group: alone, even beside another of no group
  EXPECT_EQ(end(3), 4u);
  EXPECT_EQ(end(4), 6u);
  EXPECT_EQ(end(6), 7u);  // not joined with the first run
}

TEST(Timing, RotatesWarmsUpAndReportsTheMedian) {
  SleepKernel a, b;
  std::vector<Kernel*> ks = {&a, &b};
  TimingConfig cfg;
  cfg.max_seconds = 0.02;
  cfg.llc_bytes = 1 << 20;
  const Timing t = time_kernels(ks, 4 << 20, cfg);  // 8 MiB of sets > 2x LLC: rotation, no flush
  EXPECT_GE(t.reps, cfg.min_reps);
  EXPECT_GE(t.median_s, 150e-6);
  EXPECT_LE(t.min_s, t.median_s);
  EXPECT_GE(a.runs, 2);  // warm-up + timed
  EXPECT_GE(b.runs, 2);
  EXPECT_EQ(rotation_sets(1 << 20, cfg), 2);
  cfg.hot = true;
  EXPECT_EQ(rotation_sets(1 << 10, cfg), 1);
}

// A run that alone outlasts the budget is timed three times, not min_reps times; a shorter
// one min_reps times at least.
TEST(Timing, LongRunsTakeThreeReps) {
  TimingConfig cfg;
  cfg.max_seconds = 0.005;
  cfg.hot = true;
  SleepKernel slow(0, 8000);
  std::vector<Kernel*> ks = {&slow};
  EXPECT_EQ(time_kernels(ks, 1 << 10, cfg).reps, 3);
  SleepKernel quick(0, 500);
  ks = {&quick};
  EXPECT_GE(time_kernels(ks, 1 << 10, cfg).reps, cfg.min_reps);
  // Cold, on a set far past the caches: the long warm-up run is the first of the three.
  cfg.hot = false;
  cfg.llc_bytes = 1 << 20;
  SleepKernel cold(0, 8000);
  ks = {&cold};
  EXPECT_EQ(time_kernels(ks, std::size_t{1} << 30, cfg).reps, 3);
  EXPECT_EQ(cold.runs, 3);
}
