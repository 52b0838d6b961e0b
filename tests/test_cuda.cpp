// The CUDA backends (attain-cuda, cublaslt) and their host-side planning.
// Without a GPU: the plans are checked, and both backends must refuse to load with a clear
// "no CUDA device: ..." reason. With one: every kernel against the fp64 reference on random
// and edge shapes (m = 1, k tails, n not a multiple of the tile, ragged and empty MLA
// sequences, causal s_q > 1), outputs poisoned before each run, each op run twice.
#include <gtest/gtest.h>

#ifdef ATTAIN_HAVE_CUDA

#include <algorithm>
#include <cctype>
#include <numeric>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "attain/backend.hpp"
#include "attain/verify.hpp"
#include "kernels/cuda/plan.hpp"
#include "kernels/cuda/runtime.hpp"

namespace attain {
namespace {

#define SKIP_WITHOUT_GPU()                                                        \
  do {                                                                            \
    if (!cuda::device_info().present) GTEST_SKIP() << cuda::device_info().reason; \
  } while (0)

// ---- host-side planning (no GPU needed) -------------------------------------------------

TEST(CudaPlan, DecodeGemmCoversEveryTileAndK) {
  for (int eb : {1, 2})
    for (std::int64_t m : {1, 2, 3, 4, 5, 8, 17, 128})
      for (std::int64_t n : {1, 7, 129, 2112, 4096})
        for (std::int64_t k : {1, 100, 512, 7168, 16384})
          for (int sms : {1, 132}) {
            const auto p = cuda::plan_decode_gemm(m, n, k, 1, eb, sms);
            SCOPED_TRACE(testing::Message() << "m=" << m << " n=" << n << " k=" << k);
            EXPECT_EQ(p.group, 16 / eb);
            EXPECT_GE(p.mt * ((m + p.mt - 1) / p.mt), m);
            EXPECT_EQ(p.grid_z, (m + p.mt - 1) / p.mt);
            EXPECT_GE(p.grid_x * cuda::kDecodeWarps * p.nw, n);
            EXPECT_EQ(p.mma, eb == 2 && m > 8 && k % 8 == 0);
            EXPECT_EQ(p.warp_k, p.mma ? 32 : 32 * p.group);
            if (p.mma) {
              EXPECT_EQ(p.nw, 16);
              EXPECT_GE(p.mt, m);
              EXPECT_LT(p.mt, 2 * m);
            }
            EXPECT_EQ(p.k_chunk % p.warp_k, 0);
            // Slices cover K, none of them empty.
            EXPECT_GE(p.k_chunk * p.split_k, k);
            EXPECT_LT(p.k_chunk * (p.split_k - 1), k);
            EXPECT_EQ(p.grid_y, p.split_k);
            EXPECT_EQ(p.workspace_floats, p.split_k > 1 ? p.split_k * m * n : 0);
          }
}

TEST(CudaPlan, DecodeGemmSplitsLongKWhenTilesAreFew) {
  // The DeepSeek-V3 router: n = 256 experts, k = 7168. Without split-K, 16 CTAs on 132 SMs.
  const auto router = cuda::plan_decode_gemm(1, 256, 7168, 1, 2, 132);
  EXPECT_GT(router.split_k, 1);
  // Plenty of tiles already: no split.
  const auto wide = cuda::plan_decode_gemm(1, 129280, 7168, 1, 2, 132);
  EXPECT_EQ(wide.split_k, 1);
  // The partials' traffic stays under a quarter of W's: split <= k * 2 / (32 m) for bf16.
  const auto m128 = cuda::plan_decode_gemm(128, 2112, 7168, 1, 2, 132);
  EXPECT_LE(m128.split_k, 7168 * 2 / (32 * 128));
  // Short K is never split below two warp steps per slice.
  const auto short_k = cuda::plan_decode_gemm(1, 16, 512, 1, 2, 132);
  EXPECT_EQ(short_k.split_k, 1);
}

void expect_valid_mla_plan(const std::vector<std::int32_t>& sl, std::int64_t rows, int sms) {
  const auto b = static_cast<std::int64_t>(sl.size());
  const auto p = cuda::plan_mla(sl.data(), b, rows, sms);
  EXPECT_EQ(p.row_tiles, (rows + cuda::kMlaRowsPerCta - 1) / cuda::kMlaRowsPerCta);
  std::vector<std::int32_t> covered(sl.size(), 0), units(sl.size(), 0);
  std::set<std::int32_t> slots;
  for (const auto& u : p.units) {
    ASSERT_GE(u.request, 0);
    ASSERT_LT(u.request, b);
    const auto r = static_cast<std::size_t>(u.request);
    // Units of a request are contiguous and in order.
    EXPECT_EQ(u.block_begin, covered[r]);
    EXPECT_LE(u.block_begin, u.block_end);
    EXPECT_LE(u.block_end - u.block_begin, std::max<std::int64_t>(1, p.blocks_per_unit));
    covered[r] = u.block_end;
    ++units[r];
    if (p.num_splits[r] > 1) {
      EXPECT_EQ(u.partial, p.split_begin[r] + units[r] - 1);
      EXPECT_TRUE(slots.insert(u.partial).second) << "partial slot used twice";
    } else {
      EXPECT_EQ(u.partial, -1);
    }
  }
  for (std::size_t i = 0; i < sl.size(); ++i) {
    EXPECT_EQ(covered[i], (std::max(0, sl[i]) + 63) / 64) << "request " << i;
    EXPECT_EQ(units[i], p.num_splits[i]) << "request " << i;
    EXPECT_GE(p.num_splits[i], 1);
    if (p.num_splits[i] == 1) {
      EXPECT_EQ(p.split_begin[i], -1);
    }
  }
  EXPECT_EQ(static_cast<std::int32_t>(slots.size()), p.num_partials);
  if (!slots.empty()) {
    EXPECT_EQ(*slots.begin(), 0);
    EXPECT_EQ(*slots.rbegin(), p.num_partials - 1);
  }
}

TEST(CudaPlan, MlaUnitsCoverEveryBlockOnce) {
  expect_valid_mla_plan({4096}, 128, 132);                               // one long request: split
  expect_valid_mla_plan(std::vector<std::int32_t>(64, 4096), 128, 132);  // many: no split
  expect_valid_mla_plan({0, 1, 63, 64, 65, 0, 8191, 200}, 128, 132);     // ragged + empty
  expect_valid_mla_plan({0, 0, 0}, 16, 132);                             // all empty
  expect_valid_mla_plan({1000, 3}, 2 * 128, 8);                          // s_q = 2
  expect_valid_mla_plan({5000}, 1, 1);
}

TEST(CudaPlan, MlaSplitsOnlyWhenRequestsAreFew) {
  const std::vector<std::int32_t> one = {8192};
  const auto p1 = cuda::plan_mla(one.data(), 1, 128, 132);
  EXPECT_GT(p1.num_splits[0], 1);
  EXPECT_GE(static_cast<std::int64_t>(p1.units.size()) * p1.row_tiles, 132);
  const std::vector<std::int32_t> many(128, 4096);
  const auto p2 = cuda::plan_mla(many.data(), 128, 128, 132);
  EXPECT_EQ(p2.num_partials, 0);
  EXPECT_EQ(p2.units.size(), 128u);
  // An empty request still gets its unit (it writes o = 0, lse = -inf).
  const std::vector<std::int32_t> empty = {0};
  const auto p3 = cuda::plan_mla(empty.data(), 1, 128, 132);
  ASSERT_EQ(p3.units.size(), 1u);
  EXPECT_EQ(p3.units[0].block_begin, p3.units[0].block_end);
}

// ---- the no-device path ---------------------------------------------------------------

TEST(CudaBackends, AreRegistered) {
  std::set<std::string> names;
  for (const auto& b : backend_registry()) names.insert(b.name);
  EXPECT_TRUE(names.count("cublaslt"));
  EXPECT_TRUE(names.count("attain-cuda"));
}

TEST(CudaBackends, RefuseCleanlyWithoutADevice) {
  if (cuda::device_info().present) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_NE(cuda::device_info().reason.find("no CUDA device: "), std::string::npos)
      << cuda::device_info().reason;
  for (const char* name : {"cublaslt", "attain-cuda"}) {
    try {
      make_backend(name);
      ADD_FAILURE() << name << " loaded without a device";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA device: "), std::string::npos) << e.what();
    }
    for (const auto& b : backend_registry()) {
      if (b.name != name) continue;
      std::string why;
      EXPECT_EQ(b.make(&why), nullptr);
      EXPECT_EQ(why, cuda::device_info().reason);
    }
  }
}

// ---- kernels against the reference (GPU only) --------------------------------------------

struct Case {
  std::string backend, spec;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.backend << " " << c.spec;
}

std::vector<Case> gpu_cases() {
  const std::vector<std::string> gemms = {
      "gemm:m=1,n=1,k=1,dtype=bf16",
      "gemm:m=1,n=37,k=19,dtype=bf16",     // k tail, n not a multiple of the tile
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
      "grouped_gemm:groups=4,m=20,n=72,k=256,dtype=bf16,skew=1,layout=masked",  // tensor cores
  };
  const std::vector<std::string> lt_only = {
      "gemm:m=256,n=512,k=1024,dtype=bf16",
      "gemm:m=33,n=64,k=128,dtype=fp32",
      "gemm:m=7,n=40,k=64,dtype=fp16",
      "gemm:m=128,n=256,k=512,dtype=fp8",
  };
  const std::vector<std::string> mla = {
      "mla_decode:b=1,s=1,h=1,dtype=bf16",          "mla_decode:b=2,s=100,h=16,dtype=bf16",
      "mla_decode:b=3,s=300,h=128,dtype=bf16",
      "mla_decode:b=1,s=4096,h=128,dtype=bf16",      // split-KV + combine
      "mla_decode:b=2,s=130,h=20,s_q=2,dtype=bf16",  // causal, a partial row tile
      "mla_decode:b=2,s=200,h=16,dtype=fp8",        "mla_decode:b=1,s=2000,h=128,dtype=fp8",
  };
  std::vector<Case> cases;
  for (const auto& s : gemms) {
    cases.push_back({"attain-cuda", s});
    // cuBLASLt's fp8 path: plain gemm with k % 16 == 0 (the backend refuses the others).
    const Op op = Op::parse(s);
    if (op.dtype != DType::fp8 || (op.kind == OpKind::gemm && op.k % 16 == 0))
      cases.push_back({"cublaslt", s});
  }
  for (const auto& s : lt_only) cases.push_back({"cublaslt", s});
  for (const auto& s : mla) cases.push_back({"attain-cuda", s});
  return cases;
}

class CudaOps : public ::testing::TestWithParam<Case> {};

TEST_P(CudaOps, MatchesReference) {
  SKIP_WITHOUT_GPU();
  const Case& c = GetParam();
  auto backend = make_backend(c.backend);
  const Op op = Op::parse(c.spec);
  const Support s = backend->supports(op);
  ASSERT_TRUE(s.ok) << s.reason;
  for (std::uint64_t seed : {1u, 2u}) {
    TensorSet set(op);
    fill_inputs(set, seed);
    poison_outputs(set);
    auto kernel = backend->prepare(set, RunOptions{});
    ASSERT_TRUE(kernel->device_timed());
    kernel->run();
    auto v = verify(set);
    EXPECT_TRUE(v.ok) << c.backend << " " << c.spec << ": " << v.detail;
    EXPECT_GT(kernel->last_device_seconds(), 0.0);
    poison_outputs(set);
    kernel->run();  // a second run leaves no state behind
    v = verify(set);
    EXPECT_TRUE(v.ok) << c.backend << " " << c.spec << " (second run): " << v.detail;
  }
}

INSTANTIATE_TEST_SUITE_P(Gpu, CudaOps, ::testing::ValuesIn(gpu_cases()),
                         [](const testing::TestParamInfo<Case>& pi) {
                           std::string n = pi.param.backend + "_" + pi.param.spec;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n + "_" + std::to_string(pi.index);
                         });

// Ragged sequences, empty requests and a shuffled block table on the MLA kernel.
TEST(CudaMla, RaggedAndEmptySequences) {
  SKIP_WITHOUT_GPU();
  auto backend = make_backend("attain-cuda");
  for (const char* spec :
       {"mla_decode:b=6,s=520,h=32,dtype=bf16", "mla_decode:b=6,s=520,h=32,dtype=fp8",
        "mla_decode:b=4,s=300,h=16,s_q=3,dtype=bf16"}) {
    const Op op = Op::parse(spec);
    TensorSet set(op);
    fill_inputs(set, 11);
    auto* sl = set["seqlens"].as<std::int32_t>();
    const std::int32_t lens[6] = {0, 1, 64, 65, 520, 3};
    for (std::int64_t i = 0; i < op.b; ++i) sl[i] = lens[i];  // [0]: no keys at all
    fill_mla_cache(set, 12);  // live rows for the new lengths, NaN elsewhere
    poison_outputs(set);
    backend->prepare(set, RunOptions{})->run();
    const auto v = verify(set);
    EXPECT_TRUE(v.ok) << spec << ": " << v.detail;
  }
}

// An unsupported op is refused with its reason, never run.
TEST(CudaBackends, UnsupportedOpsSayWhy) {
  SKIP_WITHOUT_GPU();
  auto ac = make_backend("attain-cuda");
  EXPECT_FALSE(ac->supports(Op::parse("gemm:m=512,n=64,k=64,dtype=bf16")).ok);
  EXPECT_FALSE(ac->supports(Op::parse("gemm:m=1,n=64,k=64,dtype=fp32")).ok);
  auto lt = make_backend("cublaslt");
  EXPECT_FALSE(lt->supports(Op::parse("mla_decode:b=1,s=64,h=16,dtype=bf16")).ok);
  EXPECT_FALSE(lt->supports(Op::parse("gemm:m=5,n=300,k=1000,dtype=fp8")).ok);
}

}  // namespace
}  // namespace attain

#else  // !ATTAIN_HAVE_CUDA

TEST(Cuda, NotBuilt) {
  GTEST_SKIP() << "built without a CUDA toolkit (or with -DATTAIN_CUDA=OFF)";
}

#endif
