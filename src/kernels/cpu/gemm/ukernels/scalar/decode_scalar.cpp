// Decode path in portable C++: one W row at a time, converted element by element.
#include <algorithm>
#include <cstddef>

#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm::detail {

void decode_scalar(const DecodeArgs& g) {
  const float* wrow = g.scratch;  // one converted W row (k_tile floats at a time)
  float* buf = g.scratch;
  const std::size_t es = dtype_size(g.w_type);
  for (std::int64_t j = g.n0; j < g.n1; ++j) {
    const auto* row = static_cast<const std::byte*>(g.w) + static_cast<std::size_t>(j * g.ldw) * es;
    float* acc = g.scratch + g.k_tile;  // m partial sums
    for (std::int64_t i = 0; i < g.m; ++i) acc[i] = 0.0f;
    for (std::int64_t k0 = 0; k0 < g.k; k0 += kFp8Block) {
      const std::int64_t len = std::min<std::int64_t>(kFp8Block, g.k - k0);
      const float scale =
          g.w_type == DType::fp8 ? g.w_scale[(j / kFp8Block) * g.ld_wscale + k0 / kFp8Block] : 1.0f;
      convert_scalar(row + static_cast<std::size_t>(k0) * es, g.w_type, len, scale, g.e4m3, buf);
      for (std::int64_t i = 0; i < g.m; ++i) {
        const float* ar = g.a + i * g.lda + k0;
        float s = acc[i];
        for (std::int64_t p = 0; p < len; ++p) s += ar[p] * wrow[p];
        acc[i] = s;
      }
    }
    for (std::int64_t i = 0; i < g.m; ++i) g.out[i * g.ldo + (j - g.n0)] = acc[i];
  }
}

}  // namespace attain::gemm::detail
