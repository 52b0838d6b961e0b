// Tile views and the multi-stage pipeline: order of loads and computes for every depth, slot
// reuse never overwrites a tile before it is consumed.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "attain/tile.hpp"

namespace attain::tile {
namespace {

TEST(TileView, SubViewsClipAndAddress) {
  std::vector<std::uint16_t> m(10 * 12);
  TileView v{reinterpret_cast<const std::byte*>(m.data()), DType::bf16, 10, 7, 12, 1};
  const TileView s = v.sub(8, 4, 4, 4);  // clipped to 2 x 3
  EXPECT_EQ(s.rows, 2);
  EXPECT_EQ(s.cols, 3);
  EXPECT_EQ(s.data, reinterpret_cast<const std::byte*>(&m[8 * 12 + 4]));
  EXPECT_EQ(s.bytes(), 2u * 3u * 2u);
  EXPECT_EQ(v.describe(), "(10,7) bf16 row-major ld=12");
  prefetch(s, Level::l1);  // must not fault on a clipped view
  prefetch(v.sub(20, 0, 4, 4), Level::l2);
}

TEST(Pipeline, PrologueSteadyEpilogueOrder) {
  for (int stages = 1; stages <= 5; ++stages)
    for (std::int64_t tiles : {0, 1, 2, 3, 7}) {
      SCOPED_TRACE("stages " + std::to_string(stages) + " tiles " + std::to_string(tiles));
      const int s = clamp_stages(stages, tiles);
      std::vector<std::pair<char, std::int64_t>> log;
      std::vector<std::int64_t> slot_holds(static_cast<std::size_t>(kMaxStages), -1);
      run_pipeline(
          tiles, stages,
          [&](std::int64_t t, int slot) {
            // The slot must be free: its previous tile already consumed.
            EXPECT_EQ(slot_holds[static_cast<std::size_t>(slot)], -1);
            slot_holds[static_cast<std::size_t>(slot)] = t;
            log.emplace_back('L', t);
          },
          [&](std::int64_t t, int slot) {
            EXPECT_EQ(slot_holds[static_cast<std::size_t>(slot)], t);
            slot_holds[static_cast<std::size_t>(slot)] = -1;
            log.emplace_back('C', t);
          });
      // Every tile loaded once and computed once, each load s-1 tiles ahead of its compute.
      std::vector<std::pair<char, std::int64_t>> want;
      for (std::int64_t t = 0; t < std::min<std::int64_t>(s - 1, tiles); ++t)
        want.emplace_back('L', t);
      for (std::int64_t t = 0; t < tiles; ++t) {
        if (t + s - 1 < tiles) want.emplace_back('L', t + s - 1);
        want.emplace_back('C', t);
      }
      EXPECT_EQ(log, want);
    }
}

TEST(Pipeline, StageClamping) {
  EXPECT_EQ(clamp_stages(0, 10), 1);
  EXPECT_EQ(clamp_stages(4, 2), 2);
  EXPECT_EQ(clamp_stages(100, 100), kMaxStages);
}

}  // namespace
}  // namespace attain::tile
