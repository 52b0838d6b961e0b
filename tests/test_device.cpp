// Device database, rooflines, and the host probe (features, cache, a tiny measurement).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "attain/device.hpp"
#include "attain/gemm.hpp"
#include "device/probe.hpp"
#include "device/probe_kernels.hpp"

namespace attain {
namespace {

namespace fs = std::filesystem;

// Sets an environment variable for one scope and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "attain-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// ---- device database ----------------------------------------------------------------

const std::set<std::string> kIds = {"h100-sxm",     "h200",         "b200",
                                    "b300",         "ascend-910b",  "ascend-910c",
                                    "ascend-950pr", "ascend-950dt", "mi300x"};

TEST(Devices, AllFilesLoadAndEveryNumberHasASource) {
  const auto devices = load_devices();
  std::set<std::string> ids;
  for (const auto& d : devices) {
    ids.insert(d.id);
    SCOPED_TRACE(d.id);
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.vendor.empty());
    EXPECT_TRUE(d.kind == "gpu" || d.kind == "npu");
    EXPECT_FALSE(d.peak_tflops.empty());
    // Every chip lists bf16 except the Ascend 950s, for which only FP8/FP4 were announced.
    if (d.id.rfind("ascend-950", 0) != 0) {
      EXPECT_GT(d.peak(DType::bf16), 0);
    }
    // Each of the five dtypes an analyst compares is a number or a stated, sourced gap.
    for (const char* dt : {"fp32", "bf16", "fp16", "fp8", "fp4"}) {
      const bool number = d.peak_tflops.count(dt) > 0, gap = d.peak_absent.count(dt) > 0;
      EXPECT_TRUE(number != gap) << dt;
      if (gap) {
        EXPECT_TRUE(d.peak_absent.at(dt) == kPeakNotPublished ||
                    d.peak_absent.at(dt) == kPeakNotSupported)
            << dt;
        EXPECT_FALSE(d.sources.at(std::string("peak_tflops.") + dt).empty()) << dt;
      }
    }
    EXPECT_GT(d.mem_bandwidth_gbps, 0);
    EXPECT_GT(d.mem_capacity_gb, 0);
    EXPECT_GT(d.interconnect_gbps, 0);
    EXPECT_FALSE(d.interconnect.empty());
    for (const auto& [dt, v] : d.peak_tflops) {
      EXPECT_GT(v, 0) << dt;
      EXPECT_FALSE(d.sources.at("peak_tflops." + dt).empty()) << dt;
    }
    for (const char* key : {"mem_bandwidth_gbps", "mem_capacity_gb", "interconnect"})
      EXPECT_FALSE(d.sources.at(key).empty()) << key;
    if (d.tdp_w > 0) {
      EXPECT_FALSE(d.sources.at("tdp_w").empty());
    }
    // Dense fp8 is never below dense bf16 where both are listed.
    if (d.peak(DType::fp8) > 0) {
      EXPECT_GE(d.peak(DType::fp8), d.peak(DType::bf16));
    }
  }
  EXPECT_EQ(ids, kIds);
}

TEST(Devices, KnownFiguresFromTheDatasheets) {
  // NVIDIA H100 SXM datasheet: dense BF16 989 TFLOP/s (1,979 with sparsity), 3.35 TB/s, 80 GB.
  const DeviceSpec h100 = load_device("h100-sxm");
  EXPECT_NEAR(h100.peak(DType::bf16), 989, 1);
  EXPECT_NEAR(h100.peak(DType::fp8), 1979, 1);
  EXPECT_DOUBLE_EQ(h100.mem_bandwidth_gbps, 3350);
  EXPECT_DOUBLE_EQ(h100.mem_capacity_gb, 80);
  // H200: same compute as H100 SXM, 141 GB at 4.8 TB/s.
  const DeviceSpec h200 = load_device("h200");
  EXPECT_DOUBLE_EQ(h200.peak(DType::bf16), h100.peak(DType::bf16));
  EXPECT_DOUBLE_EQ(h200.mem_bandwidth_gbps, 4800);
  EXPECT_DOUBLE_EQ(h200.mem_capacity_gb, 141);
  EXPECT_EQ(load_device("ascend-950pr").peak(DType::bf16),
            0);  // not announced: 0, as peak() promises
  EXPECT_EQ(load_device("ascend-950pr").peak_absent.at("bf16"), kPeakNotPublished);
  EXPECT_EQ(h100.peak_absent.at("fp4"), kPeakNotSupported);  // Hopper has no FP4 unit
  EXPECT_DOUBLE_EQ(load_device("b200").peak(DType::f32), 75);
}

TEST(Devices, UnknownIdListsKnownIds) {
  try {
    load_device("h900");
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("h900"), std::string::npos) << msg;
    for (const auto& id : kIds) EXPECT_NE(msg.find(id), std::string::npos) << msg;
  }
}

const char* kGood = R"({
  "id": "x1", "name": "Test chip", "vendor": "Nobody", "kind": "gpu",
  "peak_tflops": {"bf16": 100, "fp8": 200},
  "mem_bandwidth_gbps": 1000, "mem_capacity_gb": 64,
  "interconnect": {"name": "Link", "gbps": 50},
  "tdp_w": 300,
  "sources": {"peak_tflops.bf16": "a", "peak_tflops.fp8": "a", "mem_bandwidth_gbps": "b",
              "mem_capacity_gb": "b", "interconnect": "c", "tdp_w": "d"}
})";

std::string error_of(const std::string& text) {
  try {
    parse_device(text, "test.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

TEST(Devices, ParseGood) {
  const DeviceSpec d = parse_device(kGood, "test.json");
  EXPECT_EQ(d.id, "x1");
  EXPECT_DOUBLE_EQ(d.peak(DType::bf16), 100);
  EXPECT_DOUBLE_EQ(d.peak(DType::fp8), 200);
  EXPECT_DOUBLE_EQ(d.peak(DType::f16), 0);
  EXPECT_EQ(d.interconnect, "Link");
  EXPECT_DOUBLE_EQ(d.interconnect_gbps, 50);
  EXPECT_DOUBLE_EQ(d.tdp_w, 300);
}

TEST(Devices, MalformedAndTruncatedJsonAreClearErrors) {
  const std::string good = kGood;
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, good.size() / 2, good.size() - 2}) {
    const std::string msg = error_of(good.substr(0, cut));
    EXPECT_NE(msg.find("test.json"), std::string::npos) << cut << ": " << msg;
    EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << cut << ": " << msg;
  }
  EXPECT_NE(error_of("[1, 2]").find("one JSON object"), std::string::npos);
}

TEST(Devices, FieldErrorsNameTheField) {
  const std::string good = kGood;
  struct Bad {
    std::string text, expect;
  };
  const std::vector<Bad> bad = {
      {replace(good, R"("mem_bandwidth_gbps": 1000, )", ""), "missing field 'mem_bandwidth_gbps'"},
      {replace(good, R"("mem_capacity_gb": 64)", R"("mem_capacity_gb": "64")"),
       "'mem_capacity_gb' must be a number"},
      {replace(good, R"("bf16": 100)", R"("bf16": -1)"), "'peak_tflops.bf16' must be positive"},
      {replace(good, R"("bf16": 100)", R"("bf17": 100)"), "unknown dtype 'bf17'"},
      {replace(good, R"("kind": "gpu")", R"("kind": "tpu")"), "kind 'tpu'"},
      {replace(good, R"("tdp_w": 300,)", R"("tdp_w": 300, "tdpw": 1,)"), "unknown field 'tdpw'"},
      {replace(good, R"("tdp_w": "d")", R"("x": "d")"), "'tdp_w' has no entry in 'sources'"},
      {replace(good, R"("peak_tflops.fp8": "a", )", ""),
       "'peak_tflops.fp8' has no entry in 'sources'"},
      {replace(good, R"({"name": "Link", "gbps": 50})", R"({"name": "Link"})"),
       "missing field 'gbps'"},
      {replace(good, R"("id": "x1")", R"("id": "")"), "'id' must be a non-empty string"},
      {replace(good, R"("fp8": 200)", R"("fp8": "unknown")"),
       "'peak_tflops.fp8' must be a number, \"not published\" or \"not supported\""},
      {replace(good, R"("bf16": 100, "fp8": 200)",
               R"("bf16": "not published", "fp8": "not supported")"),
       "lists no number"},
      {replace(good, R"("peak_tflops": {"bf16": 100, "fp8": 200})",
               R"("peak_tflops": {"bf16": 100, "fp8": 200, "fp4": "not supported"})"),
       "'peak_tflops.fp4' has no entry in 'sources'"},
      {replace(good, R"("tdp_w": 300,)", R"("tdp_w": 300, "training_efficiency": 1.5,)"),
       "'training_efficiency' must be a fraction in (0, 1]"},
      {replace(good, R"("tdp_w": 300,)", R"("tdp_w": 300, "training_efficiency": 0,)"),
       "'training_efficiency' must be positive"},
      {replace(good, R"("tdp_w": 300,)", R"("tdp_w": 300, "training_efficiency": 0.5,)"),
       "'training_efficiency' has no entry in 'sources'"},
  };
  for (const auto& b : bad) {
    const std::string msg = error_of(b.text);
    EXPECT_NE(msg.find(b.expect), std::string::npos)
        << "expected '" << b.expect << "', got '" << msg << "'";
    EXPECT_NE(msg.find("test.json"), std::string::npos) << msg;
  }
}

TEST(Devices, DataDirFromTheEnvironment) {
  TempDir dir;
  write(dir.path() / "devices" / "x1.json", kGood);
  {
    ScopedEnv env("ATTAIN_DATA_DIR", dir.path().string());
    const auto all = load_devices();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].id, "x1");
    EXPECT_EQ(load_device("x1").name, "Test chip");
    // A file whose id differs from its name is refused.
    write(dir.path() / "devices" / "x2.json", kGood);
    EXPECT_THROW(load_devices(), InputError);
    EXPECT_THROW(load_device("x2"), InputError);
    // A truncated file names itself.
    write(dir.path() / "devices" / "x2.json", std::string(kGood).substr(0, 40));
    try {
      load_device("x2");
      FAIL();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("x2.json"), std::string::npos) << e.what();
    }
  }
  {
    ScopedEnv env("ATTAIN_DATA_DIR", (dir.path() / "nowhere").string());
    EXPECT_THROW(load_devices(), InputError);
  }
}

// ---- rooflines ------------------------------------------------------------------------

HostCeilings two_core_host() {
  HostCeilings c;
  c.cpu_model = "test";
  c.cores = 2;
  c.fma_gflops_1t = 100, c.fma_gflops_all = 180;
  c.read_gbps_1t = 10, c.read_gbps_all = 18;
  c.copy_gbps_1t = 12, c.copy_gbps_all = 20;
  c.fma_isa = "avx2";
  return c;
}

TEST(Roofline, HostCeilingsPerThreadCount) {
  const HostCeilings c = two_core_host();
  Roofline r1 = host_roofline(c, 1), r2 = host_roofline(c, 2), r9 = host_roofline(c, 9);
  EXPECT_DOUBLE_EQ(r1.peak_tflops, 0.100);
  EXPECT_DOUBLE_EQ(r1.bw_gbps, 10);
  EXPECT_DOUBLE_EQ(r2.peak_tflops, 0.180);
  EXPECT_DOUBLE_EQ(r2.bw_gbps, 18);         // min(18, 2 x 10)
  EXPECT_DOUBLE_EQ(r9.peak_tflops, 0.180);  // clamped to the cores there are
  EXPECT_NE(r2.source.find("2 threads"), std::string::npos) << r2.source;
  HostCeilings c4 = c;  // 4 cores: 100 at 1, 340 at 4 -> 180 at 2; bw min(40, 2 x 10) = 20
  c4.cores = 4, c4.fma_gflops_all = 340, c4.read_gbps_all = 40;
  EXPECT_DOUBLE_EQ(host_roofline(c4, 2).peak_tflops, 0.180);
  EXPECT_DOUBLE_EQ(host_roofline(c4, 2).bw_gbps, 20);
  EXPECT_DOUBLE_EQ(host_roofline(c4, 4).bw_gbps, 40);
}

// A CPU with a bf16 dot product: bf16 and fp8 (exact in bf16) are judged by the higher of its
// peak and the FMA peak, fp32 and fp16 by the FMA peak; without one, every dtype by the FMA
// peak.
TEST(Roofline, Bf16DotPeakForBf16AndFp8) {
  HostCeilings c = two_core_host();
  EXPECT_DOUBLE_EQ(host_roofline(c, 1).compute_peak(DType::fp8), 0.100);
  c.bf16_gflops_1t = 190, c.bf16_gflops_all = 350;
  const Roofline r = host_roofline(c, 2);
  EXPECT_DOUBLE_EQ(r.compute_peak(DType::bf16), 0.350);
  EXPECT_DOUBLE_EQ(r.compute_peak(DType::fp8), 0.350);
  EXPECT_DOUBLE_EQ(r.compute_peak(DType::f32), 0.180);
  EXPECT_DOUBLE_EQ(r.compute_peak(DType::f16), 0.180);
  EXPECT_DOUBLE_EQ(r.attainable_tflops(Op::parse("gemm:m=2048,n=2048,k=2048,dtype=fp8")), 0.350);
  // A dot instruction slower than the FMAs (Sapphire Rapids): bf16 is still bounded by the FMA
  // rate, at which it can be multiplied as fp32.
  c.bf16_gflops_1t = 90, c.bf16_gflops_all = 170;
  EXPECT_DOUBLE_EQ(host_roofline(c, 2).compute_peak(DType::bf16), 0.180);
  EXPECT_DOUBLE_EQ(host_roofline(c, 1).compute_peak(DType::fp8), 0.100);
}

TEST(Roofline, MemoryBoundAndComputeBoundByHand) {
  const Roofline r = host_roofline(two_core_host(), 1);  // 0.1 TFLOP/s, 10 GB/s
  // GEMV-like: 2*4096*4096 FLOPs over (4096 + 4096*4096 + 4096) fp32 values.
  const Op gemv = Op::parse("gemm:m=1,n=4096,k=4096,dtype=fp32");
  ASSERT_DOUBLE_EQ(gemv.flops(), 33554432.0);
  ASSERT_DOUBLE_EQ(gemv.bytes(), 67141632.0);
  EXPECT_NEAR(r.attainable_tflops(gemv), 33554432.0 / 67141632.0 * 10 / 1e3, 1e-15);  // 0.0049976
  // 1024^3: intensity 2*1024^3 / (3*1024^2*4) = 170.7 FLOP/B -> 1.71 TFLOP/s of memory roof,
  // so the 0.1 TFLOP/s compute peak binds.
  const Op big = Op::parse("gemm:m=1024,n=1024,k=1024,dtype=fp32");
  ASSERT_DOUBLE_EQ(big.bytes(), 12582912.0);
  EXPECT_DOUBLE_EQ(r.attainable_tflops(big), 0.1);
}

TEST(Roofline, DeviceRoofline) {
  DeviceSpec d = parse_device(kGood, "test.json");  // bf16 100 TFLOP/s, 1000 GB/s
  const Roofline r = device_roofline(d, DType::bf16);
  EXPECT_DOUBLE_EQ(r.peak_tflops, 100);
  EXPECT_DOUBLE_EQ(r.bw_gbps, 1000);
  EXPECT_NE(r.source.find("x1"), std::string::npos);
  // Decode GEMM m=8, n=k=7168 in bf16: 822083584 FLOPs over 102989824 bytes = 7.98 FLOP/B,
  // 7.98 TFLOP/s at 1 TB/s: memory-bound.
  const Op decode = Op::parse("gemm:m=8,n=7168,k=7168,dtype=bf16");
  ASSERT_DOUBLE_EQ(decode.flops(), 822083584.0);
  ASSERT_DOUBLE_EQ(decode.bytes(), 102989824.0);
  EXPECT_NEAR(r.attainable_tflops(decode), 822083584.0 / 102989824.0, 1e-12);
  // 8192^3 bf16: 2730.7 FLOP/B -> compute-bound at 100.
  EXPECT_DOUBLE_EQ(r.attainable_tflops(Op::parse("gemm:m=8192,n=8192,k=8192,dtype=bf16")), 100);
  EXPECT_DOUBLE_EQ(device_roofline(d, DType::fp8).peak_tflops, 200);
  EXPECT_THROW(device_roofline(d, DType::f16), InputError);  // not listed
}

// A device as the 950s are: fp8 published, bf16 not, fp16 not supported.
DeviceSpec gappy_device() {
  const std::string text =
      replace(replace(kGood, R"("bf16": 100, "fp8": 200)",
                      R"("bf16": "not published", "fp8": 200, "fp16": "not supported")"),
              R"("peak_tflops.bf16": "a",)",
              R"("peak_tflops.bf16": "quotes fp8 only", "peak_tflops.fp16": "no fp16 unit",)");
  return parse_device(text, "test.json");
}

TEST(Devices, StatedGapsSayWhyThereIsNoPeak) {
  const DeviceSpec d = gappy_device();
  EXPECT_EQ(d.peak(DType::bf16), 0);
  EXPECT_EQ(d.peak_gap(DType::bf16), "not published (quotes fp8 only)");
  EXPECT_EQ(d.peak_gap(DType::f16), "not supported (no fp16 unit)");
  EXPECT_EQ(d.peak_gap(DType::f32), "not listed in the device file");
  try {
    device_roofline(d, DType::bf16);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not published (quotes fp8 only)"), std::string::npos)
        << e.what();
  }
  // The words survive `attain devices --json`.
  const auto j = devices_json({d});
  EXPECT_EQ(j[0]["peak_tflops"]["bf16"], "not published");
  EXPECT_EQ(j[0]["peak_tflops"]["fp8"], 200);
  EXPECT_NE(devices_table({d}).find("n/p"), std::string::npos);
}

TEST(Devices, AssumedPeaksAreLabelledAndFillGapsOnly) {
  for (const auto& [rule, want] : std::vector<std::pair<std::string, double>>{
           {"bf16=fp8/2", 100}, {"bf16=fp8*0.25", 50}, {"bf16=123.5", 123.5}}) {
    DeviceSpec d = gappy_device();
    assume_peak(d, rule);
    EXPECT_DOUBLE_EQ(d.peak(DType::bf16), want) << rule;
    ASSERT_EQ(d.assumptions.size(), 1u);
    const std::string& label = d.assumptions[0];
    EXPECT_EQ(label.rfind("ASSUMED (--assume-peak " + rule + ")", 0), 0u) << label;
    EXPECT_NE(label.find("the vendor's figure: not published"), std::string::npos) << label;
    // The roofline built on it carries the label as its source.
    EXPECT_NE(device_roofline(d, DType::bf16).source.find("ASSUMED"), std::string::npos);
  }
  auto refused = [](const std::string& rule, const std::string& expect) {
    DeviceSpec d = gappy_device();
    try {
      assume_peak(d, rule);
      ADD_FAILURE() << rule << ": no error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << rule << ": " << e.what();
    }
    EXPECT_EQ(d.peak(DType::bf16), 0) << rule;  // nothing half-applied
  };
  refused("fp8=300", "lists a fp8 peak of 200");  // a published figure stays
  refused("fp16=fp8/2", "does not support fp16: not supported (no fp16 unit)");
  refused("bf16", "no '='");
  refused("bf17=fp8/2", "unknown dtype 'bf17'");
  refused("bf16=fp32/2", "lists no fp32 peak to derive from");
  refused("bf16=fp8", "needs /N or *F");
  refused("bf16=fp8/0", "'0' is not a positive number");
  refused("bf16=fp8/x", "'x' is not a positive number");
  refused("bf16=-5", "'-5' is not a positive number");
  refused("bf16=nan", "'nan' is not a positive number");
  refused("bf16=5e", "'5e' is not a positive number");
  refused("bf16=foo/2", "unknown dtype 'foo'");
}

// ---- host probe -----------------------------------------------------------------------

std::set<std::string> proc_cpu_flags() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream ss(line.substr(line.find(':') + 1));
      std::set<std::string> flags;
      for (std::string w; ss >> w;) flags.insert(w);
      return flags;
    }
  return {};
}

TEST(Probe, FeaturesAgreeWithTheKernel) {
  const CpuFeatures f = detected_cpu_features();
  const auto flags = proc_cpu_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  EXPECT_EQ(f.avx2, flags.count("avx2") == 1);
  EXPECT_EQ(f.fma, flags.count("fma") == 1);
  EXPECT_EQ(f.f16c, flags.count("f16c") == 1);
  EXPECT_EQ(f.avx512f, flags.count("avx512f") == 1);
  EXPECT_EQ(f.avx512bw, flags.count("avx512bw") == 1);
  EXPECT_EQ(f.avx512_bf16, flags.count("avx512_bf16") == 1);
  EXPECT_EQ(f.amx, flags.count("amx_tile") == 1);
#if defined(__x86_64__)
  EXPECT_TRUE(f.avx2);  // every machine this project runs on has AVX2
  EXPECT_EQ(f.avx2, __builtin_cpu_supports("avx2") != 0);
#endif
}

TEST(Probe, ModelAndCaches) {
  EXPECT_FALSE(cpu_model_name().empty());
  const auto c = probe::cache_sizes();
  EXPECT_GT(c.l1d, 0);
  EXPECT_GE(c.l2, c.l1d);
  EXPECT_GE(probe::available_cpus(), 1);
  // The bandwidth array rule: 8x the LLC within [256 MiB, 1 GiB].
  EXPECT_EQ(probe::default_bw_array_bytes({0, 0, 32 << 20}), std::int64_t{256} << 20);
  EXPECT_EQ(probe::default_bw_array_bytes({0, 0, 96 << 20}), std::int64_t{768} << 20);
  EXPECT_EQ(probe::default_bw_array_bytes({0, 0, std::int64_t{508} << 20}), std::int64_t{1} << 30);
}

TEST(Probe, TinyMeasurement) {
  probe::ProbeConfig cfg;
  cfg.bw_array_bytes = 4 << 20;
  cfg.fma_seconds = 0.002;
  cfg.trials = 1;
  const HostCeilings c = probe::measure_host(cfg, false);
  EXPECT_EQ(c.cores, probe::available_cpus());
  EXPECT_GT(c.fma_gflops_1t, 0.5);
  EXPECT_GT(c.fma_gflops_all, 0.5);
  EXPECT_GT(c.read_gbps_1t, 0.1);
  EXPECT_GT(c.read_gbps_all, 0.1);
  EXPECT_GT(c.copy_gbps_1t, 0.1);
  EXPECT_GT(c.copy_gbps_all, 0.1);
  EXPECT_GE(c.bw_array_bytes, std::int64_t{4} << 20);
  const CpuFeatures f = detected_cpu_features();
  EXPECT_EQ(c.fma_isa, f.avx512f ? "avx512f" : (f.avx2 && f.fma) ? "avx2" : "sse2");
  EXPECT_EQ(c.measured_at.size(), 20u) << c.measured_at;  // 2026-11-30T07:55:11Z
  EXPECT_NE(probe::find_read(probe::kernels_sse2(), c.read_kernel), nullptr) << c.read_kernel;
  EXPECT_GT(c.cold_bytes, 0);
  EXPECT_LE(c.cold_bytes, c.bw_array_bytes);
  for (const CeilingFigure& fig : kCeilingFigures)
    if (c.*fig.value > 0) {
      ASSERT_EQ(c.spread.count(fig.name), 1u) << fig.name;
      EXPECT_GE(c.spread.at(fig.name), 0);
      EXPECT_LT(c.spread.at(fig.name), 1);
    }
}

// The check a benchmark run makes of the ceilings: the run's threads, every figure measured.
TEST(Probe, TinyCheckOfTheCeilings) {
  probe::ProbeConfig cfg;
  cfg.bw_array_bytes = 4 << 20;
  cfg.fma_seconds = 0.002;
  cfg.trials = 1;
  const CeilingsCheck c = probe::check_ceilings(1, "start", cfg);
  EXPECT_EQ(c.when, "start");
  EXPECT_EQ(c.threads, 1);
  EXPECT_GT(c.fma_gflops, 0.5);
  EXPECT_GT(c.read_gbps, 0.1);
  EXPECT_EQ(c.bf16_gflops > 0, detected_cpu_features().avx512_bf16);
  EXPECT_EQ(c.at.size(), 20u) << c.at;
  EXPECT_EQ(probe::check_ceilings(0, "end", cfg).threads, 1);  // at least one thread
}

TEST(Probe, JsonRoundTrip) {
  HostCeilings c = two_core_host();
  c.isa.avx2 = c.isa.fma = true;
  c.l1d_bytes = 49152, c.l3_bytes = 1 << 25, c.bw_array_bytes = 1 << 30;
  c.measured_at = "2026-11-30T08:00:00Z";
  c.read_kernel = "streams4", c.cold_bytes = 256 << 20;
  c.spread = {{"read_gbps_all", 0.05}};
  c.raised = {{"fma_gflops_1t", "2026-12-04T10:00:00Z by a re-check"}};
  const HostCeilings back = probe::ceilings_from_json(probe::to_json(c));
  EXPECT_EQ(probe::to_json(back), probe::to_json(c));
  auto j = probe::to_json(c);
  j.erase("read_gbps_all");
  EXPECT_THROW(probe::ceilings_from_json(j), InputError);
  j = probe::to_json(c);
  j["fma_gflops_1t"] = "fast";
  EXPECT_THROW(probe::ceilings_from_json(j), InputError);
}

TEST(Probe, CacheRoundTripAndRefresh) {
  TempDir dir;
  ScopedEnv env("XDG_CACHE_HOME", dir.path().string());
  EXPECT_EQ(probe::cache_path(), dir.path() / "attain" / "probe.json");
  int calls = 0;
  auto fake = [&] {
    ++calls;
    HostCeilings c = two_core_host();
    c.cpu_model = cpu_model_name();
    c.cores = probe::available_cpus();
    c.fma_gflops_1t = 100 + calls;  // tells the measurements apart
    c.measured_at = "2026-11-30T08:00:00Z";
    return c;
  };
  EXPECT_DOUBLE_EQ(probe::probe_cached(false, fake).fma_gflops_1t, 101);
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(fs::exists(probe::cache_path()));
  EXPECT_DOUBLE_EQ(probe::probe_cached(false, fake).fma_gflops_1t, 101);  // from the cache
  EXPECT_EQ(calls, 1);
  EXPECT_DOUBLE_EQ(probe::probe_cached(true, fake).fma_gflops_1t, 102);  // refresh
  EXPECT_EQ(calls, 2);
  EXPECT_DOUBLE_EQ(probe::probe_cached(false, fake).fma_gflops_1t, 102);
  // Keyed by CPU model and core count: the file holds our entry under that key.
  const auto j = nlohmann::json::parse(slurp(probe::cache_path()));
  EXPECT_TRUE(j["entries"].contains(probe::cache_key(cpu_model_name(), probe::available_cpus())));
}

TEST(Probe, CorruptCacheWarnsAndRemeasures) {
  TempDir dir;
  ScopedEnv env("XDG_CACHE_HOME", dir.path().string());
  int calls = 0;
  auto fake = [&] {
    ++calls;
    HostCeilings c = two_core_host();
    c.cpu_model = cpu_model_name();
    c.cores = probe::available_cpus();
    c.measured_at = "2026-11-30T08:00:00Z";
    return c;
  };
  for (const std::string& bad : {std::string("{\"schema\": \"attain.probe/1\", \"entr"),
                                 std::string("not json"), std::string("{\"schema\": \"other\"}")}) {
    write(probe::cache_path(), bad);
    testing::internal::CaptureStderr();
    const HostCeilings c = probe::probe_cached(false, fake);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("corrupt"), std::string::npos) << err;
    EXPECT_NE(err.find(probe::cache_path().string()), std::string::npos) << err;
    EXPECT_DOUBLE_EQ(c.fma_gflops_1t, 100);
    // The file is valid again afterwards.
    EXPECT_NO_THROW(probe::ceilings_from_json(nlohmann::json::parse(
        slurp(probe::cache_path()))["entries"]
                                   [probe::cache_key(cpu_model_name(), probe::available_cpus())]));
  }
  EXPECT_EQ(calls, 3);
  // A damaged entry (a field missing) is re-measured too.
  auto j = nlohmann::json::parse(slurp(probe::cache_path()));
  j["entries"][probe::cache_key(cpu_model_name(), probe::available_cpus())].erase("copy_gbps_1t");
  write(probe::cache_path(), j.dump());
  testing::internal::CaptureStderr();
  probe::probe_cached(false, fake);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("copy_gbps_1t"), std::string::npos);
  EXPECT_EQ(calls, 4);
}

TEST(Probe, HostDevice) {
  HostCeilings c = two_core_host();
  c.measured_at = "2026-11-30T08:00:00Z";
  const DeviceSpec d = probe::host_device(c);
  EXPECT_EQ(d.id, "host");
  EXPECT_DOUBLE_EQ(d.peak(DType::f32), 0.18);
  EXPECT_DOUBLE_EQ(d.mem_bandwidth_gbps, 18);
  EXPECT_FALSE(d.sources.at("peak_tflops.fp32").empty());
}

// The read ceiling is a ceiling: attain's M = 1 decode, which streams its weights and nothing
// else, never reads memory faster than the probe's fastest read loop. One thread, a 512 MiB
// weight (past the caches of every machine seen), the two measured in turn five times so that
// the machine's drift hits both alike; the best of each compared.
TEST(Probe, NoDecodeOutrunsTheReadCeiling) {
  constexpr std::int64_t kN = 16384, kK = 8192;  // fp32 W: 512 MiB
  std::vector<float> w(static_cast<std::size_t>(kN * kK)), a(kK), c(kN);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 13) * 0.01f;
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = 1.0f + static_cast<float>(i % 5);
  gemm::Params p;
  p.a = a.data(), p.b = w.data(), p.c = c.data();
  p.m = 1, p.n = kN, p.k = kK;
  p.threads = 1;
  probe::ProbeConfig cfg;
  cfg.bw_array_bytes = kN * kK * 4;
  cfg.fma_seconds = 0.002;
  cfg.trials = 1;
  probe::CeilingSampler sampler(1, cfg);
  double decode = 0, ceiling = 0;
  gemm::gemm(p);  // warm-up
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm::gemm(p);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    decode = std::max(decode, static_cast<double>(w.size() * sizeof(float)) / s / 1e9);
    ceiling = std::max(ceiling, sampler.sample("sample").read_gbps);
  }
  double want = 0;  // row 0 of C against fp64
  for (std::int64_t q = 0; q < kK; ++q) want += static_cast<double>(a[q]) * w[q];
  EXPECT_NEAR(c[0], want, 1e-5 * want);
  // 1.2: room for a busy neighbour (ctest -j) that slows one of the pair; a wrong ceiling was
  // 1.6x off.
  EXPECT_LE(decode, 1.2 * ceiling) << "decode " << decode << " GB/s, read ceiling " << ceiling;
}

// Every read loop of every ISA this CPU runs sums the array exactly (small integers: the fp32
// sums are exact whatever the order), over sizes that exercise their unrolling.
TEST(Probe, ReadLoopsSumEveryFloat) {
  std::vector<probe::Kernels> sets = {probe::kernels_sse2()};
#if defined(__x86_64__)
  const CpuFeatures f = detected_cpu_features();
  if (f.avx2 && f.fma) sets.push_back(probe::kernels_avx2());
  if (f.avx512f) sets.push_back(probe::kernels_avx512());
#endif
  for (const std::size_t n : {std::size_t{64}, std::size_t{128}, std::size_t{64 * 37}}) {
    auto* p = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
    double want = 0;
    for (std::size_t i = 0; i < n; ++i) want += (p[i] = static_cast<float>(i % 7));
    for (const auto& k : sets) {
      std::set<std::string> names;
      for (const auto& r : k.reads) {
        ASSERT_NE(r.name, nullptr) << k.isa;
        names.insert(r.name);
        EXPECT_EQ(r.fn(p, n), want) << k.isa << " " << r.name << " n=" << n;
        EXPECT_EQ(probe::find_read(k, r.name), &r);
      }
      EXPECT_EQ(names.size(), std::size_t{probe::kReadKernels}) << k.isa;
      EXPECT_EQ(probe::find_read(k, "nope"), nullptr);
    }
    std::free(p);
  }
}

// A ceiling is the best the machine has been measured to do: a later, lower probe keeps the
// cached figure (and says so), a higher one replaces it; forget_cached() starts over.
TEST(Probe, RefreshKeepsTheBestFigure) {
  TempDir dir;
  ScopedEnv env("XDG_CACHE_HOME", dir.path().string());
  double read = 30;
  auto fake = [&] {
    HostCeilings c = two_core_host();
    c.cpu_model = cpu_model_name();
    c.cores = probe::available_cpus();
    c.read_gbps_all = read;
    c.measured_at = "2026-12-04T10:00:00Z";
    return c;
  };
  EXPECT_DOUBLE_EQ(probe::probe_cached(true, fake).read_gbps_all, 30);
  read = 20;  // a busy minute
  HostCeilings c = probe::probe_cached(true, fake);
  EXPECT_DOUBLE_EQ(c.read_gbps_all, 30);
  ASSERT_EQ(c.raised.count("read_gbps_all"), 1u);
  EXPECT_NE(c.raised.at("read_gbps_all").find("earlier probe"), std::string::npos);
  EXPECT_EQ(c.raised.count("fma_gflops_1t"), 0u);  // equal figures are the new measurement's
  EXPECT_DOUBLE_EQ(probe::probe_cached(false, fake).read_gbps_all, 30);  // and it is cached
  read = 40;
  c = probe::probe_cached(true, fake);
  EXPECT_DOUBLE_EQ(c.read_gbps_all, 40);
  EXPECT_EQ(c.raised.count("read_gbps_all"), 0u);
  EXPECT_TRUE(probe::forget_cached());
  EXPECT_FALSE(probe::forget_cached());
  read = 20;
  EXPECT_DOUBLE_EQ(probe::probe_cached(false, fake).read_gbps_all, 20);
}

TEST(Probe, RaiseCachedFigures) {
  TempDir dir;
  ScopedEnv env("XDG_CACHE_HOME", dir.path().string());
  EXPECT_FALSE(probe::raise_cached([](HostCeilings&) { return true; }).has_value());  // no entry
  auto fake = [] {
    HostCeilings c = two_core_host();
    c.cpu_model = cpu_model_name();
    c.cores = probe::available_cpus();
    c.measured_at = "2026-12-04T10:00:00Z";
    return c;
  };
  probe::probe_cached(true, fake);
  const auto up = probe::raise_cached(
      [](HostCeilings& c) { return raise_ceiling(c, "read_gbps_1t", 12.5, "a re-check"); });
  ASSERT_TRUE(up.has_value());
  EXPECT_DOUBLE_EQ(up->read_gbps_1t, 12.5);
  const HostCeilings again = probe::probe_cached(false, fake);
  EXPECT_DOUBLE_EQ(again.read_gbps_1t, 12.5);
  ASSERT_EQ(again.raised.count("read_gbps_1t"), 1u);
  EXPECT_NE(again.raised.at("read_gbps_1t").find("a re-check"), std::string::npos);
  // Never lowered; a figure the machine lacks (bf16: 0) is not invented; unknown names throw.
  HostCeilings c = two_core_host();
  EXPECT_FALSE(raise_ceiling(c, "read_gbps_1t", 9, "x"));
  EXPECT_FALSE(raise_ceiling(c, "bf16_gflops_1t", 500, "x"));
  EXPECT_FALSE(raise_ceiling(c, "read_gbps_1t", std::numeric_limits<double>::infinity(), "x"));
  EXPECT_DOUBLE_EQ(c.read_gbps_1t, 10);
  EXPECT_THROW(raise_ceiling(c, "read", 11, "x"), std::invalid_argument);
}

}  // namespace
}  // namespace attain
