#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "attain/bench.hpp"

namespace attain {

namespace {

using Clock = std::chrono::steady_clock;

// Reading a buffer twice the LLC's size evicts whatever the last run left in cache.
// Reads, not writes: the flush buffer's own lines stay clean and leave silently. One word
// per cache line is read (the line comes in whole). The buffer is allocated and touched once
// per process and size, not per timing: faulting in 128 MiB costs more than the flushes.
class LlcFlusher {
 public:
  explicit LlcFlusher(std::int64_t llc_bytes)
      : n_(static_cast<std::size_t>(std::max<std::int64_t>(llc_bytes, 1 << 20)) * 2 /
           sizeof(std::uint64_t)),
        buf_(new std::uint64_t[n_]) {
    for (std::size_t i = 0; i < n_; ++i) buf_[i] = i;  // touch: no shared zero page
  }
  std::size_t words() const { return n_; }
  void flush() {
    constexpr std::size_t kLine = 64 / sizeof(std::uint64_t);
    std::uint64_t acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;
    std::size_t i = 0;
    for (; i + 4 * kLine <= n_; i += 4 * kLine) {
      acc0 += buf_[i], acc1 += buf_[i + kLine], acc2 += buf_[i + 2 * kLine],
          acc3 += buf_[i + 3 * kLine];
    }
    for (; i < n_; i += kLine) acc0 += buf_[i];
    sink_ = acc0 + acc1 + acc2 + acc3;
  }

 private:
  std::size_t n_;
  std::unique_ptr<std::uint64_t[]> buf_;
  volatile std::uint64_t sink_ = 0;
};

// The process's flusher for this LLC size (kept: timings follow each other all run long).
LlcFlusher& shared_flusher(std::int64_t llc_bytes) {
  static std::mutex mu;
  static std::unique_ptr<LlcFlusher> f;
  std::lock_guard<std::mutex> lock(mu);
  const std::size_t want = static_cast<std::size_t>(std::max<std::int64_t>(llc_bytes, 1 << 20)) *
                           2 / sizeof(std::uint64_t);
  if (!f || f->words() != want) f = std::make_unique<LlcFlusher>(llc_bytes);
  return *f;
}

}  // namespace

std::int64_t timing_llc_bytes(const HostCeilings& host) {
  // Measured: an array of cold_bytes read in full evicts what a run left (the flush and the
  // rotation read twice the figure returned). Never less than the LLC the CPU reports: a probe
  // taken while other work loads the memory can find 16 MiB reading "at memory speed" on a
  // guest with 260 MiB of L3, and a 16 MiB operand then stays in cache between cold runs.
  if (host.cold_bytes > 0)
    return std::clamp<std::int64_t>(std::max(host.cold_bytes, host.l3_bytes), 8 << 20, 1024 << 20);
  if (host.l3_bytes <= 0) return TimingConfig{}.llc_bytes;
  return std::clamp<std::int64_t>(host.l3_bytes, 8 << 20, 64 << 20);
}

int rotation_sets(std::size_t bytes_per_set, const TimingConfig& cfg) {
  if (cfg.hot || bytes_per_set == 0) return 1;
  const double need = 2.0 * static_cast<double>(cfg.llc_bytes);
  const double sets = std::ceil(need / static_cast<double>(bytes_per_set));
  // Beyond 16 sets the rotation stays in cache anyway for tiny ops; they are flushed instead.
  return static_cast<int>(std::clamp(sets, 1.0, 16.0));
}

namespace {

// Timed runs enough for a median when one run alone outlasts the budget (the suite's largest
// prefill GEMMs run 1-2 minutes each on a 2-core CPU: five runs of each would be hours).
constexpr int kLongRunReps = 3;

// One backend's timed runs and its stopping rule: at least min_reps (kLongRunReps when the
// first run alone took the whole budget); then the budget of max_seconds spent, or (from 10
// reps, every 5) the IQR under the noise target once a quarter of the budget is spent.
struct Reps {
  std::vector<double> times;
  double timed = 0;
  std::size_t next = 0;  // the next input set
  void add(double dt) {
    times.push_back(dt);
    timed += dt;
  }
  bool done(const TimingConfig& cfg) const {
    const int reps = static_cast<int>(times.size());
    if (reps >= cfg.max_reps) return true;
    const bool long_runs = reps > 0 && times.front() >= cfg.max_seconds;
    if (reps < (long_runs ? std::min(cfg.min_reps, kLongRunReps) : cfg.min_reps)) return false;
    if (timed >= cfg.max_seconds) return true;
    if (reps < 10 || reps % 5 != 0 || timed < cfg.max_seconds / 4) return false;
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    const double med = quantile_sorted(sorted, 0.5);
    return (quantile_sorted(sorted, 0.75) - quantile_sorted(sorted, 0.25)) / med < cfg.noise_target;
  }
  Timing summary() {
    Timing t;
    t.reps = static_cast<int>(times.size());
    if (times.empty()) return t;
    std::sort(times.begin(), times.end());
    t.median_s = quantile_sorted(times, 0.5);
    t.min_s = times.front();
    t.iqr_s = quantile_sorted(times, 0.75) - quantile_sorted(times, 0.25);
    return t;
  }
};

}  // namespace

std::vector<Timing> time_interleaved(std::span<const std::vector<Kernel*>> groups,
                                     std::size_t bytes_per_set, const TimingConfig& cfg) {
  std::vector<Timing> out(groups.size());
  std::size_t sets = 0;
  for (const auto& g : groups) {
    if (g.empty()) throw std::invalid_argument("time_interleaved: a group without kernels");
    sets = std::max(sets, g.size());
  }
  if (groups.empty()) return out;
  // Device kernels flush their own cache and report device time (Kernel::device_timed).
  const bool device = groups[0][0]->device_timed();
  const bool flush = !device && !cfg.hot &&
                     static_cast<double>(sets) * static_cast<double>(bytes_per_set) <
                         2.0 * static_cast<double>(cfg.llc_bytes);
  LlcFlusher* flusher = flush ? &shared_flusher(cfg.llc_bytes) : nullptr;

  std::vector<Reps> reps(groups.size());
  for (auto& r : reps) r.times.reserve(static_cast<std::size_t>(std::min(cfg.max_reps, 4096)));
  // Warm-up: every set once (page faults, thread-pool start, library init), untimed; except
  // that a group's last warm-up run, when it alone outlasts the budget on sets that rotate past
  // the caches (no flush needed), is as cold as a timed run and counts as the first (the
  // suite's largest ops run minutes each: one run saved of their four).
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& g = groups[gi];
    for (std::size_t i = 0; i < g.size(); ++i) {
      const auto t0 = Clock::now();
      g[i]->run();
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      if (i + 1 == g.size() && !cfg.hot && !flush && !device && dt >= cfg.max_seconds)
        reps[gi].add(dt);
    }
    if (cfg.hot) g[0]->run();
  }
  const auto wall0 = Clock::now();
  // Bounds flush overhead on tiny ops: each group's share as when it ran alone.
  const double wall_cap = static_cast<double>(groups.size()) * (4 * cfg.max_seconds + 1.0);
  // Rounds of one run per unfinished group, the order reversed every round (A B, B A, ...):
  // neither always runs first after the other's run.
  for (std::size_t round = 0;; ++round) {
    bool any = false;
    for (std::size_t j = 0; j < groups.size(); ++j) {
      const std::size_t gi = round % 2 == 0 ? j : groups.size() - 1 - j;
      Reps& r = reps[gi];
      if (r.done(cfg)) continue;
      any = true;
      const auto& g = groups[gi];
      Kernel* k = cfg.hot ? g[0] : g[r.next++ % g.size()];
      if (flusher) flusher->flush();
      const auto t0 = Clock::now();
      k->run();
      const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
      r.add(device ? k->last_device_seconds() : wall);
    }
    if (!any) break;
    if (std::chrono::duration<double>(Clock::now() - wall0).count() >= wall_cap) {
      bool enough = true;  // past the cap, stop once every group has its minimum
      for (const Reps& r : reps)
        enough = enough && static_cast<int>(r.times.size()) >= cfg.min_reps;
      if (enough) break;
    }
  }
  for (std::size_t gi = 0; gi < groups.size(); ++gi) out[gi] = reps[gi].summary();
  return out;
}

Timing time_kernels(std::span<Kernel* const> kernels, std::size_t bytes_per_set,
                    const TimingConfig& cfg) {
  if (kernels.empty()) return {};
  const std::vector<Kernel*> one(kernels.begin(), kernels.end());
  return time_interleaved(std::span<const std::vector<Kernel*>>(&one, 1), bytes_per_set, cfg)[0];
}

}  // namespace attain
