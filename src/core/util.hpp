// Small helpers every part uses: integer rounding, container indices, elapsed time.
//
// Internal linkage (an unnamed namespace): per-ISA files may include this header, and an inline
// function with external linkage compiled there with -mavx512f could be the copy the linker
// keeps for generic code (kernels/cpu/gemm/kernels.hpp says more).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace attain {
namespace {

// a / b rounded up, for a >= 0 and b > 0.
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}
// a rounded up to a multiple of b.
constexpr std::int64_t round_up(std::int64_t a, std::int64_t b) {
  return ceil_div(a, b) * b;
}
// A non-negative count or position as a container index.
constexpr std::size_t idx(std::int64_t i) {
  return static_cast<std::size_t>(i);
}
// Seconds on the steady clock since t0.
inline double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace
}  // namespace attain
