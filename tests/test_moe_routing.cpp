// MoE routing, layouts, token payloads, the reference combine and the expert MLP (single process).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <set>

#include "attain/catalog.hpp"
#include "attain/cpu_features.hpp"
#include "attain/dtype.hpp"
#include "attain/moe.hpp"
#include "moe/reduce_kernels.hpp"

using namespace attain;
using namespace attain::moe;

namespace {

std::size_t ix(std::int64_t i) {
  return static_cast<std::size_t>(i);
}

GateConfig softmax_gate(int experts, int topk) {
  GateConfig g;
  g.experts = experts;
  g.topk = topk;
  return g;
}

TEST(MoeRouting, SoftmaxTopkPicksLargestAndNormalizes) {
  const std::vector<float> s = {0.1f, 2.0f, -1.0f, 1.0f,   // token 0: experts 1, 3
                                3.0f, 3.0f, 0.0f,  5.0f};  // token 1: 3, then 0 (tie -> lower id)
  const Routing r = route(softmax_gate(4, 2), s);
  ASSERT_EQ(r.tokens, 2);
  EXPECT_EQ(r.id(0, 0), 1);
  EXPECT_EQ(r.id(0, 1), 3);
  EXPECT_EQ(r.id(1, 0), 3);
  EXPECT_EQ(r.id(1, 1), 0);
  // Renormalized softmax over the chosen two: e^2 / (e^2 + e^1).
  EXPECT_NEAR(r.weight(0, 0), std::exp(2.0) / (std::exp(2.0) + std::exp(1.0)), 1e-6);
  EXPECT_NEAR(r.weight(0, 0) + r.weight(0, 1), 1.0, 1e-6);
  GateConfig raw = softmax_gate(4, 2);
  raw.normalize = false;
  const Routing u = route(raw, s);
  double z = 0;
  for (int e = 0; e < 4; ++e) z += std::exp(static_cast<double>(s[ix(e)]));
  EXPECT_NEAR(u.weight(0, 0), std::exp(2.0) / z, 1e-6);
}

TEST(MoeRouting, DeepSeekGroupLimitedSigmoid) {
  // 8 experts in 4 groups of 2, keep 2 groups, top-2. Expert 0 alone is the best single score,
  // but its group (0,1) has the weakest top-2 sum, so it must not be chosen.
  GateConfig g;
  g.experts = 8;
  g.topk = 2;
  g.n_group = 4;
  g.topk_group = 2;
  g.sigmoid = true;
  g.routed_scaling_factor = 2.5;
  const std::vector<float> s = {4.0f, -6.0f, 1.0f, 1.0f, 2.0f, 1.5f, -3.0f, -3.0f};
  const Routing r = route(g, s);
  // Top-2 sums: group (0,1) 0.98, (2,3) 1.46, (4,5) 1.70, (6,7) 0.09: keep (2,3) and (4,5).
  EXPECT_EQ(r.id(0, 0), 4);
  EXPECT_EQ(r.id(0, 1), 5);
  EXPECT_NEAR(r.weight(0, 0) + r.weight(0, 1), 2.5, 1e-5);
  // A bias moves the selection but not the weights: expert 3 (+0.3) overtakes expert 5.
  std::vector<float> bias(8, 0.0f);
  bias[3] = 0.3f;
  const Routing b = route(g, s, bias);
  EXPECT_EQ(b.id(0, 0), 3);
  EXPECT_EQ(b.id(0, 1), 4);
  const double s3 = 1 / (1 + std::exp(-1.0)), s4 = 1 / (1 + std::exp(-2.0));
  EXPECT_NEAR(b.weight(0, 0), 2.5 * s3 / (s3 + s4), 1e-5);
  // Without groups expert 0 would win.
  GateConfig flat = g;
  flat.n_group = flat.topk_group = 1;
  EXPECT_EQ(route(flat, s).id(0, 0), 0);
}

TEST(MoeRouting, DeepSeekV3ConfigKeepsAtMostFourGroups) {
  const GateConfig g = gate_from_model(load_bundled_model("deepseek-v3"));
  EXPECT_TRUE(g.sigmoid);
  EXPECT_EQ(g.experts, 256);
  EXPECT_EQ(g.topk, 8);
  EXPECT_EQ(g.n_group, 8);
  EXPECT_EQ(g.topk_group, 4);
  const Routing r = route(g, random_scores(64, g.experts, 3));
  validate_routing(r, g.experts);
  for (std::int64_t t = 0; t < r.tokens; ++t) {
    std::set<int> groups;
    double w = 0;
    for (int k = 0; k < r.topk; ++k) {
      groups.insert(r.id(t, k) / 32);
      w += r.weight(t, k);
    }
    EXPECT_LE(groups.size(), 4u);
    EXPECT_NEAR(w, 2.5, 1e-4);
  }
}

TEST(MoeRouting, RejectsBadInput) {
  std::vector<float> s = {0.0f, 1.0f, NAN, 2.0f};
  EXPECT_THROW(route(softmax_gate(4, 2), s), InputError);
  EXPECT_THROW(route(softmax_gate(4, 5), std::vector<float>(4, 0.0f)), InputError);
  GateConfig g = softmax_gate(8, 2);
  g.n_group = 3;  // does not divide 8
  EXPECT_THROW(g.validate(), InputError);
  Routing r = route(softmax_gate(4, 2), std::vector<float>{0, 1, 2, 3});
  r.ids[0] = 4;
  try {
    validate_routing(r, 4);
    FAIL() << "id 4 of 4 experts accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expert id 4"), std::string::npos) << e.what();
  }
  r.ids[0] = r.ids[1];
  EXPECT_THROW(validate_routing(r, 4), InputError);  // same expert twice
  r.ids[0] = -1;
  validate_routing(r, 4);  // -1: no expert
  r.weights[1] = NAN;
  EXPECT_THROW(validate_routing(r, 4), InputError);
}

TEST(MoeLayout, CountsTokensOncePerRank) {
  Routing r;
  r.tokens = 3;
  r.topk = 2;
  r.ids = {0,  1,    // token 0: both on rank 0
           1,  3,    // token 1: ranks 0 and 1
           -1, -1};  // token 2: nowhere
  r.weights = {0.5f, 0.5f, 0.5f, 0.5f, 0, 0};
  const Layout l = make_layout(r, 4, 2);
  EXPECT_EQ(l.experts_per_rank, 2);
  EXPECT_EQ(l.tokens_per_rank, (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(l.tokens_per_expert, (std::vector<std::int64_t>{1, 2, 0, 1}));
  EXPECT_TRUE(l.goes_to(0, 0));
  EXPECT_FALSE(l.goes_to(0, 1));
  EXPECT_TRUE(l.goes_to(1, 1));
  EXPECT_FALSE(l.goes_to(2, 0) || l.goes_to(2, 1));
  EXPECT_THROW(make_layout(r, 4, 3), InputError);  // 4 experts over 3 ranks
  EXPECT_EQ(align_up(5, 4), 8);
  EXPECT_EQ(align_up(8, 4), 8);
}

TEST(MoeTokens, Fp8BlocksOf128WithTail) {
  const std::int64_t rows = 3, hidden = 160;  // blocks of 128 and 32
  const auto x = sentinel_rows(rows, hidden, 2, 9);
  EXPECT_EQ(bf16_to_f32(x[0]), 3.0f);               // rank + 1
  EXPECT_EQ(bf16_to_f32(x[ix(hidden + 1)]), 1.0f);  // token id
  const Tokens b = make_tokens(x, rows, hidden, Payload::bf16);
  const Tokens q = make_tokens(x, rows, hidden, Payload::fp8);
  EXPECT_EQ(q.scale_blocks(), 2);
  EXPECT_EQ(q.scales.size(), 6u);
  EXPECT_EQ(q.data.size(), ix(rows * hidden));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < hidden; ++j) {
      EXPECT_EQ(b.value(r, j), bf16_to_f32(x[ix(r * hidden + j)]));
      EXPECT_NEAR(q.value(r, j), b.value(r, j), std::fabs(b.value(r, j)) / 16 + 1e-3)
          << r << "," << j;
    }
  // Each block's amax maps to 448.
  EXPECT_NE(q.scales[0], q.scales[1]);
}

TEST(MoeReference, ScaleExpertsCombine) {
  // Weights summing to 1 with every scale 1: the combine returns the token itself.
  const auto x = sentinel_rows(4, 8, 0, 1);
  const Tokens t = make_tokens(x, 4, 8, Payload::bf16);
  const Routing r = route(softmax_gate(4, 2), random_scores(4, 4, 5));
  const auto out = reference_combine(r, t, std::vector<float>(4, 1.0f));
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], bf16_to_f32(x[i]), 1e-6);
  // Scale experts on a row buffer: y = scale[e] * x, rows of expert 1 (local index 0 of first 1).
  RowBuffer buf(GroupedLayout::contiguous, Payload::bf16, 2, 8, 4);
  ExpertRows rows = buf.rows();
  rows.offsets[0] = 0, rows.offsets[1] = 1, rows.offsets[2] = 2;
  std::memcpy(rows.data, x.data(), 2 * 8 * 2);
  apply_scale_experts(rows, 1, std::vector<float>{9, 2, 4, 9}, buf.output());
  EXPECT_EQ(bf16_to_f32(buf.output()[3]), 2 * bf16_to_f32(x[3]));
  EXPECT_EQ(bf16_to_f32(buf.output()[8 + 3]), 4 * bf16_to_f32(x[8 + 3]));
}

TEST(MoeExpertMlp, GroupsUseTheirOwnWeights) {
  for (auto layout : {GroupedLayout::contiguous, GroupedLayout::masked}) {
    ExpertConfig c;
    c.local_experts = 2;
    c.hidden = 32;
    c.inter = 16;
    c.layout = layout;
    c.capacity = layout == GroupedLayout::contiguous ? 8 : 4;
    c.backend = "reference";
    ExpertMLP mlp(c);
    ExpertRows in = mlp.input();
    const auto x = sentinel_rows(1, 32, 0, 3);
    // The same token twice in expert 0 and once in expert 1.
    const std::int64_t rows[3] = {0, 1, layout == GroupedLayout::contiguous ? 4 : 4};
    for (std::int64_t r : rows) std::memcpy(in.data + r * 64, x.data(), 64);
    if (layout == GroupedLayout::contiguous) {
      in.offsets[0] = 0, in.offsets[1] = 4, in.offsets[2] = 5;  // expert 0 padded to 4 rows
      for (int r = 2; r < 4; ++r) std::memcpy(in.data + r * 64, x.data(), 64);
    } else {
      in.counts[0] = 2, in.counts[1] = 1;
    }
    mlp.run();
    const std::uint16_t* y = mlp.output();
    double diff = 0;
    for (int j = 0; j < 32; ++j) {
      EXPECT_TRUE(std::isfinite(bf16_to_f32(y[j])));
      EXPECT_EQ(y[j], y[32 + j]);  // same expert, same token: same output
      diff += std::fabs(bf16_to_f32(y[j]) - bf16_to_f32(y[4 * 32 + j]));
    }
    EXPECT_GT(diff, 0) << "experts 0 and 1 gave the same output";
    EXPECT_DOUBLE_EQ(mlp.flops(),
                     2.0 * (layout == GroupedLayout::contiguous ? 5 : 3) * 32 * 3 * 16);
  }
}

TEST(MoeExpertMlp, RejectsWhatTheBackendCannotRun) {
  ExpertConfig c;
  c.local_experts = 1;
  c.hidden = 32;
  c.inter = 16;
  c.capacity = 4;
  c.backend = "no-such-backend";
  EXPECT_THROW(ExpertMLP{c}, InputError);
}

}  // namespace

// The combine's weighted row sums, every ISA variant this CPU runs: against an fp64 reference
// (one bf16 rounding of the fp32 sum apart), tails that are not a multiple of the 64-wide
// chunk, no rows (zeros), up to 9 rows, and a NaN or Inf in one row reaching the output.
TEST(MoeRowOps, WeightedSumEveryIsaMatchesFp64) {
  using attain::IsaLevel;
  using attain::moe::detail::RowOps;
  // Every variant the CPU runs; the default is the best at the level of cpu_features()
  // (ATTAIN_ISA's cap included).
  const IsaLevel cpu = attain::isa_level(attain::detected_cpu_features());
  const IsaLevel level = attain::isa_level(attain::cpu_features());
  std::vector<const RowOps*> isas = {&attain::moe::detail::row_ops_generic()};
  if (cpu >= IsaLevel::avx2) isas.push_back(&attain::moe::detail::row_ops_avx2());
  if (cpu >= IsaLevel::avx512) isas.push_back(&attain::moe::detail::row_ops_avx512());
  EXPECT_STREQ(attain::moe::detail::row_ops().isa, level >= IsaLevel::avx512 ? "avx512"
                                                   : level >= IsaLevel::avx2 ? "avx2"
                                                                             : "generic");
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (const RowOps* ops : isas)
    for (const std::int64_t n : {0, 1, 63, 64, 65, 200, 7168})
      for (const int nrows : {0, 1, 4, 9}) {
        std::vector<std::vector<std::uint16_t>> rows(nrows, std::vector<std::uint16_t>(n));
        std::vector<const std::uint16_t*> ptr;
        std::vector<float> w;
        for (auto& r : rows) {
          for (auto& v : r) v = attain::f32_to_bf16(u(g));
          ptr.push_back(r.data());
          w.push_back(u(g));
        }
        std::vector<std::uint16_t> out(n + 8, 0xabcd);  // 8 guard values after the row
        ops->weighted_sum(out.data(), ptr.data(), w.data(), nrows, n);
        for (std::int64_t j = 0; j < n; ++j) {
          double ref = 0, mag = 0;
          for (int r = 0; r < nrows; ++r) {
            ref += double{w[r]} * attain::bf16_to_f32(rows[r][j]);
            mag += std::abs(double{w[r]} * attain::bf16_to_f32(rows[r][j]));
          }
          const double got = attain::bf16_to_f32(out[j]);
          ASSERT_LE(std::abs(got - ref), std::abs(ref) / 256 + 1e-6 * mag + 1e-30)
              << ops->isa << " n=" << n << " rows=" << nrows << " j=" << j;
        }
        for (int j = 0; j < 8; ++j) ASSERT_EQ(out[n + j], 0xabcd) << ops->isa << " wrote past n";
        if (nrows == 0 || n < 65) continue;
        rows[nrows - 1][1] = attain::f32_to_bf16(std::numeric_limits<float>::quiet_NaN());
        rows[0][n - 1] = attain::f32_to_bf16(std::numeric_limits<float>::infinity());
        w[0] = 1.0f;
        ops->weighted_sum(out.data(), ptr.data(), w.data(), nrows, n);
        EXPECT_TRUE(std::isnan(attain::bf16_to_f32(out[1]))) << ops->isa;
        const float last = attain::bf16_to_f32(out[n - 1]);
        EXPECT_TRUE(std::isinf(last) || std::isnan(last)) << ops->isa;
      }
}
