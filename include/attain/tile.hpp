// Tile views and the multi-stage tile pipeline the CPU kernels are built on.
//
// The pipeline is the CPU form of TileLang's T.Pipelined(num_stages): tiles 0..n-1 flow
// through S stage slots. Loading tile t (software prefetch of its source, or packing it into
// slot t % S) is issued S-1 tiles ahead of the computation that consumes it:
//   prologue      load(0) .. load(S-2)
//   steady state  load(t+S-1); compute(t)
//   epilogue      compute(n-S+1) .. compute(n-1)
// S = 1 is the plain loop (load(t); compute(t)): nothing is fetched ahead.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "attain/dtype.hpp"

namespace attain::tile {

// A 2-D strided view: element (r, c) at data + (r * row_stride + c * col_stride) * size(dtype).
struct TileView {
  const std::byte* data = nullptr;
  DType dtype = DType::f32;
  std::int64_t rows = 0, cols = 0;
  std::int64_t row_stride = 0, col_stride = 1;  // in elements

  const std::byte* at(std::int64_t r, std::int64_t c) const {
    return data + static_cast<std::size_t>(r * row_stride + c * col_stride) * dtype_size(dtype);
  }
  // The sub-tile [r0, r0+nr) x [c0, c0+nc), clipped to this view.
  TileView sub(std::int64_t r0, std::int64_t c0, std::int64_t nr, std::int64_t nc) const {
    TileView v = *this;
    v.data = at(r0, c0);
    v.rows = std::max<std::int64_t>(0, std::min(nr, rows - r0));
    v.cols = std::max<std::int64_t>(0, std::min(nc, cols - c0));
    return v;
  }
  bool row_major() const { return col_stride == 1; }
  std::size_t bytes() const { return static_cast<std::size_t>(rows * cols) * dtype_size(dtype); }
  std::string describe() const;  // "(rows,cols) bf16 row-major ld=K"
};

// Issues software prefetches for every cache line of the view (row by row), to L1 or L2.
enum class Level : std::uint8_t { l1, l2 };
void prefetch(const TileView& v, Level level);

// Stage count as used by run_pipeline: at least 1, at most the tile count (and kMaxStages).
inline constexpr int kMaxStages = 8;
inline int clamp_stages(int stages, std::int64_t tiles) {
  const auto s = std::clamp<std::int64_t>(
      stages, 1, std::min<std::int64_t>(kMaxStages, std::max<std::int64_t>(1, tiles)));
  return static_cast<int>(s);
}

// load(tile, slot) starts tile's data movement into stage slot `slot`;
// compute(tile, slot) consumes it. See the file comment for the order.
template <class Load, class Compute>
void run_pipeline(std::int64_t tiles, int stages, Load&& load, Compute&& compute) {
  const int s = clamp_stages(stages, tiles);
  for (std::int64_t t = 0; t < std::min<std::int64_t>(s - 1, tiles); ++t)
    load(t, static_cast<int>(t % s));
  for (std::int64_t t = 0; t < tiles; ++t) {
    const std::int64_t ahead = t + s - 1;
    if (ahead < tiles) load(ahead, static_cast<int>(ahead % s));
    compute(t, static_cast<int>(t % s));
  }
}

}  // namespace attain::tile
