// MLA decode: the attain kernel, its split-KV schedule and both baselines against the fp64
// reference, with ragged batches, shuffled tables and NaN-poisoned unused cache slots.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attain/mla.hpp"
#include "attain/verify.hpp"
#include "busy.hpp"
#include "kernels/cpu/attention/mla_ukernels.hpp"

namespace attain {
namespace {

// A tensor set whose requests have the given seqlens (<= op.s), block tables shuffled over
// the whole pool, unused table entries and cache slots poisoned.
void fill_ragged(TensorSet& set, const std::vector<std::int32_t>& seqlens, std::uint64_t seed) {
  fill_inputs(set, seed);  // q, a shuffled table, seqlens = s
  auto* sl = set["seqlens"].as<std::int32_t>();
  std::copy(seqlens.begin(), seqlens.end(), sl);
  // Entries past each request's blocks point nowhere valid: must never be read.
  auto* bt = set["block_table"].as<std::int32_t>();
  const std::int64_t mb = set["block_table"].desc.shape[1];
  for (std::size_t i = 0; i < seqlens.size(); ++i)
    for (std::int64_t j = (seqlens[i] + 63) / 64; j < mb; ++j)
      bt[static_cast<std::int64_t>(i) * mb + j] = -7;
  fill_mla_cache(set, seed + 1);
}

std::vector<std::int32_t> random_seqlens(std::int64_t b, std::int64_t s, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<std::int32_t> v(static_cast<std::size_t>(b));
  for (auto& x : v) x = static_cast<std::int32_t>(g() % static_cast<std::uint64_t>(s + 1));
  if (b > 0) v[0] = 0;
  if (b > 1) v[1] = 1;
  if (b > 2) v[2] = static_cast<std::int32_t>(s);
  return v;
}

void expect_verified(const TensorSet& set, const std::string& what) {
  const Verification v = verify(set, 1e18);  // always the full fp64 reference
  EXPECT_TRUE(v.ok) << what << ": " << v.detail << " (error " << v.error << ")";
}

struct Case {
  std::int64_t b, s, h, s_q;
  DType dt;
};

std::string name(const Case& c, int threads) {
  Op op;
  op.kind = OpKind::mla_decode, op.b = c.b, op.s = c.s, op.h = c.h, op.s_q = c.s_q, op.dtype = c.dt;
  return op.spec() + " threads=" + std::to_string(threads);
}

Op make_op(const Case& c) {
  Op op;
  op.kind = OpKind::mla_decode, op.dtype = c.dt;
  op.b = c.b, op.s = c.s, op.h = c.h, op.s_q = c.s_q;
  return op;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> cs = {
      {5, 200, 3, 1, DType::bf16}, {4, 130, 16, 1, DType::fp8}, {4, 150, 5, 1, DType::f32},
      {3, 100, 4, 3, DType::bf16}, {3, 90, 2, 4, DType::fp8},   {3, 70, 7, 2, DType::f32},
      {6, 64, 13, 1, DType::bf16},
  };
  return cs;
}

TEST(MlaDecode, RaggedAgainstReference) {
  for (const Case& c : cases())
    for (int threads : {1, 2, 5}) {  // 5: more cuts than requests have blocks to spare
      TensorSet set(make_op(c));
      fill_ragged(set, random_seqlens(c.b, c.s, 11 + c.b), 5);
      poison_outputs(set);
      make_mla_kernel(set, RunOptions{threads})->run();
      expect_verified(set, name(c, threads));
    }
}

TEST(MlaDecode, FullSequencesManyThreadsSplitRequests) {
  // One long request and several short: with 3 threads the long one is split.
  Case c{4, 700, 6, 2, DType::bf16};
  TensorSet set(make_op(c));
  fill_ragged(set, {700, 3, 0, 65}, 9);
  poison_outputs(set);
  make_mla_kernel(set, RunOptions{3})->run();
  expect_verified(set, name(c, 3));
}

// Enough requests that each is a list of its own, claimed by whichever thread is free: at 1-3
// threads, and at 2 beside a busy thread.
TEST(MlaDecode, RequestsClaimedByAnyThread) {
  const Case c{20, 700, 4, 1, DType::bf16};
  const std::vector<std::int32_t> sl = {700, 650, 1,   699, 500, 0,   64,  65,  700, 300,
                                        420, 640, 700, 512, 513, 600, 640, 690, 333, 700};
  for (int threads : {1, 2, 3, -2}) {
    const std::unique_ptr<test::BusySibling> busy =
        threads < 0 ? std::make_unique<test::BusySibling>() : nullptr;
    const int t = std::abs(threads);
    if (t > 1) {
      ASSERT_EQ(mla_schedule(sl.data(), c.b, t).per_slot.size(), sl.size());
    }
    TensorSet set(make_op(c));
    fill_ragged(set, sl, 3);
    poison_outputs(set);
    make_mla_kernel(set, RunOptions{t})->run();
    expect_verified(set, name(c, t) + (busy ? " busy" : ""));
  }
}

TEST(MlaDecode, SimdMicroKernelsMatchScalar) {
  // Same inputs through the SIMD and scalar micro-kernels, edge tiles included.
  const mla::Ukernels& sc = mla::scalar_ukernels();
  for (const mla::Ukernels* a : {mla::avx2_ukernels(), mla::avx512_ukernels()}) {
    if (a == nullptr) continue;
    std::mt19937 g(3);
    std::uniform_real_distribution<float> u(-1, 1);
    const int nt = 37, mpad = 48;
    std::vector<float> kf(64 * 576), qt(576 * mpad), st1(64 * mpad), st2(64 * mpad);
    for (auto& x : kf) x = u(g);
    for (auto& x : qt) x = u(g) * 0.05f;
    sc.qk(kf.data(), nt, qt.data(), mpad, st1.data(), kf.data(), 100);
    a->qk(kf.data(), nt, qt.data(), mpad, st2.data(), kf.data(), 100);
    for (int i = 0; i < nt * mpad; ++i) EXPECT_NEAR(st1[i], st2[i], 1e-4f) << i;
    std::vector<std::int32_t> vis(mpad);
    for (int m = 0; m < mpad; ++m) vis[m] = m % 5 == 0 ? 0 : std::min(nt, 10 + m);
    std::vector<float> mx1(mpad, -INFINITY), mx2 = mx1, l1(mpad, 0.0f), l2 = l1, al1(mpad),
                                             al2(mpad);
    sc.softmax(st1.data(), nt, mpad, vis.data(), mx1.data(), l1.data(), al1.data());
    a->softmax(st2.data(), nt, mpad, vis.data(), mx2.data(), l2.data(), al2.data());
    for (int m = 0; m < mpad; ++m) {
      if (vis[m] == 0)
        EXPECT_TRUE(std::isinf(mx1[m]) && std::isinf(mx2[m]));
      else
        EXPECT_NEAR(mx1[m], mx2[m], 1e-5f);
      EXPECT_NEAR(l1[m], l2[m], 1e-5f * std::max(1.0f, l1[m]));
    }
    const int rows = 19;
    std::vector<float> o1(rows * 512), o2;
    for (auto& x : o1) x = u(g);
    o2 = o1;
    std::vector<float> alpha(mpad, 0.5f);
    sc.pv(st1.data(), nt, mpad, kf.data(), rows, alpha.data(), o1.data());
    a->pv(st2.data(), nt, mpad, kf.data(), rows, alpha.data(), o2.data());
    for (int i = 0; i < rows * 512; ++i) EXPECT_NEAR(o1[i], o2[i], 1e-4f) << i;
  }
}

// The bf16 products (AVX512-BF16) against an fp64 computation on the same bf16 values: scores
// exactly as stored (q unscaled, scale on the scores), the probabilities rounded to bf16 once,
// an odd token count (the pad token of the last pair), a half query panel and edge row tiles.
TEST(MlaDecode, Bf16ProductsMatchFp64) {
  const mla::Ukernels* a = mla::avx512bf16_ukernels();
  if (a == nullptr) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  ASSERT_NE(a->qk16, nullptr);
  std::mt19937 g(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int nt : {64, 37, 1}) {
    const int mpad = 48, rows = 19;
    const float scale = 0.0417f;
    std::vector<std::uint16_t> kb(64 * 576), q(mpad * 576);
    for (auto& x : kb) x = f32_to_bf16(u(g));
    for (auto& x : q) x = f32_to_bf16(u(g));
    std::vector<std::uint32_t> q2(288 * mpad);
    for (int m = 0; m < mpad; ++m)
      for (int k2 = 0; k2 < 288; ++k2) std::memcpy(&q2[k2 * mpad + m], &q[m * 576 + 2 * k2], 4);
    std::vector<float> st(64 * mpad, NAN);
    a->qk16(kb.data(), nt, q2.data(), mpad, scale, st.data(), kb.data(), 10);
    for (int t = 0; t < nt; ++t)
      for (int m = 0; m < mpad; ++m) {
        double ref = 0;
        for (int k = 0; k < 576; ++k)
          ref += static_cast<double>(bf16_to_f32(kb[t * 576 + k])) * bf16_to_f32(q[m * 576 + k]);
        EXPECT_NEAR(st[t * mpad + m], scale * ref, 2e-5) << "nt=" << nt << " t=" << t << " m=" << m;
      }
    // Probabilities in [0, 1] (what softmax leaves), then the pairs and the product with V.
    for (int i = 0; i < nt * mpad; ++i) st[i] = 0.5f + 0.5f * u(g);
    std::vector<std::uint32_t> p2(32 * mpad, 0xdeadbeef), v2(32 * 512, 0xdeadbeef);
    a->pack16(st.data(), nt, mpad, kb.data(), p2.data(), v2.data());
    std::vector<float> o(rows * 512), alpha(mpad);
    for (auto& x : o) x = u(g);
    for (auto& x : alpha) x = 0.5f + 0.25f * u(g);
    const std::vector<float> o0 = o;
    a->pv16(p2.data(), nt + nt % 2, mpad, v2.data(), rows, alpha.data(), o.data());
    for (int m = 0; m < rows; ++m)
      for (int d = 0; d < 512; ++d) {
        double ref = static_cast<double>(o0[m * 512 + d]) * alpha[m];
        for (int t = 0; t < nt; ++t)
          ref += static_cast<double>(bf16_to_f32(f32_to_bf16(st[t * mpad + m]))) *
                 bf16_to_f32(kb[t * 576 + d]);
        EXPECT_NEAR(o[m * 512 + d], ref, 2e-5) << "nt=" << nt << " m=" << m << " d=" << d;
      }
  }
}

// fp8 cache rows to bf16 for the bf16 products: every e4m3 code times each block's scale (small,
// large enough for the two-multiply path, negative, tiny), rounded once to bf16 as dtype.hpp
// does, except that results below fp32's normal range flush to zero (vcvtneps2bf16 reads
// denormals as zero, as vdpbf16ps does); NaN codes give NaN; the rope values are copied.
TEST(MlaDecode, Fp8RowsToBf16MatchDtypeHpp) {
  const mla::Ukernels* a = mla::avx512bf16_ukernels();
  if (a == nullptr) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  const float scales[2][4] = {{0.375f, 300.0f, -1e-3f, 3.0e35f}, {1e-37f, -2.5f, 1.0f, 0x1p7f}};
  std::vector<std::byte> rows(2 * 656);
  for (int r = 0; r < 2; ++r) {
    std::byte* row = rows.data() + r * 656;
    for (int i = 0; i < 512; ++i) row[i] = static_cast<std::byte>((i + 37 * r) % 256);
    std::memcpy(row + 512, scales[r], sizeof scales[r]);
    for (int i = 0; i < 64; ++i) {
      const std::uint16_t h = f32_to_bf16(0.25f * static_cast<float>(i - 31 + r));
      std::memcpy(row + 528 + 2 * i, &h, 2);
    }
  }
  std::vector<std::uint16_t> out(2 * 576);
  a->fp8_to_bf16(rows.data(), 2, out.data());
  for (int r = 0; r < 2; ++r) {
    const std::byte* row = rows.data() + r * 656;
    for (int i = 0; i < 512; ++i) {
      float ref = e4m3_to_f32(static_cast<std::uint8_t>(row[i])) * scales[r][i / 128];
      if (std::fpclassify(ref) == FP_SUBNORMAL) ref = std::copysign(0.0f, ref);
      const std::uint16_t got = out[r * 576 + i];
      if (std::isnan(ref))
        EXPECT_TRUE(std::isnan(bf16_to_f32(got))) << r << " " << i;
      else
        EXPECT_EQ(got, f32_to_bf16(ref))
            << r << " " << i << ": " << bf16_to_f32(got) << " vs " << ref;
    }
    EXPECT_EQ(std::memcmp(out.data() + r * 576 + 512, row + 528, 128), 0) << r;
  }
}

TEST(MlaDecode, VectorConversionsMatchDtypeHpp) {
  for (const mla::Ukernels* k :
       {&mla::scalar_ukernels(), mla::avx2_ukernels(), mla::avx512_ukernels()}) {
    if (k == nullptr) continue;
    std::vector<std::uint8_t> all(256);
    std::iota(all.begin(), all.end(), 0);
    std::vector<float> out(256);
    k->convert(DType::fp8, all.data(), 256, 0.375f, out.data());
    for (int i = 0; i < 256; ++i) {
      const float ref = e4m3_to_f32(static_cast<std::uint8_t>(i)) * 0.375f;
      if (std::isnan(ref))
        EXPECT_TRUE(std::isnan(out[i])) << k->isa << " " << i;
      else
        EXPECT_EQ(std::memcmp(&ref, &out[i], 4), 0)
            << k->isa << " e4m3 " << i << ": " << out[i] << " vs " << ref;
    }
    std::vector<std::uint16_t> h(64);
    for (int i = 0; i < 64; ++i) h[i] = static_cast<std::uint16_t>(i * 1031 + 7);
    std::vector<float> f(64);
    k->convert(DType::bf16, h.data(), 64, 1.0f, f.data());
    for (int i = 0; i < 64; ++i) {
      const float ref = bf16_to_f32(h[i]);
      EXPECT_EQ(std::memcmp(&ref, &f[i], 4), 0) << k->isa << " bf16 " << i;
    }
  }
}

TEST(MlaDecode, EveryIsaVerifies) {
  for (const char* isa : {"scalar", "avx2", "avx512", "avx512_bf16"}) {
    if (std::string(isa) == "avx2" && mla::avx2_ukernels() == nullptr) continue;
    if (std::string(isa) == "avx512" && mla::avx512_ukernels() == nullptr) continue;
    if (std::string(isa) == "avx512_bf16" && mla::avx512bf16_ukernels() == nullptr) continue;
    for (const Case& c : cases()) {
      TensorSet set(make_op(c));
      fill_ragged(set, random_seqlens(c.b, c.s, 21 + c.h), 6);
      poison_outputs(set);
      MlaDecoder dec(c.s_q * c.h, 2, isa);
      EXPECT_EQ(dec.isa(), isa);
      dec.run(mla_params(set));
      expect_verified(set, std::string(isa) + " " + name(c, 2));
    }
  }
}

TEST(MlaDecode, RejectsBadInput) {
  Case c{2, 64, 2, 1, DType::bf16};
  TensorSet set(make_op(c));
  fill_inputs(set, 1);
  MlaParams p = mla_params(set);
  p.seqlens = nullptr;
  EXPECT_THROW(mla_decode(p), InputError);
  p = mla_params(set);
  set["block_table"].as<std::int32_t>()[0] = 99;
  EXPECT_THROW(mla_decode(p), InputError);
  fill_inputs(set, 1);
  set["seqlens"].as<std::int32_t>()[1] = 65;
  EXPECT_THROW(mla_decode(p), InputError);
  p = mla_params(set);
  p.dtype = DType::f16;
  EXPECT_THROW(mla_decode(p), InputError);
}

TEST(MlaSchedule, CoversEveryBlockOnceAndBalances) {
  std::mt19937_64 g(5);
  for (int trial = 0; trial < 200; ++trial) {
    const std::int64_t b = 1 + static_cast<std::int64_t>(g() % 40);
    const int threads = 1 + static_cast<int>(g() % 8);
    std::vector<std::int32_t> sl(static_cast<std::size_t>(b));
    for (auto& x : sl) x = static_cast<std::int32_t>(g() % 3 == 0 ? g() % 65 : g() % 9000);
    const MlaSchedule s = mla_schedule(sl.data(), b, threads);
    // One list a thread, or (many requests, none long) one a request, longest first.
    const bool whole = s.per_slot.size() != static_cast<std::size_t>(threads) || b > threads;
    if (whole && s.per_slot.size() == static_cast<std::size_t>(b) && b >= 4 * threads &&
        threads > 1) {
      for (std::size_t l = 1; l < s.per_slot.size(); ++l)
        ASSERT_GE(s.per_slot[l - 1][0].block_end, s.per_slot[l][0].block_end);
      ASSERT_EQ(s.num_partials, 0);
    } else {
      ASSERT_EQ(s.per_slot.size(), static_cast<std::size_t>(threads));
    }
    std::vector<std::vector<int>> covered(static_cast<std::size_t>(b));
    std::vector<int> units(static_cast<std::size_t>(b), 0);
    std::vector<int> partial_used(static_cast<std::size_t>(s.num_partials), 0);
    std::int64_t max_cost = 0, total = 0;
    for (const auto& th : s.per_slot) {
      std::int64_t cost = 0;
      for (const MlaSplit& u : th) {
        const auto i = static_cast<std::size_t>(u.request);
        auto& cov = covered[i];
        cov.resize(static_cast<std::size_t>((sl[i] + 63) / 64), 0);
        for (int j = u.block_begin; j < u.block_end; ++j) ++cov[static_cast<std::size_t>(j)];
        ++units[i];
        cost += (u.block_end - u.block_begin) + kMlaSplitOverheadBlocks;
        if (u.partial >= 0) ++partial_used[static_cast<std::size_t>(u.partial)];
      }
      max_cost = std::max(max_cost, cost);
      total += cost;
    }
    for (std::size_t i = 0; i < static_cast<std::size_t>(b); ++i) {
      covered[i].resize(static_cast<std::size_t>((sl[i] + 63) / 64), 0);
      for (int c : covered[i]) ASSERT_EQ(c, 1) << "request " << i;
      ASSERT_EQ(units[i], s.num_splits[i]);
      ASSERT_GE(units[i], 1);  // zero-length requests still get written
      ASSERT_EQ(units[i] > 1, s.split_begin[i] >= 0);
    }
    for (int c : partial_used) ASSERT_EQ(c, 1);
    ASSERT_LE(s.num_partials, mla_max_partials(threads));
    // Balanced: no thread gets more than its share of the original work plus two overheads
    // (the payload), whatever the split pieces add.
    std::int64_t original = 0;
    for (auto x : sl) original += (x + 63) / 64 + kMlaSplitOverheadBlocks;
    const std::int64_t share = (original + threads - 1) / threads;
    EXPECT_LE(max_cost, s.payload) << "trial " << trial;
    EXPECT_LE(s.payload, share + 2 * kMlaSplitOverheadBlocks);
    EXPECT_LE(total - original, static_cast<std::int64_t>(threads - 1) * kMlaSplitOverheadBlocks);
  }
}

TEST(MlaBaselines, NaiveVerifies) {
  for (const Case& c : cases())
    for (int threads : {1, 2}) {
      TensorSet set(make_op(c));
      fill_ragged(set, random_seqlens(c.b, c.s, 3 + c.h), 8);
      poison_outputs(set);
      make_mla_naive_kernel(set, RunOptions{threads})->run();
      expect_verified(set, "naive " + name(c, threads));
    }
}

TEST(MlaBaselines, SeparateKvVerifies) {
  for (const Case& c : cases())
    for (int threads : {1, 2}) {
      SeparateKvCase sk(make_op(c), 4, std::size_t{1} << 30);
      sk.make_kernel(RunOptions{threads})->run();
      const Verification v = sk.verify(1 << 20);
      EXPECT_TRUE(v.ok) << "separate_kv " << name(c, threads) << ": " << v.detail;
    }
  // A pool smaller than the cache: requests share blocks and it still verifies.
  Case c{6, 300, 4, 1, DType::bf16};
  SeparateKvCase sk(make_op(c), 4, 64 * 4 * 320 * 2 * 7);
  EXPECT_TRUE(sk.aliased());
  sk.make_kernel(RunOptions{2})->run();
  const Verification v = sk.verify(1 << 20);
  EXPECT_TRUE(v.ok) << v.detail;
}

}  // namespace
}  // namespace attain
