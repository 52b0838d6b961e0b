// The CUDA backends (attain-cuda, cublaslt) and their host-side planning.
// Without a GPU: the plans are checked, and both backends must refuse to load with a clear
// "no CUDA device: ..." reason. With one: ragged and empty MLA sequences and the refusals here;
// every kernel against the fp64 reference on the shared case registry in test_backend_ops.cpp.
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

// The kernels against the reference on the registry's cases: tests/test_backend_ops.cpp.

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
