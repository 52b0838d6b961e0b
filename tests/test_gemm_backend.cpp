// The attain backend through the harness's tensors: every op kind x dtype x path (decode,
// direct and packed by M and N) x thread count x stage depth, verified with attain::verify against
// fp64, with outputs poisoned first and the tensor set's guard regions checked.
#include <gtest/gtest.h>

#include <string>

#include "attain/verify.hpp"
#include "backends/backends.hpp"

namespace attain {
namespace {

void check(const std::string& spec, int threads, int stages) {
  SCOPED_TRACE(spec + " threads=" + std::to_string(threads) + " stages=" + std::to_string(stages));
  std::string why;
  auto be = backends::make_attain(&why);
  ASSERT_TRUE(be) << why;
  const Op op = Op::parse(spec);
  ASSERT_TRUE(be->supports(op).ok);
  TensorSet set(op);
  fill_inputs(set, 11);
  poison_outputs(set);
  RunOptions opt;
  opt.threads = threads;
  opt.stages = stages;
  auto k = be->prepare(set, opt);
  k->run();
  const Verification v = verify(set);
  EXPECT_TRUE(v.ok) << v.detail << " error " << v.error;
  EXPECT_TRUE(set.guards_intact());
  // A second run on the same kernel (workspaces reused) gives the same answer.
  k->run();
  EXPECT_TRUE(verify(set).ok);
}

TEST(AttainBackend, EveryKindDtypePathThreads) {
  for (const char* dt : {"fp32", "bf16", "fp16", "fp8"})
    for (int threads : {1, 2})
      for (int m : {3, 40, 90}) {  // the decode path, direct (N >= 256: fp32, bf16), packed
        const std::string d = std::string(",dtype=") + dt;
        const std::string ms = std::to_string(m);
        const std::string wide = m == 40 ? "260" : "";  // N the direct path takes by default
        check("gemm:m=" + ms + ",n=" + (m == 40 ? "300" : "136") + ",k=300" + d, threads, 2);
        check("batched_gemm:batch=3,m=" + ms + ",n=" + (m == 40 ? wide : "40") + ",k=130" + d,
              threads, 2);
        check("grouped_gemm:groups=4,m=" + ms + ",n=" + (m == 40 ? wide : "72") + ",k=260" + d,
              threads, 2);
        check("grouped_gemm:groups=4,m=" + ms + ",n=72,k=260,layout=masked,skew=1" + d, threads, 2);
        check("grouped_gemm:groups=5,m=" + ms + ",n=40,k=200,skew=1.5" + d, threads, 2);
      }
}

// Few columns against many rows: the default runs the direct path on the swapped operands
// (Schedule::swap) where the CPU's table row says so, the packed path elsewhere.
TEST(AttainBackend, SwappedOperands) {
  for (const char* dt : {"fp32", "bf16", "fp16", "fp8"})
    for (int threads : {1, 2}) {
      const std::string d = std::string(",dtype=") + dt;
      check("gemm:m=600,n=100,k=136" + d, threads, 2);
      check("batched_gemm:batch=2,m=530,n=64,k=70" + d, threads, 2);
      check("grouped_gemm:groups=3,m=520,n=36,k=130,layout=masked" + d, threads, 2);
    }
}

TEST(AttainBackend, StageDepths) {
  for (int stages : {1, 2, 3, 8}) {
    check("gemm:m=1,n=256,k=1100,dtype=bf16", 2, stages);
    check("gemm:m=70,n=100,k=900,dtype=fp32", 1, stages);
  }
}

TEST(AttainBackend, EdgeShapes) {
  for (const char* s : {"gemm:m=1,n=1,k=1,dtype=fp32", "gemm:m=1,n=33,k=1,dtype=bf16",
                        "gemm:m=17,n=5,k=3,dtype=fp8", "gemm:m=7,n=1,k=129,dtype=fp16"})
    check(s, 2, 2);
}

TEST(AttainBackend, VersionAndSupport) {
  std::string why;
  auto be = backends::make_attain(&why);
  ASSERT_TRUE(be);
  EXPECT_EQ(be->name(), "attain");
  EXPECT_NE(be->version().find("attain 0.1.0 ("), std::string::npos) << be->version();
  // mla_decode runs the MLA kernel through the same backend (bf16, fp8 and fp32 caches).
  EXPECT_TRUE(be->supports(Op::parse("mla_decode:b=2,s=64,h=16,dtype=bf16")).ok);
  TensorSet set(Op::parse("mla_decode:b=2,s=70,h=4,dtype=fp8"));
  fill_inputs(set, 5);
  poison_outputs(set);
  be->prepare(set, RunOptions{})->run();
  const auto v = verify(set);
  EXPECT_TRUE(v.ok) << v.detail;
}

// Construction binds pointers only: inputs written after prepare() are the ones used.
TEST(AttainBackend, PrepareDoesNotReadInputs) {
  std::string why;
  auto be = backends::make_attain(&why);
  TensorSet set(Op::parse("gemm:m=4,n=20,k=30,dtype=bf16"));
  poison_outputs(set);
  auto k = be->prepare(set, RunOptions{});
  fill_inputs(set, 3);
  k->run();
  EXPECT_TRUE(verify(set).ok);
}

}  // namespace
}  // namespace attain
