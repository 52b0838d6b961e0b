// Every comparison backend (OpenBLAS, BLIS, oneDNN) against the fp64 reference: each op kind
// on random and edge shapes (M=1, K=1, odd N and K, empty groups) with 1 and 2 threads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attain/backend.hpp"
#include "attain/verify.hpp"
#include "backends/dynlib.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attain {
namespace {

const std::vector<std::string>& comparison_backends() {
  static const std::vector<std::string> names = {"openblas", "blis", "onednn"};
  return names;
}

// nullptr (with the reason in *why) when the backend is not compiled in or cannot load.
std::unique_ptr<Backend> try_make(const std::string& name, std::string* why) {
  for (const auto& b : backend_registry())
    if (b.name == name) return b.make(why);
  *why = name + " is not compiled into this build";
  return nullptr;
}

const std::vector<std::string>& shapes() {
  static const std::vector<std::string> specs = {
      "gemm:m=1,n=1,k=1,dtype=fp32",
      "gemm:m=1,n=37,k=19,dtype=fp32",
      "gemm:m=7,n=33,k=1,dtype=fp32",
      "gemm:m=13,n=64,k=65,dtype=fp32",
      "gemm:m=3,n=5,k=257,dtype=fp32",
      "gemm:m=67,n=96,k=128,dtype=fp32",
      "batched_gemm:batch=3,m=1,n=17,k=9,dtype=fp32",
      "batched_gemm:batch=4,m=5,n=31,k=33,dtype=fp32",
      "grouped_gemm:groups=4,m=5,n=17,k=33,dtype=fp32",
      "grouped_gemm:groups=6,m=3,n=9,k=1,dtype=fp32,skew=2",
      "grouped_gemm:groups=3,m=1,n=8,k=5,dtype=fp32",
      "grouped_gemm:groups=4,m=5,n=17,k=33,dtype=fp32,layout=masked",
      "grouped_gemm:groups=6,m=3,n=9,k=7,dtype=fp32,skew=2,layout=masked",
  };
  return specs;
}

struct Case {
  std::string backend, spec;
  int threads;
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const auto& b : comparison_backends())
    for (const auto& s : shapes())
      for (int t : {1, 2}) cases.push_back({b, s, t});
  return cases;
}

// Runs `op` on `backend` and checks it against the reference; returns the verification.
Verification run_and_verify(Backend& backend, const Op& op, int threads, std::uint64_t seed) {
  TensorSet set(op);
  fill_inputs(set, seed);
  poison_outputs(set);
  RunOptions opt;
  opt.threads = threads;
  auto kernel = backend.prepare(set, opt);
  kernel->run();
  auto v = verify(set);
  if (v.ok) {
    // A second run on the same set must give a verified result too (no state left behind).
    poison_outputs(set);
    kernel->run();
    v = verify(set);
  }
  return v;
}

class BackendOps : public ::testing::TestWithParam<Case> {};

TEST_P(BackendOps, MatchesReference) {
  const Case& c = GetParam();
  std::string why;
  auto backend = try_make(c.backend, &why);
  if (!backend) GTEST_SKIP() << c.backend << ": " << why;
  const Op op = Op::parse(c.spec);
  const Support s = backend->supports(op);
  ASSERT_TRUE(s.ok) << s.reason;
  const auto v =
      run_and_verify(*backend, op, c.threads, 1234 + static_cast<std::uint64_t>(c.threads));
  EXPECT_TRUE(v.ok) << c.backend << " " << c.spec << " threads=" << c.threads << ": " << v.detail;
  EXPECT_LE(v.error, v.tolerance);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s =
      info.param.backend + "_" + info.param.spec + "_t" + std::to_string(info.param.threads);
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(All, BackendOps, ::testing::ValuesIn(all_cases()), case_name);

TEST(Backends, UnsupportedDtypesAndKindsGiveAReason) {
  for (const auto& name : comparison_backends()) {
    std::string why;
    auto backend = try_make(name, &why);
    if (!backend) continue;
    for (const char* spec :
         {"gemm:m=4,n=8,k=16,dtype=fp8", "grouped_gemm:groups=2,m=4,n=8,k=128,dtype=fp8",
          "mla_decode:b=1,s=64,h=2,dtype=bf16", "mla_decode:b=1,s=64,h=2,dtype=fp32"}) {
      const Support s = backend->supports(Op::parse(spec));
      EXPECT_FALSE(s.ok) << name << " " << spec;
      EXPECT_FALSE(s.reason.empty()) << name << " " << spec;
      TensorSet set(Op::parse(spec));
      EXPECT_THROW(backend->prepare(set, RunOptions{}), std::exception) << name << " " << spec;
    }
    for (const char* spec : {"gemm:m=4,n=8,k=16,dtype=bf16", "gemm:m=4,n=8,k=16,dtype=fp16",
                             "batched_gemm:batch=2,m=3,n=8,k=16,dtype=bf16"}) {
      const Op op = Op::parse(spec);
      const Support s = backend->supports(op);
      if (name != "onednn") {
        EXPECT_FALSE(s.ok) << name << " " << spec;
        EXPECT_NE(s.reason.find(std::string(dtype_name(op.dtype))), std::string::npos) << s.reason;
      } else if (s.ok) {
        // Where oneDNN has the 16-bit matmul (AVX-512 BF16, AMX), it must also be right.
        const auto v = run_and_verify(*backend, op, 1, 99);
        EXPECT_TRUE(v.ok) << spec << ": " << v.detail;
      } else {
        EXPECT_NE(s.reason.find("oneDNN"), std::string::npos) << s.reason;
        EXPECT_NE(s.reason.find(std::string(dtype_name(op.dtype))), std::string::npos) << s.reason;
      }
    }
  }
}

TEST(Backends, OpenBlasAndBlisAreDifferentLibrariesInOneProcess) {
  std::string why_o, why_b;
  auto openblas = try_make("openblas", &why_o);
  auto blis = try_make("blis", &why_b);
  if (!openblas || !blis) GTEST_SKIP() << "need both: " << why_o << " / " << why_b;
  const std::string vo = openblas->version(), vb = blis->version();
  EXPECT_NE(vo, vb);
  EXPECT_NE(vo.find("OpenBLAS"), std::string::npos) << vo;
  EXPECT_NE(vb.find("BLIS"), std::string::npos) << vb;
  EXPECT_EQ(vb.find("openblas"), std::string::npos) << vb;  // a different file was mapped
  EXPECT_EQ(vo.find("blis"), std::string::npos) << vo;
  // Both compute correctly side by side, alternating, in this one process.
  const Op op = Op::parse("gemm:m=9,n=40,k=70,dtype=fp32");
  for (int round = 0; round < 2; ++round) {
    EXPECT_TRUE(run_and_verify(*openblas, op, 1, 5).ok);
    EXPECT_TRUE(run_and_verify(*blis, op, 1, 6).ok);
  }
}

TEST(Backends, ThreadCountIsApplied) {
  const Op op = Op::parse("gemm:m=16,n=16,k=16,dtype=fp32");
  for (int threads : {2, 1}) {
    std::string why;
    if (auto be = try_make("openblas", &why)) {
      run_and_verify(*be, op, threads, 1);
      const auto* lib = backends::DynLib::open({"libopenblas.so.0", "libopenblas.so"}, &why);
      ASSERT_NE(lib, nullptr) << why;
      int (*get)() = nullptr;
      ASSERT_TRUE(lib->resolve(get, "openblas_get_num_threads", &why)) << why;
      EXPECT_EQ(get(), threads);
    }
    if (auto be = try_make("blis", &why)) {
      run_and_verify(*be, op, threads, 1);
      const auto* lib = backends::DynLib::open(
          {"/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4", "libblis.so.4"}, &why);
      ASSERT_NE(lib, nullptr) << why;
      long (*get)() = nullptr;  // dim_t bli_thread_get_num_threads(void)
      ASSERT_TRUE(lib->resolve(get, "bli_thread_get_num_threads", &why)) << why;
      EXPECT_EQ(get(), threads);
    }
#ifdef _OPENMP
    if (auto be = try_make("onednn", &why)) {
      run_and_verify(*be, op, threads, 1);
      EXPECT_EQ(omp_get_max_threads(), threads);
    }
#endif
  }
}

TEST(Backends, InvalidGroupOffsetsAreRefused) {
  const Op op = Op::parse("grouped_gemm:groups=3,m=4,n=8,k=8,dtype=fp32");
  for (const auto& name : comparison_backends()) {
    std::string why;
    auto backend = try_make(name, &why);
    if (!backend) continue;
    TensorSet set(op);
    fill_inputs(set, 3);
    auto kernel = backend->prepare(set, RunOptions{});
    set["offsets"].as<std::int32_t>()[1] = 1000;  // past the rows of a
    EXPECT_THROW(kernel->run(), std::exception) << name;
  }
}

TEST(Backends, VersionsNameTheLoadedLibrary) {
  for (const auto& name : comparison_backends()) {
    std::string why;
    auto backend = try_make(name, &why);
    if (!backend) continue;
    const std::string v = backend->version();
    EXPECT_FALSE(v.empty());
    EXPECT_NE(v.find_first_of("0123456789"), std::string::npos) << v;
  }
}

}  // namespace
}  // namespace attain
