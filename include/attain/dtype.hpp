// Element types and the one set of conversion routines every path uses.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace attain {

// Storage types. The first four are the dtypes an op can have; i32 and u8 are
// for index tensors (block tables, group offsets) and packed byte rows.
enum class DType : std::uint8_t { f32, bf16, f16, fp8, i32, u8 };

inline constexpr int kFp8Block = 128;     // DeepSeek-style block-scale width
inline constexpr float kFp8Max = 448.0f;  // largest finite e4m3 value

std::string_view dtype_name(DType t);                  // "fp32", "bf16", "fp16", "fp8", "i32", "u8"
std::optional<DType> parse_dtype(std::string_view s);  // op dtypes only; accepts aliases
std::size_t dtype_size(DType t);                       // bytes per element
inline bool is_op_dtype(DType t) {
  return t == DType::f32 || t == DType::bf16 || t == DType::f16 || t == DType::fp8;
}

// ---- bf16: round to nearest even; NaN stays NaN (quiet), Inf stays Inf ----
inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
inline float bf16_to_f32(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

// ---- IEEE fp16 (software; kernels use F16C where the CPU has it) ----
std::uint16_t f32_to_f16(float f);
float f16_to_f32(std::uint16_t h);

// ---- fp8 e4m3 (OCP "e4m3fn": no Inf, 0x7f/0xff are NaN, max 448) ----
// Round to nearest even, saturating to +-448; NaN -> 0x7f. By the bits, inline: benchmarks
// quantize gigabytes of weights and the MoE paths their activations through it.
inline std::uint8_t f32_to_e4m3(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;                                     // NaN
  if (a >= 0x43e00000u) return static_cast<std::uint8_t>(sign | 0x7e);  // >= 448: saturate
  if (a < 0x3c800000u) {
    // Below the smallest normal (2^-6) the codes are the multiples of 2^-9: |f| * 2^9 rounded
    // to the nearest even integer, by adding 2^23 (8 is the smallest normal's code, so a
    // carry lands right).
    const float x = std::bit_cast<float>(a) * 512.0f + 8388608.0f;
    return static_cast<std::uint8_t>(sign | (std::bit_cast<std::uint32_t>(x) & 0xfu));
  }
  // Normal: keep 3 of the 23 mantissa bits, the 20 dropped ones rounded to nearest even; a
  // carry out of the mantissa steps the exponent (bias 127 -> 7).
  const std::uint32_t r = a + 0x7ffffu + ((a >> 20) & 1u);
  return static_cast<std::uint8_t>(sign | (((r >> 23) - 120u) << 3) | ((r >> 20) & 7u));
}
float e4m3_to_f32(std::uint8_t v);
// All 256 decoded values, for table lookups in hot loops.
const float* e4m3_table();

}  // namespace attain
