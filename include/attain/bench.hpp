// The benchmark harness: inputs, verification, timing, roofline, results.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "attain/backend.hpp"
#include "attain/device.hpp"
#include "attain/op.hpp"

namespace attain {

struct TimingConfig {
  double max_seconds = 0.25;   // time budget per (op, backend), timing only
  int min_reps = 5;
  int max_reps = 2000;
  double noise_target = 0.02;  // stop early once IQR/median falls below this (after 10 reps)
  bool hot = false;            // warm cache: no rotation, no flush
  std::int64_t llc_bytes = 32 << 20;
};

struct Timing {
  double median_s = 0, min_s = 0, iqr_s = 0;
  int reps = 0;
};

// Times kernels[0..] round robin: each kernel is bound to its own input set, so rotating
// through them is what makes the cache cold. When the sets together are smaller than twice
// the LLC (and !hot), the LLC is flushed before each timed run, outside the timed region.
// Warm-up runs first (not timed).
Timing time_kernels(std::span<Kernel* const> kernels, std::size_t bytes_per_set, const TimingConfig& cfg);

// How many input sets cold-cache timing needs for an op of this footprint.
int rotation_sets(std::size_t bytes_per_set, const TimingConfig& cfg);

}  // namespace attain
