// The GEMM engine's frame: the heuristic's stated reasons, each path's conditions at their
// boundaries, and the plan the tuner prices (gemm::plan) against the blocks the executor runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "attain/gemm.hpp"
#include "attain/gemm_plan.hpp"
#include "kernels/cpu/gemm/paths/path.hpp"

namespace attain::gemm {
namespace {

Params shape(std::int64_t m, std::int64_t n, std::int64_t k, DType t = DType::f32) {
  Params p;
  p.m = m, p.n = n, p.k = k;
  p.a_type = p.b_type = t;
  p.threads = 2;
  return p;
}

// The reason lines that decide the path ("path=...") and the swap ("swap: ..."): explain()'s
// lines but its last, the resolved schedule.
std::vector<std::string> decisions(const std::vector<std::string>& why, const char* prefix) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < why.size(); ++i)
    if (why[i].rfind(prefix, 0) == 0) out.push_back(why[i]);
  return out;
}

// For a table of shapes across the routes: the heuristic gives a reason for the path it takes
// (the last "path=" line names it, or the swap's line does) and for a swap exactly where it
// swaps, and its last line is the resolved schedule.
TEST(GemmHeuristic, StatesAReasonForEachChoice) {
  const DType types[] = {DType::f32, DType::bf16, DType::f16, DType::fp8};
  const std::int64_t ms[] = {1, 4, 8, 16, 32, 33, 64, 65, 128, 192, 512, 1024, 2048, 4096};
  const std::int64_t ns[] = {1, 8, 64, 128, 256, 1024, 4096};
  const std::int64_t ks[] = {128, 512, 1536, 4096};
  for (DType t : types)
    for (std::int64_t m : ms)
      for (std::int64_t n : ns)
        for (std::int64_t k : ks) {
          const Params p = shape(m, n, k, t);
          SCOPED_TRACE(std::string(dtype_name(t)) + " m=" + std::to_string(m) +
                       " n=" + std::to_string(n) + " k=" + std::to_string(k));
          const Schedule s = resolve(p);
          const std::vector<std::string> why = explain(p);
          ASSERT_GE(why.size(), 2u);
          EXPECT_EQ(why.back(), describe(s));
          const auto paths = decisions(why, "path="), swaps = decisions(why, "swap:");
          ASSERT_FALSE(paths.empty());
          EXPECT_EQ(swaps.size(), s.swap ? 1u : 0u);
          // A swap names the path it runs on the swapped operands.
          if (!swaps.empty()) {
            EXPECT_NE(swaps[0].find(s.path == Path::decode ? "the decode path" : "the direct"),
                      std::string::npos);
          } else {
            EXPECT_EQ(paths.back().substr(5, paths.back().find(':') - 5), path_name(s.path));
          }
        }
}

// Rules that hold on every CPU row: one row of A decodes; W stored (K, N) is packed; a path the
// caller set is not explained.
TEST(GemmHeuristic, ReasonsOnEveryRow) {
  Params p = shape(1, 4096, 4096);
  auto why = explain(p);
  ASSERT_EQ(decisions(why, "path=").size(), 1u);
  EXPECT_EQ(decisions(why, "path=")[0].rfind("path=decode: M 1 <= ", 0), 0u) << why[0];
  p.trans_b = Trans::N;
  why = explain(p);
  EXPECT_EQ(decisions(why, "path=").back().rfind("path=packed", 0), 0u);
  EXPECT_EQ(resolve(p).path, Path::packed);
  p.schedule.path = Path::packed;
  EXPECT_EQ(explain(p).size(), 1u);  // the resolved schedule only
}

// Each path's conditions at their boundaries, with the reason it gives for a refusal.
TEST(GemmPaths, AcceptOnTheirBoundaries) {
  const detail::KernelFamily& f = detail::family(detected_isa());
  const detail::PathImpl& decode = detail::path_impl(Path::decode);
  const detail::PathImpl& direct = detail::path_impl(Path::direct);
  const detail::PathImpl& packed = detail::path_impl(Path::packed);
  Params p = shape(detail::kDecodeMaxM, 256, 512);
  EXPECT_EQ(decode.accepts(p, f, false), "");
  p.m = detail::kDecodeMaxM + 1;
  EXPECT_NE(decode.accepts(p, f, false).find("m <= 64"), std::string::npos);
  p.m = 1;
  p.trans_b = Trans::N;
  EXPECT_NE(decode.accepts(p, f, false).find("trans_b = T"), std::string::npos);
  EXPECT_NE(direct.accepts(p, f, false).find("W stored (N, K)"), std::string::npos);
  EXPECT_EQ(packed.accepts(p, f, false), "");
  // Swapped operands: the caller's N is the decode path's M.
  p = shape(512, detail::kDecodeMaxM, 512);
  EXPECT_EQ(decode.accepts(p, f, true), "");
  p.n = detail::kDecodeMaxM + 1;
  EXPECT_NE(decode.accepts(p, f, true).find("n <= 64"), std::string::npos);
  EXPECT_EQ(direct.accepts(p, f, true), "");
  EXPECT_NE(packed.accepts(p, f, true), "");
  p.a_type = p.b_type = DType::fp8;  // fp8 block scales are not symmetric: no swap
  EXPECT_NE(direct.accepts(p, f, true).find("neither fp8"), std::string::npos);
  // A stored (K, M) on the direct path: fp32 only (its A^T panels transpose it while packing).
  p = shape(64, 256, 512);
  p.trans_a = Trans::T;
  EXPECT_EQ(direct.accepts(p, f, false), "");
  p.a_type = p.b_type = DType::f16;
  EXPECT_NE(direct.accepts(p, f, false), "");
  p.trans_a = Trans::N;
  EXPECT_EQ(direct.accepts(p, f, false), "");
  // schedule_fits says what the paths say.
  Schedule s;
  s.path = Path::decode;
  EXPECT_TRUE(schedule_fits(shape(64, 8, 8), s));
  EXPECT_FALSE(schedule_fits(shape(65, 8, 8), s));
}

using BlockKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int>;
std::mutex g_mu;
std::vector<BlockKey> g_seen;

void observe(const detail::Block& b) {
  const std::lock_guard<std::mutex> lock(g_mu);
  g_seen.emplace_back(b.m0, b.m1, b.n0, b.n1, b.slice);
}

// For random shapes, dtypes and schedules: the blocks gemm() runs are exactly the plan's.
TEST(GemmPlan, TheExecutorRunsThePlan) {
  std::mt19937 rng(7);
  auto pick = [&](std::initializer_list<std::int64_t> v) {
    return *(v.begin() + std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng));
  };
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const DType types[] = {DType::f32, DType::bf16, DType::f16};
    const DType t = types[pick({0, 1, 2})];
    Params p = shape(pick({1, 3, 8, 17, 40, 64, 100, 300}), pick({1, 5, 33, 64, 200, 700}),
                     pick({1, 16, 130, 512, 1100}), t);
    p.b_type = pick({0, 1}) == 0 ? t : DType::f32;
    p.threads = static_cast<int>(pick({1, 2}));
    Schedule s;
    const Path paths[] = {Path::automatic, Path::decode, Path::direct, Path::packed};
    s.path = paths[pick({0, 1, 2, 3})];
    s.swap = pick({0, 0, 1}) == 1;
    s.split_k = s.path == Path::direct || s.swap ? 0 : static_cast<int>(pick({0, 0, 2}));
    if (s.split_k == 2) s.threads_m = 1, s.threads_n = 1, s.threads = 2, p.threads = 2;
    s.kc = static_cast<int>(pick({0, 0, 64, 256}));
    if (!schedule_fits(p, s)) continue;
    p.schedule = s;
    std::vector<float> a(static_cast<std::size_t>(p.m * p.k) * 4 + 64, 0.5f);
    std::vector<float> b(static_cast<std::size_t>(p.n * p.k) * 4 + 64, 0.25f);
    std::vector<float> c(static_cast<std::size_t>(p.m * p.n) * 4 + 64, 0.0f);
    p.a = a.data(), p.b = b.data(), p.c = c.data();
    Plan pl;
    try {
      pl = plan(p, s);
      g_seen.clear();
      detail::set_block_observer(observe);
      gemm(p);
      detail::set_block_observer(nullptr);
    } catch (const std::invalid_argument& e) {
      detail::set_block_observer(nullptr);
      continue;  // a schedule the engine refuses for these operands (both refuse alike)
    }
    std::vector<BlockKey> want;
    for (const PlanBlock& blk : pl.blocks)
      want.emplace_back(blk.m0, blk.m1, blk.n0, blk.n1, blk.slice);
    std::sort(want.begin(), want.end());
    std::sort(g_seen.begin(), g_seen.end());
    EXPECT_EQ(g_seen, want) << "m=" << p.m << " n=" << p.n << " k=" << p.k << " " << describe(pl.s);
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace attain::gemm
