// One registry of op cases, run on every backend of the registry that can run here (ggml's
// test-backend-ops): attain, attain:auto, openblas, blis, onednn, reference, and the CUDA
// backends where a device is present. Each case is verified against the fp64 reference with its
// outputs poisoned first and the tensor set's guard regions checked, then run a second time on
// the same kernel (no state left behind). A backend may decline an op only with its stated
// reason, and never an op the case says it must run.
//
// Shapes: M = 1, tails of every block (N and K not multiples of 8, 16, 64 or 128), K = 1,
// groups with no rows (skew), masked and contiguous grouped layouts, every dtype, swapped
// operands, stage depths, and the GPU kernels' tile and split-K edges. An op with zero rows in
// total cannot be written (Op::validate requires every dimension >= 1); the empty cases are
// groups with no rows here and MLA requests with no keys (test_mla, test_cuda).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
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

struct OpCase {
  std::string spec;
  std::vector<std::string> must;  // backends that must run it; the others may decline
  std::vector<int> threads = {1, 2};
  int stages = 2;  // attain's tile pipeline depth
  int seeds = 1;   // input seeds, each verified
};

std::vector<OpCase> build_registry() {
  std::vector<OpCase> r;
  auto add = [&](std::string spec, std::vector<std::string> must, std::vector<int> threads = {1, 2},
                 int stages = 2, int seeds = 1) {
    r.push_back({std::move(spec), std::move(must), std::move(threads), stages, seeds});
  };
  // fp32 on every CPU library: M = 1, K = 1, odd N and K, empty groups, both grouped layouts.
  const std::vector<std::string> cpu_libs = {"attain", "openblas", "blis", "onednn", "reference"};
  for (const char* s : {"gemm:m=1,n=1,k=1,dtype=fp32", "gemm:m=1,n=37,k=19,dtype=fp32",
                        "gemm:m=7,n=33,k=1,dtype=fp32", "gemm:m=13,n=64,k=65,dtype=fp32",
                        "gemm:m=3,n=5,k=257,dtype=fp32", "gemm:m=67,n=96,k=128,dtype=fp32",
                        "batched_gemm:batch=3,m=1,n=17,k=9,dtype=fp32",
                        "batched_gemm:batch=4,m=5,n=31,k=33,dtype=fp32",
                        "grouped_gemm:groups=4,m=5,n=17,k=33,dtype=fp32",
                        "grouped_gemm:groups=6,m=3,n=9,k=1,dtype=fp32,skew=2",
                        "grouped_gemm:groups=3,m=1,n=8,k=5,dtype=fp32",
                        "grouped_gemm:groups=4,m=5,n=17,k=33,dtype=fp32,layout=masked",
                        "grouped_gemm:groups=6,m=3,n=9,k=7,dtype=fp32,skew=2,layout=masked"})
    add(s, cpu_libs);
  // attain's engine: every kind x dtype x path (decode M = 3, direct M = 40 with N >= 256,
  // packed M = 90).
  for (const char* dt : {"fp32", "bf16", "fp16", "fp8"})
    for (int m : {3, 40, 90}) {
      const std::string d = std::string(",dtype=") + dt, ms = std::to_string(m);
      const std::string wide = m == 40 ? "260" : "";
      add("gemm:m=" + ms + ",n=" + (m == 40 ? "300" : "136") + ",k=300" + d, {"attain"});
      add("batched_gemm:batch=3,m=" + ms + ",n=" + (m == 40 ? wide : "40") + ",k=130" + d,
          {"attain"});
      add("grouped_gemm:groups=4,m=" + ms + ",n=" + (m == 40 ? wide : "72") + ",k=260" + d,
          {"attain"});
      add("grouped_gemm:groups=4,m=" + ms + ",n=72,k=260,layout=masked,skew=1" + d, {"attain"});
      add("grouped_gemm:groups=5,m=" + ms + ",n=40,k=200,skew=1.5" + d, {"attain"});
    }
  // Few columns against many rows: the direct path on swapped operands where the CPU's table
  // row says so, the packed path elsewhere.
  for (const char* dt : {"fp32", "bf16", "fp16", "fp8"}) {
    const std::string d = std::string(",dtype=") + dt;
    add("gemm:m=600,n=100,k=136" + d, {"attain"});
    add("batched_gemm:batch=2,m=530,n=64,k=70" + d, {"attain"});
    add("grouped_gemm:groups=3,m=520,n=36,k=130,layout=masked" + d, {"attain"});
  }
  for (int stages : {1, 2, 3, 8}) {
    add("gemm:m=1,n=256,k=1100,dtype=bf16", {"attain"}, {2}, stages);
    add("gemm:m=70,n=100,k=900,dtype=fp32", {"attain"}, {1}, stages);
  }
  for (const char* s : {"gemm:m=1,n=1,k=1,dtype=fp32", "gemm:m=1,n=33,k=1,dtype=bf16",
                        "gemm:m=17,n=5,k=3,dtype=fp8", "gemm:m=7,n=1,k=129,dtype=fp16"})
    add(s, {"attain"}, {2});
  // The GPU kernels' edges: k tails, n not a multiple of the tile, split-K, tensor-core tiles.
  for (const char* s : {
           "gemm:m=1,n=1,k=1,dtype=bf16",
           "gemm:m=1,n=37,k=19,dtype=bf16",
           "gemm:m=1,n=256,k=7168,dtype=bf16",  // router: split-K
           "gemm:m=3,n=129,k=1000,dtype=bf16",  // k not a multiple of 8
           "gemm:m=8,n=2112,k=7168,dtype=bf16",
           "gemm:m=17,n=100,k=4096,dtype=bf16",   // m tail of the 8-row chunks
           "gemm:m=128,n=96,k=257,dtype=bf16",    // k % 8 != 0: CUDA cores at m = 128
           "gemm:m=9,n=33,k=72,dtype=bf16",       // tensor cores: k tail of the 32-wide step
           "gemm:m=64,n=2112,k=7168,dtype=bf16",  // tensor cores, split-K
           "gemm:m=128,n=200,k=1024,dtype=bf16",  // tensor cores, n not a multiple of 64
           "gemm:m=1,n=256,k=7168,dtype=fp8",
           "gemm:m=5,n=300,k=1000,dtype=fp8",  // k not a multiple of 128 or 16
           "gemm:m=64,n=2112,k=7168,dtype=fp8",
           "batched_gemm:batch=3,m=2,n=65,k=136,dtype=bf16",
           "batched_gemm:batch=2,m=4,n=130,k=256,dtype=fp8",
           "grouped_gemm:groups=4,m=5,n=17,k=33,dtype=bf16,layout=masked",
           "grouped_gemm:groups=8,m=3,n=256,k=7168,dtype=bf16,skew=2,layout=masked",
           "grouped_gemm:groups=4,m=6,n=200,k=512,dtype=fp8,skew=1,layout=masked",
           "grouped_gemm:groups=4,m=20,n=72,k=256,dtype=bf16,skew=1,layout=masked",
       }) {
    const Op op = Op::parse(s);
    // cuBLASLt's fp8 path: plain gemm with k % 16 == 0 (the backend refuses the others).
    const bool lt = op.dtype != DType::fp8 || (op.kind == OpKind::gemm && op.k % 16 == 0);
    std::vector<std::string> must = {"attain", "attain-cuda"};
    if (lt) must.push_back("cublaslt");
    add(s, must, {2}, 2, 2);
  }
  for (const char* s : {"gemm:m=256,n=512,k=1024,dtype=bf16", "gemm:m=33,n=64,k=128,dtype=fp32",
                        "gemm:m=7,n=40,k=64,dtype=fp16", "gemm:m=128,n=256,k=512,dtype=fp8"})
    add(s, {"attain", "cublaslt"}, {2}, 2, 2);
  // MLA decode: one row, ragged tiles, split-KV with its combine, causal s_q > 1, fp8 rows.
  for (const char* s :
       {"mla_decode:b=1,s=1,h=1,dtype=bf16", "mla_decode:b=2,s=100,h=16,dtype=bf16",
        "mla_decode:b=3,s=300,h=128,dtype=bf16", "mla_decode:b=1,s=4096,h=128,dtype=bf16",
        "mla_decode:b=2,s=130,h=20,s_q=2,dtype=bf16", "mla_decode:b=2,s=200,h=16,dtype=fp8",
        "mla_decode:b=1,s=2000,h=128,dtype=fp8", "mla_decode:b=2,s=70,h=4,dtype=fp8",
        "mla_decode:b=2,s=65,h=8,dtype=fp32"})
    add(s, {"attain", "attain-cuda"}, {2}, 2, 2);
  return r;
}

const std::vector<OpCase>& registry() {
  static const std::vector<OpCase> r = build_registry();
  return r;
}

// Every backend of the registry, and attain's tuned-schedule variant.
std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto& b : backend_registry()) {
    names.push_back(b.name);
    if (b.name == "attain") names.push_back("attain:auto");
  }
  return names;
}

// The backend, or nullptr with the reason it cannot run here.
std::unique_ptr<Backend> try_make(const std::string& name, std::string* why) {
  try {
    return make_backend(name);
  } catch (const InputError& e) {
    *why = e.what();
    return nullptr;
  }
}

bool must_run(const OpCase& c, const std::string& backend) {
  const std::string base = backend.substr(0, backend.find(':'));
  return std::find(c.must.begin(), c.must.end(), base) != c.must.end();
}

// The fp64 loops of the reference backend check themselves only trivially (verify() computes
// the same reference): they run the cases up to this many FLOPs, which keeps them to seconds.
constexpr double kReferenceMaxFlops = 2e8;

// Verifies one case on one backend; returns how many (seed, threads) runs were verified.
int run_case(Backend& backend, const std::string& name, const OpCase& c) {
  const Op op = Op::parse(c.spec);
  const Support s = backend.supports(op);
  if (!s.ok) {
    EXPECT_FALSE(must_run(c, name)) << name << " declines an op it must run: " << s.reason;
    EXPECT_FALSE(s.reason.empty()) << name << " declines " << c.spec << " without a reason";
    return 0;
  }
  if (name == "reference" && op.flops() > kReferenceMaxFlops) return 0;
  int runs = 0;
  for (int seed = 1; seed <= c.seeds; ++seed)
    for (int threads : c.threads) {
      SCOPED_TRACE(name + " " + c.spec + " threads=" + std::to_string(threads) +
                   " stages=" + std::to_string(c.stages) + " seed=" + std::to_string(seed));
      TensorSet set(op);
      fill_inputs(set, static_cast<std::uint64_t>(1000 * seed + threads));
      poison_outputs(set);
      RunOptions opt;
      opt.threads = threads;
      opt.stages = c.stages;
      auto kernel = backend.prepare(set, opt);
      kernel->run();
      Verification v = verify(set);
      EXPECT_TRUE(v.ok) << v.detail << " (error " << v.error << ", tolerance " << v.tolerance
                        << ")";
      EXPECT_TRUE(set.guards_intact());
      if (kernel->device_timed()) {
        EXPECT_GT(kernel->last_device_seconds(), 0.0);
      }
      poison_outputs(set);
      kernel->run();
      v = verify(set);
      EXPECT_TRUE(v.ok) << "second run: " << v.detail;
      ++runs;
    }
  return runs;
}

class BackendOps : public ::testing::TestWithParam<std::string> {};

TEST_P(BackendOps, EveryCaseMatchesTheReference) {
  const std::string& name = GetParam();
  std::string why;
  auto backend = try_make(name, &why);
  if (!backend) GTEST_SKIP() << name << ": " << why;
  int verified = 0, declined = 0;
  for (const auto& c : registry()) {
    const int n = run_case(*backend, name, c);
    verified += n;
    declined += n == 0;
  }
  std::printf("%s: %d runs verified, %d cases declined (each with a reason) or out of scope\n",
              name.c_str(), verified, declined);
  EXPECT_GT(verified, 0);
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Registry, BackendOps, ::testing::ValuesIn(backend_names()), param_name);

TEST(BackendOpsRegistry, CoversEveryKindDtypeAndEdge) {
  std::set<std::string> kinds_dtypes;
  bool m1 = false, k1 = false, skew = false, masked = false, causal = false;
  for (const auto& c : registry()) {
    const Op op = Op::parse(c.spec);
    kinds_dtypes.insert(std::string(kind_name(op.kind)) + "/" + std::string(dtype_name(op.dtype)));
    m1 = m1 || (op.kind == OpKind::gemm && op.m == 1);
    k1 = k1 || op.k == 1;
    skew = skew || op.skew > 0;
    masked = masked || op.layout == GroupedLayout::masked;
    causal = causal || op.s_q > 1;
  }
  for (const char* kd :
       {"gemm/fp32", "gemm/bf16", "gemm/fp16", "gemm/fp8", "batched_gemm/fp32", "batched_gemm/bf16",
        "batched_gemm/fp16", "batched_gemm/fp8", "grouped_gemm/fp32", "grouped_gemm/bf16",
        "grouped_gemm/fp16", "grouped_gemm/fp8", "mla_decode/bf16", "mla_decode/fp8",
        "mla_decode/fp32"})
    EXPECT_TRUE(kinds_dtypes.count(kd)) << kd;
  EXPECT_TRUE(m1 && k1 && skew && masked && causal);
}

// ---- what one backend promises beyond the registry ---------------------------------------

TEST(Backends, UnsupportedDtypesAndKindsGiveAReason) {
  for (const char* name : {"openblas", "blis", "onednn"}) {
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
      if (std::string(name) != "onednn") {
        EXPECT_FALSE(s.ok) << name << " " << spec;
        EXPECT_NE(s.reason.find(std::string(dtype_name(op.dtype))), std::string::npos) << s.reason;
      } else if (!s.ok) {  // where oneDNN has the 16-bit matmul, the registry verifies it
        EXPECT_NE(s.reason.find("oneDNN"), std::string::npos) << s.reason;
        EXPECT_NE(s.reason.find(std::string(dtype_name(op.dtype))), std::string::npos) << s.reason;
      }
    }
  }
}

Verification run_and_verify(Backend& backend, const Op& op, int threads, std::uint64_t seed) {
  TensorSet set(op);
  fill_inputs(set, seed);
  poison_outputs(set);
  RunOptions opt;
  opt.threads = threads;
  backend.prepare(set, opt)->run();
  return verify(set);
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
  for (const char* name : {"attain", "openblas", "blis", "onednn"}) {
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
  for (const auto& name : backend_names()) {
    std::string why;
    auto backend = try_make(name, &why);
    if (!backend) continue;
    const std::string v = backend->version();
    EXPECT_FALSE(v.empty()) << name;
    EXPECT_NE(v.find_first_of("0123456789"), std::string::npos) << name << ": " << v;
  }
  auto attain = make_backend("attain");
  EXPECT_EQ(attain->name(), "attain");
  EXPECT_NE(attain->version().find("attain 0.1.0 ("), std::string::npos) << attain->version();
}

// Construction binds pointers only: inputs written after prepare() are the ones used.
TEST(Backends, PrepareDoesNotReadInputs) {
  for (const auto& name : backend_names()) {
    std::string why;
    auto be = try_make(name, &why);
    if (!be) continue;
    const Op op = Op::parse("gemm:m=4,n=20,k=30,dtype=fp32");
    if (!be->supports(op).ok) continue;
    TensorSet set(op);
    poison_outputs(set);
    auto k = be->prepare(set, RunOptions{});
    fill_inputs(set, 3);
    k->run();
    EXPECT_TRUE(verify(set).ok) << name;
  }
}

}  // namespace
}  // namespace attain
