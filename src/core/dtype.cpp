#include "attain/dtype.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace attain {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "fp32";
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "fp16";
    case DType::fp8:
      return "fp8";
    case DType::i32:
      return "i32";
    case DType::u8:
      return "u8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "f32" || s == "float32" || s == "float") return DType::f32;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp16" || s == "f16" || s == "float16" || s == "half") return DType::f16;
  if (s == "fp8" || s == "e4m3" || s == "fp8_e4m3" || s == "float8_e4m3fn") return DType::fp8;
  return std::nullopt;
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::bf16:
      return 2;
    case DType::f16:
      return 2;
    case DType::fp8:
      return 1;
    case DType::i32:
      return 4;
    case DType::u8:
      return 1;
  }
  return 0;
}

std::uint16_t f32_to_f16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (absu >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow -> Inf
  if (absu < 0x38800000u) {  // subnormal half (or zero): scale into the 2^-24 grid, RNE
    const float a = std::bit_cast<float>(absu);
    const float scaled = a * 16777216.0f;  // 2^24, exact
    const auto q = static_cast<std::uint32_t>(std::nearbyint(scaled));
    return static_cast<std::uint16_t>(sign | q);
  }
  // normal: rebias exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest even
  std::uint32_t v = absu - 0x38000000u;
  v += 0x0fffu + ((v >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (v >> 13));
}

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(man) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
}

namespace {
std::array<float, 256> make_e4m3_table() {
  std::array<float, 256> t{};
  for (int v = 0; v < 256; ++v) {
    const int sign = v >> 7, exp = (v >> 3) & 0xf, man = v & 7;
    float x;
    if (exp == 0xf && man == 7) {
      x = std::numeric_limits<float>::quiet_NaN();
    } else if (exp == 0) {
      x = std::ldexp(static_cast<float>(man), -9);  // subnormal: man/8 * 2^-6
    } else {
      x = std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
    }
    t[static_cast<std::size_t>(v)] = sign ? -x : x;
  }
  return t;
}
}  // namespace

const float* e4m3_table() {
  static const std::array<float, 256> table = make_e4m3_table();
  return table.data();
}

float e4m3_to_f32(std::uint8_t v) {
  return e4m3_table()[v];
}

}  // namespace attain
