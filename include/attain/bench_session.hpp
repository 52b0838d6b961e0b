// `attain bench` as library calls: a run of record around run_bench() (the ceilings measured
// again at its start and end and sampled between ops, a results file written op by op and
// resumable, a deadline, Ctrl-C, sharding under mpirun, efficiencies judged against the best
// ceilings known at the end), and one decoder layer's op chain end to end (`--layer`), whose
// report (schema "attain.layer/1") src/bench/layer_report.cpp writes, reads and prints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "attain/bench.hpp"
#include "attain/layer.hpp"
#include "attain/results.hpp"

namespace attain {

// Runs of this many ops or more measure the ceilings again at their start and end and sample
// them between ops, unless told otherwise.
inline constexpr std::size_t kRecheckMinOps = 8;

// "90m", "6h", "45s", "3600": seconds. InputError for anything else.
double parse_duration(std::string_view text);

enum class Recheck { by_size, always, never };

struct BenchRequest {
  std::vector<CatalogOp> ops;
  BenchConfig cfg;        // backends, threads, timing, seed, rounds; progress: a bar on stderr
  std::string out;        // the results file ("" : none), written op by op with one round
  bool resume = false;    // finish `out`, keeping what it records
  double deadline_s = 0;  // start no op after this long (0: none)
  Recheck recheck = Recheck::by_size;
  double sample_every_s = 60;    // between ops, in runs that re-check (0: never)
  bool tune = true;              // auto schedules: tune the ops the tuning cache lacks first
  bool verbose = true;           // notes on stdout and stderr
  std::string created, command;  // provenance

  // The settings that make no sense together, or out of range: InputError.
  void validate() const;
  // Whether a run of `n_ops` ops measures the ceilings again (the op list's size by default; a
  // layer run counts its own ops).
  bool rechecks(std::size_t n_ops) const {
    return recheck == Recheck::always || (recheck == Recheck::by_size && n_ops >= kRecheckMinOps);
  }
};

struct BenchOutcome {
  ResultsFile file;  // judged against the best ceilings known at the end of the run
  Summary summary;
  bool complete = true;
  int stop_signal = 0;        // the SIGINT or SIGTERM that stopped the run, 0: none
  bool holds_results = true;  // false on the ranks but 0 under mpirun
  bool already_done = false;  // --resume of a file that is complete: nothing ran
  int exit_status() const { return complete ? 0 : stop_signal != 0 ? 128 + stop_signal : 3; }
  // "attain: interrupted after 3 of 8 ops; ..." for an incomplete run, else "".
  std::string incomplete_note(const std::string& out) const;
};

// What `attain bench --json` prints: the results file with the run's summary under "summary".
nlohmann::json to_json(const BenchOutcome& o);

// The run of record. Ctrl-C (SIGINT) or SIGTERM stops it between ops, its file written; a
// second one ends the process. Under mpirun the ops are sharded round robin over the ranks,
// each rank writes its shard to OUT.rank<r>of<R> op by op, and rank 0 gathers every result in
// the op list's order into OUT.
BenchOutcome run_bench_session(const BenchRequest& req, const HostCeilings& host);

// The results file's header as `attain bench` writes it: machine, ceilings and settings.
ResultsFile results_header(const BenchRequest& req, const HostCeilings& host);

// ---- one decoder layer (attain bench --layer) ------------------------------------------------

inline constexpr const char* kLayerSchema = "attain.layer/1";

struct LayerReport {
  std::string layer;  // MODEL:PHASE:TOKENS as asked
  std::string model;  // the config's name
  PassSpec pass;
  int threads = 0;
  std::string created, command;
  std::vector<LayerOp> ops;
  double flops = 0, bytes = 0;
  double floor_s = 0;          // the layer with every op at the probe's roofline
  double checked_floor_s = 0;  // ... at the ceilings measured during the run (0: none)
  std::vector<CeilingsCheck> checks;
  std::vector<LayerResult> results;

  int stages() const;
  // The first backend that ran ok: what the others' speedups are against (nullptr: none).
  const LayerResult* baseline() const;
  bool any_failed() const;  // a wrong answer or an error
};

// The layer's op chain and its roofline floor, from "MODEL:PHASE:TOKENS" (InputError for a bad
// spec); nothing runs yet.
LayerReport plan_layer(const std::string& layer, std::int64_t context, DType dtype, int threads,
                       const Roofline& roof);
// Times the planned layer on each backend of `req`, the ceilings checked before and after
// unless req.recheck is never.
void run_layer_session(LayerReport& r, const BenchRequest& req, const HostCeilings& host);

nlohmann::json to_json(const LayerReport& r);
LayerReport layer_report_from_json(const nlohmann::json& j, std::string_view origin);
LayerReport read_layer_report(const std::filesystem::path& file);
// What `attain bench --layer` prints: the op chain, then the timings.
std::string layer_plan_text(const LayerReport& r);
std::string layer_results_text(const LayerReport& r, const Roofline& roof);

}  // namespace attain
