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
  int min_reps = 5;           // (3 when one run outlasts max_seconds)
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

// What a caller of run_bench can watch and steer, op by op (every hook optional).
struct BenchHooks {
  // True for an (op, backend) pair to leave out: one a resumed run's file already records.
  std::function<bool(const CatalogOp& op, const std::string& backend)> skip;
  // Called before each op: true ends the run there (a deadline, Ctrl-C); the results so far are
  // returned.
  std::function<bool()> stop;
  // Called before each op (e.g. to sample the ceilings now and then).
  std::function<void()> before_op;
  // Each op's results once all its backends ran (e.g. to write them to the results file).
  std::function<void(std::span<const Result> op_results)> op_done;
};

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
  BenchHooks hooks;  // skip and op_done apply to one-round runs
};

// Merges one run of the op list into the results kept so far (the same ops and backends, in
// any order): an op and backend that ran ok in both keeps the run with the lower median;
// a wrong answer or an error in either run stays, whatever the other's speed.
void keep_faster_round(std::vector<Result>& kept, const std::vector<Result>& round);

// Available memory now (MemAvailable), in bytes.
double available_memory_bytes();
// The memory an op's inputs may take by default: 80% of what is available now
// (BenchConfig::memory_limit_bytes = 0).
double default_memory_limit_bytes();
// Throws InputError naming what `op` needs and what is available when its inputs take more
// than default_memory_limit_bytes(): a command given that one op refuses it before allocating.
void require_memory_for(const Op& op);

// Measures every op on every backend: verification before timing, unsupported pairs and
// wrong answers recorded with their reason. `libraries` receives each backend's version().
std::vector<Result> run_bench(const std::vector<CatalogOp>& ops, const BenchConfig& cfg,
                              const Roofline& roof, std::map<std::string, std::string>* libraries);

// The seconds an op is expected to take to measure on `backends` backends (input sets filled,
// verified, timed to the budget), from its FLOPs and bytes at the roofline: a weight for the
// progress bar's ETA, which scales it by the time the ops done so far really took.
double expected_seconds(const Op& op, const Roofline& roof, const TimingConfig& timing,
                        std::size_t backends);

// A progress bar with ETA on stderr when `on`: ops done of the total, the ETA from the work
// left (each op weighted by expected_seconds) at the rate the work done so far took. On a
// terminal a bar redrawn in place; otherwise (a log) one plain line a minute at most.
class ProgressBar {
 public:
  // total_work < 0: every op weighs the same. `unit` names what is counted in the log lines.
  ProgressBar(bool on, std::size_t total, double total_work = -1, std::string unit = "ops");
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  void update(std::size_t done, double work_done, const std::string& what);
  void update(std::size_t done, const std::string& what) {
    update(done, static_cast<double>(done), what);
  }

 private:
  static constexpr double kLineSeconds = 60;
  bool on_, tty_;
  std::size_t total_;
  double total_work_;
  std::string unit_;
  std::chrono::steady_clock::time_point t0_;
  double last_line_s_ = 0, last_draw_s_ = 0;
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
  // backend -> group ("all", "phase=decode", "kind=gemm", ...) -> efficiency aggregate, over
  // the ok results that do not exceed their ceiling
  std::map<std::string, std::map<std::string, Aggregate>> efficiency;
  // backend -> the same ops' efficiency against the ceilings sampled near each (local_efficiency)
  std::map<std::string, Aggregate> local_efficiency;
  // backend -> results faster than their ceiling (Result::exceeds_ceiling), left out above
  std::map<std::string, std::size_t> ceiling_errors;
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
// A run's headline as a Markdown table (what the README shows): per backend the ops that ran
// of the op list, its geomean efficiency against the run's ceilings and against those sampled
// beside each op, by dtype and by phase, and the first backend's speed relative to it; then the
// machine, the ceilings used and how far the samples moved during the run. backend_order empty:
// the backends in the file's order.
std::string format_headline(const ResultsFile& f, std::vector<std::string> backend_order = {});

// ---- judging a run's results against its ceilings (src/bench/ceilings.cpp) ---------------

// The roofline of the ceilings measured during a run (the highest of each over the checks;
// threads as the run's): what the machine gave while the ops were timed.
Roofline checked_roofline(const std::vector<CeilingsCheck>& checks);
// Each figure the higher of a's and b's (their sources joined): the best ceilings known.
Roofline best_of(const Roofline& a, const Roofline& b);
// Judges every ok result against `roof` (attainable_tflops, efficiency) and, where checks with
// the run's threads were measured, against the ceilings sampled nearest it in time
// (local_efficiency: the higher of each figure of the check before it and the check after it,
// each within 15 minutes of it; none: no local figure).
void judge_results(std::vector<Result>& results, const Roofline& roof,
                   const std::vector<CeilingsCheck>& checks);
// Raises the figures of `c` (the probe's ceilings of this machine, with `threads` the run's
// thread count) that the run measured higher: the checks, and the results faster than their
// roofline `roof` (a memory-bound op's bytes / time, a compute-bound op's FLOPs / time). Only
// runs on 1 thread or on all of c.cores raise a figure (the probe holds only those). Returns
// one line per figure raised.
std::vector<std::string> raise_from_run(HostCeilings& c, int threads,
                                        const std::vector<CeilingsCheck>& checks,
                                        const std::vector<Result>& results, const Roofline& roof);
// The checks beside the ceilings the efficiencies use (start and end one line each, the samples
// between summarized); "" when there are none.
std::string format_checks(const MachineInfo& m);

}  // namespace attain
