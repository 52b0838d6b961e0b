// Op specs, FLOP/byte models and the dtype conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attain/dtype.hpp"
#include "attain/op.hpp"
#include "attain/tensor.hpp"

using namespace attain;

TEST(OpSpec, RoundTripsEveryKind) {
  for (const char* s :
       {"gemm:m=8,n=4096,k=7168,dtype=bf16", "batched_gemm:batch=64,m=16,n=4096,k=128,dtype=fp32",
        "grouped_gemm:groups=256,m=32,n=4096,k=7168,dtype=fp8",
        "grouped_gemm:groups=8,m=3,n=64,k=32,dtype=fp16,skew=1.5,layout=masked",
        "mla_decode:b=64,s=4096,h=128,dtype=bf16", "mla_decode:b=2,s=100,h=16,dtype=fp8,s_q=2"}) {
    const Op op = Op::parse(s);
    EXPECT_EQ(op.spec(), s);
    EXPECT_EQ(Op::parse(op.spec()), op);
  }
}

TEST(OpSpec, AcceptsAnyKeyOrderAndAliases) {
  const Op op = Op::parse("gemm:dtype=float32,k=3,n=2,m=1");
  EXPECT_EQ(op.spec(), "gemm:m=1,n=2,k=3,dtype=fp32");
  EXPECT_EQ(Op::gemm_shape("8x4096x7168", DType::bf16).spec(), "gemm:m=8,n=4096,k=7168,dtype=bf16");
}

TEST(OpSpec, RejectsBadInputWithAClearMessage) {
  auto msg = [](const char* s) {
    try {
      Op::parse(s);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg("gemm:m=0,n=4,k=4,dtype=fp32").find("must be positive"), std::string::npos);
  EXPECT_NE(msg("gemm:m=-3,n=4,k=4,dtype=fp32").find("must be positive"), std::string::npos);
  EXPECT_NE(msg("gemm:m=99999999999999999999,n=4,k=4,dtype=fp32").find("out of range"),
            std::string::npos);
  EXPECT_NE(msg("gemm:m=3000000000,n=4,k=4,dtype=fp32").find("too large"), std::string::npos);
  EXPECT_NE(msg("gemm:m=2000000000,n=2000000000,k=4,dtype=fp32").find("too large"),
            std::string::npos);
  EXPECT_NE(msg("gemm:m=4,n=4,k=4,dtype=int4").find("unknown dtype"), std::string::npos);
  EXPECT_NE(msg("conv:m=4").find("unknown op kind"), std::string::npos);
  EXPECT_NE(msg("gemm:m=4,n=4,dtype=fp32").find("missing 'k'"), std::string::npos);
  EXPECT_NE(msg("gemm:m=4,n=4,k=4,k=5,dtype=fp32").find("twice"), std::string::npos);
  EXPECT_NE(msg("gemm:m=4,n=4,k=4,dtype=fp32,x=1").find("unknown key 'x'"), std::string::npos);
  EXPECT_NE(msg("gemm:m=4,n=4,k=4x,dtype=fp32").find("not an integer"), std::string::npos);
  EXPECT_NE(msg("gemm m=4").find("no ':'"), std::string::npos);
  EXPECT_NE(msg("mla_decode:b=1,s=4,h=1,dtype=fp16").find("mla_decode supports"),
            std::string::npos);
  EXPECT_NE(msg("mla_decode:b=1,s=4,h=1,dtype=bf16,s_q=5").find("must not exceed"),
            std::string::npos);
  EXPECT_THROW(Op::gemm_shape("8x4096", DType::f32), InputError);
  EXPECT_THROW(Op::gemm_shape("8x0x4", DType::f32), InputError);
}

TEST(OpModel, GemmFlopsAndBytes) {
  const Op op = Op::parse("gemm:m=8,n=4096,k=7168,dtype=bf16");
  EXPECT_DOUBLE_EQ(op.flops(), 2.0 * 8 * 4096 * 7168);
  EXPECT_DOUBLE_EQ(op.bytes(), 2.0 * (8 * 7168 + 4096 * 7168 + 8 * 4096));
  const Op f8 = Op::parse("gemm:m=8,n=256,k=300,dtype=fp8");  // scales: 8x3 and 2x3 fp32
  EXPECT_DOUBLE_EQ(f8.bytes(), 8 * 300 + 256 * 300 + 4.0 * (8 * 3 + 2 * 3) + 2.0 * 8 * 256);
  const Op g = Op::parse("grouped_gemm:groups=4,m=8,n=16,k=32,dtype=fp32");
  EXPECT_DOUBLE_EQ(g.flops(), 2.0 * 32 * 16 * 32);
  EXPECT_DOUBLE_EQ(g.bytes(),
                   4.0 * (32 * 32 + 4 * 16 * 32 + 32 * 16) + 4.0 * 5);  // + offsets i32[5]
}

TEST(OpModel, SkewedGroupsKeepTheTotal) {
  const Op g = Op::parse("grouped_gemm:groups=16,m=8,n=16,k=32,dtype=fp32,skew=1");
  const auto rows = g.group_rows();
  std::int64_t total = 0;
  for (auto r : rows) total += r;
  EXPECT_EQ(total, 16 * 8);
  EXPECT_GT(rows.front(), rows.back());
  EXPECT_EQ(g.max_group_rows(), rows.front());
}

TEST(OpModel, MlaFlopsAreCausalExact) {
  const Op one = Op::parse("mla_decode:b=2,s=100,h=4,dtype=bf16");
  EXPECT_DOUBLE_EQ(one.flops(), 2.0 * 2 * 4 * 100 * (576 + 512));
  const Op two =
      Op::parse("mla_decode:b=2,s=100,h=4,dtype=bf16,s_q=2");  // queries see 99 and 100 keys
  EXPECT_DOUBLE_EQ(two.flops(), 2.0 * 2 * 4 * (99 + 100) * (576 + 512));
  // Cache bytes count the s rows read, not the padding of the last block.
  const Op f8 = Op::parse("mla_decode:b=1,s=100,h=1,dtype=fp8");
  EXPECT_DOUBLE_EQ(f8.bytes(), 100.0 * 656 + 576 * 2 + 512 * 2 + 4);
}

// A ragged batch: the same model at each request's own length; the uniform batch is flops().
TEST(OpModel, MlaCountsForRaggedSeqlens) {
  const Op op = Op::parse("mla_decode:b=3,s=100,h=4,dtype=bf16,s_q=2");
  const std::vector<std::int32_t> all = {100, 100, 100};
  EXPECT_DOUBLE_EQ(op.flops(all), op.flops());
  EXPECT_DOUBLE_EQ(op.bytes(all), op.bytes());
  EXPECT_DOUBLE_EQ(op.flops(std::span<const std::int32_t>{}), op.flops());
  // Lengths 1, 2 and 50 with 2 queries each: query 0 sees len - 1 keys, query 1 sees len.
  const std::vector<std::int32_t> ragged = {1, 2, 50};
  const double pairs = (0 + 1) + (1 + 2) + (49 + 50);
  EXPECT_DOUBLE_EQ(op.flops(ragged), 2.0 * 4 * pairs * (kMlaDk + kMlaDv));
  // 247 rows fewer than 3 x 100 are read, each 576 bf16 values.
  EXPECT_DOUBLE_EQ(op.bytes() - op.bytes(ragged), (300.0 - 53.0) * kMlaDk * 2);
  // Other kinds ignore the lengths.
  const Op g = Op::parse("gemm:m=2,n=3,k=4,dtype=fp32");
  EXPECT_DOUBLE_EQ(g.flops(ragged), g.flops());
}

TEST(Tensors, GuardRegionsCatchOverruns) {
  TensorSet set(Op::parse("gemm:m=3,n=5,k=7,dtype=fp32"));
  EXPECT_TRUE(set.guards_intact());
  auto& c = set["c"];
  EXPECT_EQ(c.numel(), 15);
  c.as<float>()[15] = 1.0f;  // one past the end
  EXPECT_FALSE(set.guards_intact());
  EXPECT_THROW(set["nope"], std::out_of_range);
}

TEST(Dtype, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);
  // 1 + 3*2^-8 is halfway between 1.0078125 (odd) and 1.015625 (even): rounds up.
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::infinity()))));
  for (float x : {0.0f, -2.5f, 3.140625f, 0x1p-70f, -65536.0f})
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(x)), x) << x;
}

TEST(Dtype, Fp16MatchesIeee) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);                // overflow -> Inf
  EXPECT_EQ(f32_to_f16(5.960464477539063e-08f), 1);   // smallest subnormal
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);  // tie -> even
  for (int h = 0; h < 0x7c00; ++h) {                  // every finite positive half round-trips
    const float f = f16_to_f32(static_cast<std::uint16_t>(h));
    ASSERT_EQ(f32_to_f16(f), h) << h;
  }
}

TEST(Dtype, E4m3RoundTripsAndSaturates) {
  for (int v = 0; v < 256; ++v) {
    const float f = e4m3_to_f32(static_cast<std::uint8_t>(v));
    if (std::isnan(f)) continue;
    if (f == 0.0f) continue;  // +0 / -0
    EXPECT_EQ(f32_to_e4m3(f), v) << v;
  }
  EXPECT_EQ(e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(f32_to_e4m3(1000.0f), 0x7e);
  EXPECT_EQ(f32_to_e4m3(-1000.0f), 0xfe);
  EXPECT_EQ(f32_to_e4m3(std::nanf("")), 0x7f);
  EXPECT_EQ(e4m3_to_f32(1), std::ldexp(1.0f, -9));     // smallest subnormal
  EXPECT_EQ(f32_to_e4m3(1.0625f), f32_to_e4m3(1.0f));  // halfway 1.0/1.125: tie to even code
}

// The nearest e4m3 code by a search over the decoded values (ties to the even code; 448 and
// beyond saturate): what f32_to_e4m3's bit arithmetic must agree with.
namespace {
std::uint8_t e4m3_nearest(float f) {
  if (std::isnan(f)) return 0x7f;
  const std::uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  const float a = std::fabs(f);
  if (a >= 448.0f) return static_cast<std::uint8_t>(sign | 0x7e);
  int best = 0;
  for (int c = 1; c <= 0x7e; ++c) {
    const float d = std::fabs(e4m3_to_f32(static_cast<std::uint8_t>(c)) - a);
    const float db = std::fabs(e4m3_to_f32(static_cast<std::uint8_t>(best)) - a);
    if (d < db || (d == db && c % 2 == 0)) best = c;
  }
  return static_cast<std::uint8_t>(sign | best);
}
}  // namespace

TEST(Dtype, E4m3RoundsToNearestEvenEverywhere) {
  // Every code's value, its neighbours one ulp away, the midpoints to the next code and one ulp
  // either side of them (the ties and the carries into the exponent), both signs.
  std::vector<float> xs = {0.0f,   0x1p-10f, 0x1p-149f, 447.99997f,
                           448.0f, 464.0f,   1e30f,     std::numeric_limits<float>::infinity()};
  for (int c = 0; c < 0x7e; ++c) {
    const float lo = e4m3_to_f32(static_cast<std::uint8_t>(c));
    const float hi = e4m3_to_f32(static_cast<std::uint8_t>(c + 1));
    const float mid = (lo + hi) / 2;
    for (float x : {lo, mid, hi})
      for (float y : {std::nextafter(x, 0.0f), x, std::nextafter(x, 1000.0f)}) xs.push_back(y);
  }
  // And a sweep over the bit patterns of every float below 512.
  for (std::uint32_t b = 0; b < 0x44000000u; b += 16411) xs.push_back(std::bit_cast<float>(b));
  for (float x : xs)
    for (float s : {x, -x}) ASSERT_EQ(f32_to_e4m3(s), e4m3_nearest(s)) << s;
}
