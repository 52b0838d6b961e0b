#include "attain/tile.hpp"

#include <fmt/format.h>

namespace attain::tile {

std::string TileView::describe() const {
  return fmt::format("({},{}) {} {} ld={}", rows, cols, dtype_name(dtype),
                     row_major() ? "row-major" : "strided", row_major() ? row_stride : col_stride);
}

void prefetch(const TileView& v, Level level) {
  constexpr std::int64_t kLine = 64;
  const auto esize = static_cast<std::int64_t>(dtype_size(v.dtype));
  if (!v.row_major()) {
    for (std::int64_t r = 0; r < v.rows; ++r)
      for (std::int64_t c = 0; c < v.cols; ++c) __builtin_prefetch(v.at(r, c), 0, 3);
    return;
  }
  const std::int64_t row_bytes = v.cols * esize;
  for (std::int64_t r = 0; r < v.rows; ++r) {
    const std::byte* p = v.at(r, 0);
    for (std::int64_t off = 0; off < row_bytes; off += kLine) {
      if (level == Level::l1) {
        __builtin_prefetch(p + off, 0, 3);
      } else {
        __builtin_prefetch(p + off, 0, 2);
      }
    }
  }
}

}  // namespace attain::tile
