// `attain cluster` as library calls: one training job simulated (step time on the chip's
// roofline, failures, checkpoints, a Monte Carlo of runs), or goodput against scale. Their
// files, schemas "attain.cluster/1" and "attain.cluster-sweep/1", are written, read and printed
// by src/cluster/job_file.cpp, the one place for both formats.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attain/cluster.hpp"

namespace attain {
struct ClusterRun;
struct ClusterSweep;
}  // namespace attain

namespace attain::cluster {

inline constexpr const char* kRunSchema = "attain.cluster/1";
inline constexpr const char* kSweepSchema = "attain.cluster-sweep/1";

// What a job is: the chip, the model, the parallel layout, the failures and the recovery.
// Every field has the default `attain cluster` shows in --help.
struct JobRequest {
  std::string device = "h100-sxm", dtype = "bf16", model = "llama-3.1-405b";
  double peak_tflops = 0, mem_gbps = 0, mem_gb = -1, scaleup_gbps = 0;  // overrides (0, -1: none)
  std::vector<std::string> assume_peaks;  // assume_peak() rules for peaks the vendor omits
  std::int64_t chips = 16384, seq = 8192, batch = 2048;
  int tp = 0, pp = 0, ep = 0, cp = 1, micro_batch = 1, virtual_stages = 0;
  // efficiency 0: the device file's training_efficiency, else kDefaultEfficiency.
  double efficiency = 0, overlap = 0.8, overlap_slowdown = 0.189;
  std::string efficiency_from, efficiency_backend;  // results the efficiency comes from
  std::int64_t efficiency_ops = 0;                  // ... and how many (0: given)
  std::vector<MeasuredOp> measured;                 // ... each op once (per-op efficiencies)
  std::string allreduce = "best";
  bool recompute = false, unfused_attention = false;
  bool scale_batch = false;  // raise --batch to whole micro-batches on every DP rank
  Topology topo;
  double days = 54, tokens = 0;
  std::string failures = "llama3";
  double detect_min = -1, restart_min = -1, rewarm_min = -1;  // < 0: the table's
  std::string checkpoint = "async", interval = "auto", spares = "auto";
  double storage_gbps = 2000, ckpt_bytes_per_param = 14, ckpt_overhead_s = 2, host_copy_gbps = 25;
  double repair_hours = 48, replace_min = 60, straggler_fraction = 0, straggler_slowdown = 1;
  double target_ettr = 0, target_goodput = 0;  // > 0: solve for the spares that reach it
  int runs = 16, threads = 0;
  std::uint64_t seed = 1;
  bool timeline = true;             // record run 0's interruptions
  std::vector<std::int64_t> sweep;  // chip counts of a sweep (empty: one job)
  std::string created, command;     // provenance

  // Bounds and names (InputError); reads --efficiency-from's results into `efficiency`.
  void validate();
};

struct JobOutcome {
  JobRequest request;
  TrainingSetup setup;
  StepBreakdown step;
  SimConfig sim;
  FailureTable failures;
  MonteCarlo mc;
  std::optional<TargetPlan> target;  // with --target-ettr / --target-goodput
};
// `progress(runs done)` on the calling thread.
JobOutcome simulate_job(const JobRequest& req, const std::function<void(int)>& progress = {});

// A sweep's ways of recovering, compared at every scale.
struct SweepVariant {
  std::string name, what;
  Checkpoint checkpoint = Checkpoint::sync;
  bool daly = false, spares = false;
};
struct SweepVariantOutcome {
  SweepVariant variant;
  MonteCarlo mc;
  int spare_nodes = 0;
};
struct SweepPoint {
  TrainingSetup setup;  // chips rounded down to whole TP x PP (x EP) groups
  StepBreakdown step;
  std::vector<SweepVariantOutcome> variants;
  std::optional<TargetPlan> target;  // with --target-ettr / --target-goodput
};
struct SweepOutcome {
  JobRequest request;
  FailureTable failures;
  double fixed_interval_min = 60;
  std::vector<SweepPoint> points;
};
// `progress(runs done of all points and variants, what)` on the calling thread.
SweepOutcome sweep_jobs(const JobRequest& req,
                        const std::function<void(std::size_t, const std::string&)>& progress = {});
std::size_t sweep_runs(const JobRequest& req);  // runs a sweep makes in all

nlohmann::ordered_json to_json(const JobOutcome& o);
nlohmann::ordered_json to_json(const SweepOutcome& o);
std::string job_text(const JobOutcome& o);
std::string sweep_text(const SweepOutcome& o);

}  // namespace attain::cluster
