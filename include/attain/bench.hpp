// The benchmark harness: inputs, verification, timing, roofline, results.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attain/backend.hpp"
#include "attain/device.hpp"
#include "attain/op.hpp"

namespace attain {

struct TimingConfig {
  double max_seconds = 0.25;  // time budget per (op, backend), timing only
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
Timing time_kernels(std::span<Kernel* const> kernels, std::size_t bytes_per_set,
                    const TimingConfig& cfg);

// Times several backends' kernels (one group each, every group bound to the same op's input
// sets) in turn, one timed run of each group per round, the order reversed every round: a
// machine whose speed drifts over seconds shifts every group alike, so their ratio holds. Each
// group stops by time_kernels' rules on its own runs; a flush (when needed) precedes every run.
std::vector<Timing> time_interleaved(std::span<const std::vector<Kernel*>> groups,
                                     std::size_t bytes_per_set, const TimingConfig& cfg);

// The end of the run of consecutive backends from b that share b's interleave group (timed
// together by time_interleaved); b + 1 for a backend of no group. group_of(i): backend i's
// group (empty: none), for i < n.
template <class GroupOf>
std::size_t interleave_run_end(std::size_t b, std::size_t n, GroupOf&& group_of) {
  const std::string_view g = group_of(b);
  std::size_t e = b + 1;
  while (!g.empty() && e < n && group_of(e) == g) ++e;
  return e;
}

// The LLC size cold-cache timing works with (a flush reads twice this): half the probe's
// measured cold_bytes; where the probe has none, the reported L3 kept within 8..64 MiB
// (virtual machines can report the whole socket's L3 to a guest that owns a slice of it).
std::int64_t timing_llc_bytes(const HostCeilings& host);

// How many input sets cold-cache timing needs for an op of this footprint.
int rotation_sets(std::size_t bytes_per_set, const TimingConfig& cfg);

}  // namespace attain

#include <map>

#include "attain/results.hpp"

namespace attain {

struct BenchConfig {
  std::vector<std::string> backends;
  RunOptions run;  // threads, stages, schedule
  TimingConfig timing;
  std::uint64_t seed = 42;
  bool progress = false;          // progress bar with ETA on stderr
  double memory_limit_bytes = 0;  // 0: 80% of the memory available now
  // Whole runs of the op list, the backends in reverse order every other run; each op and
  // backend keeps its fastest run (keep_faster_round).
  int rounds = 1;
};

// Merges one run of the op list into the results kept so far (the same ops and backends, in
// any order): an op and backend that ran ok in both keeps the run with the lower median;
// a wrong answer or an error in either run stays, whatever the other's speed.
void keep_faster_round(std::vector<Result>& kept, const std::vector<Result>& round);

// Available memory now (MemAvailable), in bytes.
double available_memory_bytes();

// Measures every op on every backend: verification before timing, unsupported pairs and
// wrong answers recorded with their reason. `libraries` receives each backend's version().
std::vector<Result> run_bench(const std::vector<CatalogOp>& ops, const BenchConfig& cfg,
                              const Roofline& roof, std::map<std::string, std::string>* libraries);

// A progress bar with ETA on stderr (only when stderr is a terminal and `on`).
class ProgressBar {
 public:
  ProgressBar(bool on, std::size_t total);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  void update(std::size_t done, const std::string& what);

 private:
  bool on_;
  std::size_t total_;
  std::chrono::steady_clock::time_point t0_;
};

// Linear-interpolated quantile q in [0, 1] of an ascending, non-empty vector.
double quantile_sorted(const std::vector<double>& sorted, double q);

// Geometric-mean aggregates.
struct Aggregate {
  std::size_t count = 0;
  double geomean = 0, median = 0, q1 = 0, q3 = 0;
};
Aggregate aggregate(std::vector<double> values);  // values must be positive
nlohmann::json to_json(const Aggregate& a);       // {count, geomean, median, q1, q3}

struct Summary {
  // backend -> group ("all", "phase=decode", "kind=gemm", ...) -> efficiency aggregate
  std::map<std::string, std::map<std::string, Aggregate>> efficiency;
  // "a/b" -> speed ratio (time_b / time_a: > 1 means a is faster), over ops both ran
  std::map<std::string, Aggregate> speed_ratio;
  std::map<std::string, std::map<std::string, std::size_t>>
      status_counts;  // backend -> status -> n
};
Summary summarize(const std::vector<Result>& results,
                  const std::vector<std::string>& backend_order);
nlohmann::json to_json(const Summary& s);
std::string format_summary(const Summary& s, const std::vector<std::string>& backend_order);
std::string format_table(const std::vector<Result>& results,
                         const std::vector<std::string>& backend_order);

// The roofline of the ceilings measured during a run (the highest of each over the checks;
// threads as the run's): what the machine gave while the ops were timed.
Roofline checked_roofline(const std::vector<CeilingsCheck>& checks);
// backend -> geomean efficiency of its ops that ran against checked_roofline(checks).
std::map<std::string, Aggregate> checked_efficiency(const std::vector<Result>& results,
                                                    const std::vector<CeilingsCheck>& checks);
// The checks beside the probe's figures (p: the roofline the efficiencies use), one line each.
std::string format_check_lines(const std::vector<CeilingsCheck>& checks, const Roofline& p);
// The checks beside the probe's figures, and each backend's efficiency against them ("" when
// there are no checks).
std::string format_checks(const MachineInfo& m, const std::vector<Result>& results,
                          const std::vector<std::string>& backend_order);

}  // namespace attain
