// Training at the scale of thousands of chips: step time, failures, checkpoints, goodput.
//
// Three layers, each usable alone:
//   1. step_time(): one training step on a healthy cluster, from the model's matrix ops on the
//      chip's roofline (times a software efficiency) plus alpha-beta models of the collectives
//      (TP all-gather/reduce-scatter, EP all-to-all, PP point-to-point, DP all-reduce) and the
//      pipeline bubble, with a communication/compute overlap fraction.
//   2. FailureTable: independent failure processes per component (chip, node or job), each with
//      a rate, its detection time and whether a node must be swapped. The default table `llama3`
//      reproduces the interruptions published for Llama 3 405B pre-training.
//   3. simulate(): an event-driven run of one job (events are failures, planned stops and repair
//      returns, never individual steps) with checkpoints (sync, async or in-memory), hot spares
//      and stragglers; monte_carlo() repeats it on all cores and reports confidence intervals.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "attain/dtype.hpp"
#include "attain/op.hpp"

namespace attain {
struct ModelConfig;
struct DeviceSpec;
struct ResultsFile;
}  // namespace attain

namespace attain::cluster {

// ---------------------------------------------------------------- hardware
struct Chip {
  std::string id;
  double peak_tflops = 0;          // dense, at the training dtype
  double mem_bw_gbps = 0;          // HBM / DRAM, GB/s
  double mem_gb = 0;               // capacity (0 = unknown)
  double scaleup_gbps = 0;         // per chip, one direction (NVLink, HCCS, Infinity Fabric), GB/s
  std::string peak_source;         // where peak_tflops comes from (a datasheet, or "ASSUMED ...")
  double training_efficiency = 0;  // the device file's sustained fraction in training (0: none)
};
// The efficiency `attain cluster` assumes for a chip whose device file gives no
// training_efficiency and where neither --efficiency nor --efficiency-from is given: MegaScale's
// A100 runs are within 4-8% of the record at 0.7 (docs/cluster.md, section 7).
inline constexpr double kDefaultEfficiency = 0.7;
// Seam to the device database (device.hpp): the numbers a simulation needs.
Chip chip_from_device(const DeviceSpec& d, DType dt);
// Throws InputError for unknown ids and for a dtype without a peak (saying why: not published,
// not supported); `assume_peaks` are assume_peak() rules applied first.
Chip load_chip(std::string_view device_id, DType dt,
               const std::vector<std::string>& assume_peaks = {});

struct Topology {
  int chips_per_node = 8;
  double intra_gbps = 0;         // per chip, one direction, inside a node; 0 = chip.scaleup_gbps
  double intra_latency_us = 3;   // alpha of one intra-node message
  double inter_gbps = 50;        // per chip NIC, one direction (400 Gb/s = 50 GB/s)
  double inter_latency_us = 10;  // alpha of one inter-node message
  // The scale-out network: each chip's NIC reaches every chip in its pod at inter_gbps (a
  // non-blocking, rail-optimised or full-bisection tier); between pods the tier above is
  // oversubscribed, so each chip's share of it is inter_gbps / oversubscription. 0: one pod.
  std::int64_t pod_chips = 0;
  double oversubscription = 1;
};

// ---------------------------------------------------------------- the model's work
struct WorkItem {
  Op op;              // one matrix op of one sequence (its shape on a chip: chip_op)
  double count = 1;   // occurring `count` times per forward pass
  bool head = false;  // the LM head: once per pass, after the last layer (on the last stage)
  // QK^T or PV (a batched GEMM, or MLA): fused kernels keep the scores on chip.
  bool attention() const {
    return op.kind == OpKind::batched_gemm || op.kind == OpKind::mla_decode;
  }
};
// An op measured on a chip: the shape that ran and the fraction of its roofline it reached.
struct MeasuredOp {
  Op op;
  double efficiency = 0;
};
struct ModelWork {
  std::string name;
  double params = 0, active_params = 0;  // total; touched per token
  double expert_params = 0;              // MoE: routed-expert weights (sharded by EP)
  std::int64_t layers = 0, hidden = 0, seq = 0;
  std::int64_t kv_dim = 0;  // K (and V) width per token: KV heads x head size (0: hidden)
  std::int64_t moe_layers = 0, experts = 0, experts_per_tok = 0;
  std::vector<WorkItem> forward;  // forward pass of ONE sequence of `seq` tokens
  // The non-matrix ops' memory traffic in elements per token, forward: per layer (norms,
  // residual adds, rotary embedding, the MLP's activation, MoE token permutation; averaged over
  // the layers) and once after the last (the loss reading the logits). Set by the builder that
  // knows the architecture (nonmatrix_elems); 0 counts none.
  double nonmatrix_per_layer = 0, nonmatrix_loss = 0;
  double forward_flops() const;  // per sequence
};
// Seam to the catalog (catalog.hpp): model_ops(cfg, prefill of `seq` tokens) -> work items.
ModelWork model_work(const ModelConfig& cfg, std::int64_t seq, DType dt);
// A GPT-style dense transformer described by its shape (used where the catalog has no config,
// e.g. GPT-3 175B for MegaScale): per layer QKV (K and V over `kv_heads` heads, 0 = `heads`:
// grouped-query attention when fewer), attention (QK^T, PV), output projection and a two-matrix
// MLP (three with gated=true), plus the LM head.
ModelWork transformer_work(std::string name, std::int64_t layers, std::int64_t hidden,
                           std::int64_t ffn, std::int64_t heads, std::int64_t vocab,
                           std::int64_t seq, DType dt, bool gated = false,
                           std::int64_t kv_heads = 0);
// The non-matrix elements one token moves through memory in one layer's forward pass: two
// norms (read and write the hidden state: 4 h), two residual adds (read two, write one: 6 h),
// rotary embedding on the queries and keys (read and write: 2 (q + kv)), the MLP's activation
// over `act` values (gated: read gate and up, write one: 3 act; else 2 act) and, with `routed`
// expert copies per token, MoE dispatch and combine (read and write each copy: 4 routed h).
double nonmatrix_elems(std::int64_t hidden, std::int64_t q_dim, std::int64_t kv_dim, double act,
                       bool gated, double routed = 0);

// ---------------------------------------------------------------- collectives (alpha-beta)
struct Link {
  double gbps = 0;        // per rank, one direction, GB/s
  double latency_us = 0;  // alpha per message
};
// `bytes` is the full buffer each rank holds (all-reduce), the gathered result (all-gather),
// the input (reduce-scatter), everything one rank sends (all-to-all) or the message (p2p).
double ring_allreduce_s(double bytes, int ranks, const Link& l);
double tree_allreduce_s(double bytes, int ranks, const Link& l);  // double binary tree
double allgather_s(double bytes, int ranks, const Link& l);       // ring
double reduce_scatter_s(double bytes, int ranks, const Link& l);  // ring
double alltoall_s(double bytes, int ranks, const Link& l);        // pairwise
double p2p_s(double bytes, const Link& l);

// ---------------------------------------------------------------- step time
enum class AllReduce { ring, tree, best };

struct Parallelism {
  int tp = 0, pp = 0, ep = 0;  // 0 = choose (see choose_parallelism)
  int cp = 1;                  // context parallel: each sequence's tokens split over CP ranks
  int micro_batch = 1;         // sequences per micro-batch
  int virtual_stages = 0;      // interleaved 1F1B chunks per rank; 0 = choose
};

struct TrainingSetup {
  Chip chip;
  Topology topo;
  ModelWork work;
  Parallelism par;
  std::int64_t chips = 0;
  std::int64_t global_batch = 0;           // sequences per step
  double efficiency = kDefaultEfficiency;  // fraction of the roofline the kernels reach
  std::string efficiency_source;           // where it comes from, for the text output
  double overlap = 0.8;                    // fraction of TP/EP/DP/PP traffic hidden under compute
  // How much slower compute runs while communication hides under it (the collectives' kernels
  // take SMs and memory bandwidth from it): 18.9%, the mean slowdown measured across GPT and
  // LLaMA training on 4 x A100 / H100 / MI250 / MI210 (arXiv:2507.03114, its abstract).
  double overlap_slowdown = 0.189;
  AllReduce allreduce = AllReduce::best;
  bool recompute = false;       // full activation recomputation (one more forward)
  bool fused_attention = true;  // attention as one fused kernel (FlashAttention): compute-bound
  double grad_bytes = 2;        // bytes per gradient element reduced across DP (bf16)
  double act_bytes = 2;         // bytes per activation element sent (bf16)
  double optimizer_bytes = 16;  // bytes touched per parameter in the optimizer update
  bool scale_batch = false;     // raise the batch to whole micro-batches on every DP rank
  // Per-op efficiencies measured on a chip (efficiency_from_results): each op runs at the
  // efficiency of the nearest measured op of its kind and dtype; with none, at `efficiency`.
  std::vector<MeasuredOp> measured;
};

// One op of the forward pass as one chip runs it, and the time it takes there.
struct OpStep {
  Op op;                  // the shape on one chip (chip_op)
  double count = 0;       // times per forward pass of the whole model
  double efficiency = 0;  // the fraction of its roofline it runs at
  std::string measured;   // the measured op that efficiency is from ("": the setup's efficiency)
  double distance = 0;    // how far that op's shape is: sum of |ln ratio| of M, N, K, batch, groups
  double fwd_s = 0;       // its share of one micro-batch's forward on one stage
};

struct StepBreakdown {
  int tp = 1, cp = 1, pp = 1, dp = 1, ep = 1, virtual_stages = 1;
  std::int64_t micro_batches = 1;  // per pipeline per step: the busiest DP rank's
  std::int64_t global_batch = 0;   // sequences per step: the user's, or raised by scale_batch
  std::int64_t chips_used = 0;     // TP x PP x DP: the chips that train
  std::int64_t chips_left = 0;     // the rest, in no whole group (job.cpp: spares or idle)
  double fwd_s = 0, bwd_s = 0;     // matrix ops: one micro-batch on the mean stage
  double compute_s = 0;            // matrix ops: all micro-batches on the mean stage
  double nonmatrix_fwd_s = 0;      // non-matrix ops: one micro-batch's forward, mean stage
  double nonmatrix_s = 0;          // non-matrix ops: all micro-batches, forward and backward
  // Pipeline stages: stage_layers is the most layers one stage holds, last_layers the last
  // stage's (beside the LM head); stage_load = the busiest stage's work / the mean's (>= 1).
  std::int64_t stage_layers = 0, last_layers = 0;
  double stage_load = 1;
  double imbalance_s = 0;  // what the busiest stage adds over the mean, all micro-batches
  double bubble_s = 0;
  double tp_comm_s = 0, cp_comm_s = 0, ep_comm_s = 0, pp_comm_s = 0, dp_comm_s = 0;  // per step
  double exposed_comm_s = 0;  // the part of the above not hidden under compute
  double contention_s = 0;    // compute slowed while the hidden part runs beside it
  double optimizer_s = 0;
  double step_s = 0;
  double tokens = 0;              // per step
  double model_flops = 0;         // per step: 3 x forward (6ND-style, attention included)
  double mfu = 0;                 // model_flops / (chips_used * peak * step_s)
  std::vector<OpStep> ops;        // the compute, op by op
  std::int64_t ops_measured = 0;  // ops whose efficiency came from a measured neighbour
};

// Fills tp/pp/ep/virtual_stages left at 0: TP = chips per node for dense models (1 for MoE),
// EP = chips per node for MoE, PP = the smallest power of two that keeps bf16 weights and
// gradients under a quarter of the chip's memory; virtual stages = min(4, layers / pp).
// The software efficiency measured by `attain bench`: the geometric mean of `efficiency` over
// the verified, measured (not projected) results with status ok, optionally only one backend's.
// Throws InputError when none qualifies.
// Imported results (`attain import`: measured elsewhere, unverified here) count as measured.
// `measured` holds each qualifying op once, at the best efficiency any backend reached on it
// (an op above its roofline is a ceiling error and left out).
struct MeasuredEfficiency {
  double efficiency = 0;  // geometric mean over the qualifying results
  std::int64_t ops = 0;
  std::vector<MeasuredOp> measured;
};
MeasuredEfficiency efficiency_from_results(const ResultsFile& f, std::string_view backend = {});

// The op one chip runs for `item` in a micro-batch of `micro_batch` sequences under TP `tp`:
// M grows with the micro-batch; Megatron's column- and row-parallel split divides the larger of
// N and K by TP (QKV, up/gate and the LM head split N, the output projection and down split K);
// attention splits its (KV) heads, and with fewer heads than TP ranks their rows.
// With context parallelism the rows (tokens, and attention's queries) split over `cp` too;
// every rank's queries meet all the sequence's keys.
Op chip_op(const WorkItem& item, int micro_batch, int tp, int cp = 1);
// The measured op nearest to `op`: the same kind and dtype, the least sum of |ln ratio| of M, N,
// K, batch and groups (written to *distance); nullptr when none has that kind and dtype.
const MeasuredOp* nearest_measured(const std::vector<MeasuredOp>& measured, const Op& op,
                                   double* distance = nullptr);

Parallelism choose_parallelism(const TrainingSetup& s);
StepBreakdown step_time(const TrainingSetup& s);  // throws InputError on impossible layouts

// ---------------------------------------------------------------- failures
enum class Scope { chip, node, job };

struct FailureCause {
  std::string name, category;
  Scope scope = Scope::chip;
  double rate_per_hour = 0;  // per unit of scope (per chip, per node, per job)
  double detect_min = -1;    // < 0: the table's default
  bool replace = false;      // the node must be swapped before the job restarts
  double published = -1;     // the count the source reports (where it does)
  std::string source;
};

struct FailureTable {
  std::string name, title, source;
  std::vector<FailureCause> causes;
  double planned_per_day = 0;  // planned (maintenance) stops of the job
  std::string planned_source;
  // Recovery defaults (minutes) and their sources (assumptions are labelled as such).
  double detect_min = 2, restart_min = 5, rewarm_min = 1;
  std::map<std::string, std::string> sources;
  // What the table was derived from, if it is a published record.
  std::int64_t observed_chips = 0;
  double observed_days = 0;
  double observed_unexpected = -1, observed_planned = -1;

  // Unexpected failures per hour for a job of `chips` chips (`chips_per_node` per node).
  double rate_per_hour(std::int64_t chips, int chips_per_node) const;
  double mttf_hours(std::int64_t chips, int chips_per_node) const;
};

FailureTable parse_failure_table(std::string_view json_text, std::string_view origin);
// A bundled name (data/failures/NAME.json), a path to a JSON file, or "none".
FailureTable load_failure_table(std::string_view name_or_path);
std::vector<std::string> bundled_failure_tables();

// Optimal checkpoint interval (minutes of compute between checkpoints) for checkpoint cost
// `delta` and mean time between failures `mtbf` (same unit). Young: sqrt(2 delta M).
// Daly's higher-order estimate: sqrt(2 delta M) [1 + sqrt(delta/(2M))/3 + delta/(18M)] - delta
// for delta < 2M, else M.
double young_interval(double delta, double mtbf);
double daly_interval(double delta, double mtbf);

// ---------------------------------------------------------------- the simulation
enum class Checkpoint { sync, async, memory };

// The simulation's bounds: a horizon of at most kMaxSimDays (ten years; a token budget may not
// need longer at the failure-free pace), at most kMaxChips chips and kMaxRuns Monte Carlo runs.
// Its cost grows with each (events per run), so a value past them is refused, not left to run.
inline constexpr double kMaxSimDays = 3650;
inline constexpr std::int64_t kMaxChips = 10'000'000;
inline constexpr int kMaxRuns = 100'000;

struct SimConfig {
  std::int64_t chips = 0;
  int chips_per_node = 8;
  double step_s = 0;  // healthy step time
  double tokens_per_step = 0;
  double model_flops_per_step = 0;
  double peak_flops_per_chip = 0;  // FLOP/s at the training dtype

  double days = 0;          // horizon; 0 = until the token budget
  double token_budget = 0;  // 0 = none

  FailureTable failures;
  double detect_min = -1, restart_min = -1, rewarm_min = -1;  // < 0: the table's values

  Checkpoint checkpoint = Checkpoint::async;
  double checkpoint_interval_min = 0;  // 0 = Daly's optimum
  double state_bytes = 0;              // the whole checkpoint
  double storage_gbps = 2000;          // aggregate write/read bandwidth of the storage, GB/s
  double host_copy_gbps = 25;          // device -> host memory per chip (async / memory snapshot)
  double peer_gbps = 50;               // per chip, to a peer's memory (in-memory replicas)
  double checkpoint_overhead_s = 2;    // fixed pause per checkpoint (barrier, coordination)

  int spare_nodes = 0;       // hot spares
  double repair_hours = 48;  // a swapped node returns to the spare pool after this
  double replace_min = 60;   // time to get a node when no hot spare is free

  double straggler_fraction = 0;  // probability that a node is slow (re-drawn at each restart)
  double straggler_slowdown = 1;  // the whole job runs this much slower while one is present

  bool timeline = false;  // record every interruption (for a report)
};

// Derived checkpoint costs (seconds) and the interval used.
struct CheckpointPlan {
  double pause_s = 0;       // compute stops for this long per checkpoint
  double persist_s = 0;     // after the pause, until the checkpoint survives a failure
  double write_sync_s = 0;  // a synchronous write (used before planned stops)
  double load_s = 0;        // reading it back at restart
  double mtbf_h = 0;        // unexpected failures of the job
  double young_min = 0, daly_min = 0;
  double interval_min = 0;  // used
};
CheckpointPlan plan_checkpoints(const SimConfig& c);

struct Interruption {
  double t_h = 0;  // wall clock since start
  bool planned = false;
  std::string cause;
  double lost_work_min = 0;  // computed work thrown away
  double down_min = 0;       // detection + waiting for a node + restart + load + re-warm
  bool spare_used = false;
};

struct RunResult {
  double wall_h = 0;
  double useful_h = 0;      // wall time of kept training compute
  double lost_work_h = 0;   // compute redone after failures
  double down_h = 0;        // not running (detect, wait, restart, load, re-warm)
  double checkpoint_h = 0;  // paused for checkpoints
  double work_s = 0;        // kept work in healthy-step seconds
  double unexpected = 0, planned = 0;
  std::map<std::string, double> by_cause;
  double spares_used = 0, replace_waits = 0;
  double ettr = 0;     // useful_h / wall_h
  double goodput = 0;  // kept model FLOPs / (chips * peak * wall)
  double tokens = 0;   // kept tokens
  bool budget_reached = false;
  std::vector<Interruption> timeline;
};

RunResult simulate(const SimConfig& c, std::uint64_t seed);

struct Stat {
  double mean = 0, sd = 0, lo = 0, hi = 0;  // lo/hi: 95% confidence interval of the mean
  double p5 = 0, p95 = 0;                   // spread of single runs
  std::int64_t n = 0;
};
Stat summarize(const std::vector<double>& xs);

struct MonteCarlo {
  CheckpointPlan plan;
  std::vector<RunResult> runs;  // runs[0] keeps its timeline when asked
  Stat ettr, goodput, unexpected, planned, wall_h, tokens, lost_work_h, down_h, checkpoint_h;
  std::map<std::string, Stat> by_cause;
};
// Interruptions (unexpected and planned) one run is expected to draw over its horizon: the
// simulation's cost. The horizon of a token budget is taken at half the failure-free pace.
double expected_interruptions(const SimConfig& c);
// The most interruptions a Monte Carlo may expect to draw over all its runs (about a minute of
// one core): more is refused, naming what to reduce.
inline constexpr double kMaxInterruptions = 2e8;

// Run i uses seed derived from (seed, i): results do not depend on the thread count.
// threads <= 0: all cores. `progress`, if given, is called on the calling thread with the runs
// finished so far, after each run that thread does.
MonteCarlo monte_carlo(const SimConfig& c, int runs, std::uint64_t seed, int threads = 0,
                       const std::function<void(int)>& progress = {});

// Expected ETTR in closed form (first order, ignoring failures during recovery), for checks.
double expected_ettr(const SimConfig& c);

// ---------------------------------------------------------------- planning to a target
// The fewest hot-spare nodes with which the mean ETTR (or goodput) of `runs` simulated runs
// reaches `target`, at the job's checkpoint interval (Daly's optimum unless one is given):
// spares 0, 1, 2, 4, ... until it is reached, then bisection (every count with the same seeds).
// Unreachable when even one spare per node of the job falls short: then `spare_nodes` is that
// count and `ettr` / `goodput` its figures.
enum class TargetMetric { ettr, goodput };
struct TargetPlan {
  TargetMetric metric = TargetMetric::ettr;
  double target = 0;
  bool reached = false;
  int spare_nodes = 0;
  double interval_min = 0;  // the checkpoint interval the runs used
  Stat ettr, goodput;       // at spare_nodes
  int evaluated = 0;        // spare counts simulated
};
TargetPlan plan_for_target(const SimConfig& c, TargetMetric metric, double target, int runs,
                           std::uint64_t seed, int threads = 0);

}  // namespace attain::cluster
