// Helpers shared by the MLA kernel and its baselines (internal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "attain/dtype.hpp"
#include "core/util.hpp"
#include "kernels/cpu/attention/mla_ukernels.hpp"

namespace attain::mla {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
// 64-byte aligned, zero-filled fp32 buffer.
using FloatBuf = std::unique_ptr<float[], FreeDeleter>;
FloatBuf alloc_floats(std::size_t n);

// Cache row bytes of a cache dtype.
inline std::size_t row_bytes(DType dt) {
  return dt == DType::fp8 ? 656 : static_cast<std::size_t>(kDk) * dtype_size(dt);
}

// Dequantizes `rows` rows of one cache block (rows are contiguous) to dst[rows][576].
void load_rows(const Ukernels& uk, DType dt, const std::byte* src, int rows, float* dst);

// Stores n fp32 values as the output dtype (bf16 or f32), with dtype.hpp's rounding.
void store_out(DType out, const float* src, std::int64_t n, void* dst, std::int64_t offset);

}  // namespace attain::mla
