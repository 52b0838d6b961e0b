#include "kernels/cuda/plan.hpp"

#include <algorithm>

#include "attain/op.hpp"
#include "core/util.hpp"

namespace attain::cuda {

static_assert(kCacheDk == kMlaDk && kCacheDv == kMlaDv && kCacheBlock == kMlaBlock &&
              kCacheFp8RowBytes == kMlaFp8RowBytes);

namespace {}  // namespace

DecodeGemmPlan plan_decode_gemm(std::int64_t m, std::int64_t n, std::int64_t k,
                                std::int64_t batches, int elem_bytes, int sms) {
  DecodeGemmPlan p;
  p.group = 16 / elem_bytes;
  p.mma = elem_bytes == 2 && m > 8 && k % 8 == 0;
  if (p.mma) {
    p.m_tiles = m <= 16 ? 2 : m <= 32 ? 4 : m <= 64 ? 8 : 16;
    p.mt = 8 * p.m_tiles;
    p.nw = 16;
    p.warp_k = 32;
  } else {
    p.mt = m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : 8;
    p.nw = p.mt <= 2 ? 4 : 2;
    p.warp_k = 32 * p.group;
  }
  const std::int64_t warp_k = p.warp_k;
  const std::int64_t mchunks = ceil_div(std::max<std::int64_t>(m, 1), p.mt);
  p.grid_x = ceil_div(std::max<std::int64_t>(n, 1), kDecodeWarps * p.nw);
  p.grid_z = mchunks * std::max<std::int64_t>(batches, 1);
  const std::int64_t ctas = p.grid_x * p.grid_z;
  // About 8 CTAs (32 warps) per SM keep enough 16-byte loads in flight to cover HBM latency.
  const std::int64_t target = 8 * std::max(sms, 1);
  // A slice is worth its partial write only when it streams at least two warp steps of K,
  // and the partials (written and read back, 8 bytes per output per slice) stay under a
  // quarter of W's bytes: split <= k * elem_bytes / (32 m).
  const std::int64_t max_split = std::max<std::int64_t>(
      1, std::min(k / (2 * warp_k), k * elem_bytes / (32 * std::max<std::int64_t>(m, 1))));
  const std::int64_t split = std::clamp<std::int64_t>(ceil_div(target, ctas), 1, max_split);
  p.k_chunk = ceil_div(ceil_div(std::max<std::int64_t>(k, 1), split), warp_k) * warp_k;
  p.split_k = static_cast<int>(ceil_div(std::max<std::int64_t>(k, 1), p.k_chunk));
  p.grid_y = p.split_k;
  p.workspace_floats = p.split_k > 1 ? p.split_k * std::max<std::int64_t>(batches, 1) * m * n : 0;
  return p;
}

MlaPlan plan_mla(const std::int32_t* seqlens, std::int64_t b, std::int64_t rows, int sms) {
  MlaPlan p;
  p.row_tiles = ceil_div(std::max<std::int64_t>(rows, 1), kMlaRowsPerCta);
  p.num_splits.assign(static_cast<std::size_t>(b), 1);
  p.split_begin.assign(static_cast<std::size_t>(b), -1);
  std::int64_t total = 0;
  for (std::int64_t i = 0; i < b; ++i) total += ceil_div(std::max(0, seqlens[i]), kMlaBlock);
  const std::int64_t target_units =
      std::max<std::int64_t>(1, ceil_div(2 * std::max(sms, 1), p.row_tiles));
  p.blocks_per_unit = std::max<std::int64_t>(1, ceil_div(total, target_units));
  for (std::int64_t i = 0; i < b; ++i) {
    const std::int64_t nblk = ceil_div(std::max(0, seqlens[i]), kMlaBlock);
    const std::int64_t pieces = std::max<std::int64_t>(1, ceil_div(nblk, p.blocks_per_unit));
    const auto req = static_cast<std::int32_t>(i);
    if (pieces == 1) {
      p.units.push_back({req, 0, static_cast<std::int32_t>(nblk), -1});
      continue;
    }
    // Even pieces: the first (nblk % pieces) get one block more.
    p.num_splits[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(pieces);
    p.split_begin[static_cast<std::size_t>(i)] = p.num_partials;
    std::int64_t begin = 0;
    for (std::int64_t j = 0; j < pieces; ++j) {
      const std::int64_t len = nblk / pieces + (j < nblk % pieces ? 1 : 0);
      p.units.push_back({req, static_cast<std::int32_t>(begin),
                         static_cast<std::int32_t>(begin + len), p.num_partials++});
      begin += len;
    }
  }
  return p;
}

}  // namespace attain::cuda
