// The automatic scheduler: per-shape GEMM schedules for the attain engine.
//
//   heuristic()   readable rules from the shape and the machine (the starting point)
//   candidates()  every schedule worth trying for a call (the heuristic's and the default's
//                 among them)
//   estimate()    an analytical cost model: weight / activation traffic at the bandwidth the
//                 region's threads get, compute at the kernel's fraction of the FMA peak,
//                 packing and conversion work, the busiest thread (blocks dealt to threads
//                 largest first) and the fork/join of every parallel region
//   search()      measures the model's top candidates cold-cache (and the default, always),
//                 stopping early once the model says nothing left can win
//   Scheduler     the choice at run time: the tuning cache's entry, else the nearest tuned
//                 shape's schedule, else the model's best
// `default` is gemm::Schedule{}: the engine's own fixed heuristic, one region of all threads,
// batched and grouped items fused into one region where the engine judges it pays
// (gemm::Fuse::automatic).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "attain/catalog.hpp"
#include "attain/device.hpp"
#include "attain/gemm.hpp"
#include "attain/tune_cache.hpp"

namespace attain::tune {

// What the cost model knows about the machine.
struct Machine {
  int threads = 1;             // threads a call may use (the region's maximum)
  double fma_gflops_1t = 100;  // fp32 FMA peak of one thread
  double bf16_gflops_1t = 0;   // bf16 dot peak of one thread (0: none; the bf16 pairs)
  double read_gbps_1t = 20;    // streaming read, one thread
  double read_gbps_all = 40;   // streaming read, `threads` threads
  double region_s = 3e-6;      // one fork/join with workers awake
  double wake_s = 30e-6;       // the first region after the workers went to sleep
  std::int64_t llc_bytes = 32 << 20;
  // From the probe's ceilings (interpolating bandwidth to `threads`).
  static Machine from(const HostCeilings& host, int threads);
  // Read bandwidth one thread gets when `active` threads stream at once.
  double bw_per_thread(int active) const;
};
// This host's model for `threads` threads from the (cached) probe, made once per thread count.
const Machine& host_machine(int threads);

Key key_of(const gemm::Call& c);

// Rows of every item of the call with any (n and k are shared), in item order.
std::vector<std::int64_t> item_rows(const gemm::Call& c);
// What schedule s runs for the call, as text: describe() of the first item's resolved schedule,
// plus, for batched and grouped calls, whether the items share one region ("fused-items") or
// have one each ("item-regions"), as the engine decides it (gemm::fuses_items).
std::string describe(const gemm::Call& c, const gemm::Schedule& s);
gemm::Schedule heuristic(const gemm::Call& c, const Machine& m);
std::vector<gemm::Schedule> candidates(const gemm::Call& c, const Machine& m);
double estimate(const gemm::Call& c, const gemm::Schedule& s, const Machine& m);  // seconds

struct SearchOptions {
  int top = 10;           // measure at most this many (the default and each family first)
  double budget_s = 1.5;  // wall-clock budget per call
  double seconds_per_trial = 0.04;
  double stop_ratio = 1.15;    // stop when the next candidate's corrected estimate is
                               // this much slower than the best measured
  double keep_default = 0.05;  // keep the default unless a candidate beats it by this
  std::int64_t llc_bytes = 32 << 20;
  std::size_t bytes = 0;  // the call's footprint (decides flush vs warm)
};
struct SearchResult {
  gemm::Schedule best;
  std::string best_text;
  std::vector<Trial> trials;  // measured, in measuring order; the default first
  double default_s = 0, best_s = 0;
  int ranked = 0;  // candidates the model ranked
};
// Runs the call repeatedly (it must be bound to real buffers; outputs are overwritten).
SearchResult search(gemm::Call c, const Machine& m, const SearchOptions& opt);

// Why a tuning-cache entry may not run for its key ("" if it may): a schedule field outside its
// range (gemm::check_schedule_ranges), text this build cannot read, or a thread grid that does
// not make the key's threads. The Scheduler drops such entries when it reads the cache, so they
// are never run and `attain tune` measures their ops again.
// `parsed`, where given, receives the schedule of an entry that may run.
std::string entry_fault(const Entry& e, gemm::Schedule* parsed = nullptr);

// The run-time choice. Thread-safe; one per process is enough (instance()).
class Scheduler {
 public:
  enum class Source { tuned, nearest, model };
  struct Choice {
    gemm::Schedule schedule;
    Source source = Source::model;
  };
  // Loads the cache file (warnings go to stderr once).
  explicit Scheduler(std::filesystem::path cache_file);
  static Scheduler& instance();  // the default cache path
  // Warm: a hash lookup of the call's shape in a memo of earlier choices (no strings built).
  Choice choose(const gemm::Call& c, const Machine& m) const;
  Cache& cache() {  // writable access may change entries: forget the memo
    std::lock_guard<std::mutex> lock(mu_);
    memo_.clear();
    return cache_;
  }

 private:
  Choice choose_uncached(const gemm::Call& c, const Machine& m) const;
  Cache cache_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::uint64_t, Choice> memo_;
};
std::string_view source_name(Scheduler::Source s);

}  // namespace attain::tune

namespace attain {
class TensorSet;
struct RunOptions;
namespace backends {
// The harness op as an engine call without data: shapes, dtypes, form, strides (enough for
// the scheduler's key). Throws std::logic_error for mla_decode.
gemm::Call gemm_shape(const Op& op, const RunOptions& opt);
// The same call bound to `set` (what the attain backend runs).
gemm::Call gemm_call(TensorSet& set, const RunOptions& opt);
}  // namespace backends
}  // namespace attain

namespace attain::tune {

// Tuning catalog ops (attain tune, and attain bench --schedule auto for the ops the cache
// lacks): each op's inputs are made as the bench makes them, the search runs, the winner is
// verified against the reference and stored in the cache with every trial.
struct TuneConfig {
  int threads = 1;
  int stages = 2;
  std::uint64_t seed = 42;
  bool force = false;     // re-tune ops already in the cache
  bool progress = false;  // progress bar on stderr
  SearchOptions search;
};
struct TuneOutcome {
  CatalogOp op;
  Key key;
  std::string status;  // "tuned", "cached", "skipped" (not a GEMM), "wrong", "error"
  std::string reason;
  SearchResult result;  // for "tuned"
};
std::vector<TuneOutcome> tune_ops(const std::vector<CatalogOp>& ops, const TuneConfig& cfg,
                                  Scheduler& sched, const Machine& m);

// ---- what `attain tune` prints and writes (src/tune/report.cpp) ---------------------------

// tune_ops() and what it took: the outcomes, the seconds, the warm-cache dispatch time of the
// tuned shapes, and the cache they went to.
struct TuneRun {
  std::vector<TuneOutcome> outcomes;
  double seconds = 0;
  double dispatch_s = 0;  // mean time of one scheduler choice over the tuned shapes, warm
  std::string cache_path;
  std::size_t entries = 0;
  int threads = 0;
  int failures() const;  // outcomes "wrong" or "error"
};
TuneRun tune_run(const std::vector<CatalogOp>& ops, const TuneConfig& cfg, Scheduler& sched,
                 const Machine& m);
nlohmann::json to_json(const TuneRun& r);
std::string tune_run_text(const TuneRun& r);
// `attain tune --explain SPEC`: the heuristic and the engine's reasons, the cost model's
// ranking and the measured times of the top candidates, as text. InputError for mla_decode.
std::string explain_op(const std::string& spec, const TuneConfig& cfg, Scheduler& sched,
                       const Machine& m);

}  // namespace attain::tune
