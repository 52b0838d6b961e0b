// `attain cluster`'s runs: one job (the healthy step, then a Monte Carlo of runs with failures
// and checkpoints), or the same at several scales with four ways of recovering.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "attain/catalog.hpp"
#include "attain/cluster_job.hpp"
#include "attain/results.hpp"

namespace attain::cluster {
namespace {

Checkpoint parse_checkpoint(const std::string& s) {
  if (s == "sync") return Checkpoint::sync;
  if (s == "async") return Checkpoint::async;
  if (s == "memory") return Checkpoint::memory;
  throw InputError(fmt::format("--checkpoint {} (known: sync, async, memory)", excerpt(s)));
}

DType parse_dt(const std::string& s) {
  auto d = parse_dtype(s);
  if (!d) throw InputError(fmt::format("--dtype {} (known: fp32, bf16, fp16, fp8)", excerpt(s)));
  return *d;
}

// The healthy-cluster model for `chips` chips.
TrainingSetup make_setup(const JobRequest& o, std::int64_t chips, const ModelWork& work) {
  TrainingSetup s;
  const DType dt = parse_dt(o.dtype);
  s.chip = load_chip(o.device, dt, o.assume_peaks);
  if (o.peak_tflops > 0) {
    s.chip.peak_tflops = o.peak_tflops;
    s.chip.peak_source = fmt::format("given (--peak-tflops {:g})", o.peak_tflops);
  }
  if (o.mem_gbps > 0) s.chip.mem_bw_gbps = o.mem_gbps;
  if (o.mem_gb >= 0) s.chip.mem_gb = o.mem_gb;
  if (o.scaleup_gbps > 0) s.chip.scaleup_gbps = o.scaleup_gbps;
  s.topo = o.topo;
  s.work = work;
  s.chips = chips;
  s.global_batch = o.batch;
  s.scale_batch = o.scale_batch;
  s.par = {.tp = o.tp,
           .pp = o.pp,
           .ep = o.ep,
           .cp = o.cp,
           .micro_batch = o.micro_batch,
           .virtual_stages = o.virtual_stages};
  if (o.efficiency_ops > 0) {
    s.efficiency = o.efficiency;
    s.efficiency_source =
        fmt::format("geometric mean of {} results in {}", o.efficiency_ops, o.efficiency_from);
  } else if (o.efficiency > 0) {
    s.efficiency = o.efficiency, s.efficiency_source = "given";
  } else if (s.chip.training_efficiency > 0) {
    s.efficiency = s.chip.training_efficiency;
    s.efficiency_source = fmt::format("{} in training, from its device file", s.chip.id);
  } else {
    s.efficiency = kDefaultEfficiency;
    s.efficiency_source = fmt::format("default: no training run sizes {}", s.chip.id);
  }
  s.overlap = o.overlap, s.overlap_slowdown = o.overlap_slowdown, s.recompute = o.recompute;
  s.measured = o.measured;
  s.fused_attention = !o.unfused_attention;
  if (o.allreduce == "ring")
    s.allreduce = AllReduce::ring;
  else if (o.allreduce == "tree")
    s.allreduce = AllReduce::tree;
  else if (o.allreduce == "best")
    s.allreduce = AllReduce::best;
  else
    throw InputError(fmt::format("--allreduce {} (known: ring, tree, best)", excerpt(o.allreduce)));
  return s;
}

int spares_for(const JobRequest& o, std::int64_t chips) {
  const double nodes = std::ceil(static_cast<double>(chips) / o.topo.chips_per_node);
  if (o.spares == "auto") return static_cast<int>(std::ceil(0.02 * nodes));
  try {
    std::size_t pos = 0;
    const int n = std::stoi(o.spares, &pos);
    if (pos == o.spares.size() && n >= 0) return n;
  } catch (const std::exception&) {
  }
  throw InputError(fmt::format("--spares {} is not a count or 'auto'", excerpt(o.spares)));
}

double interval_min(const JobRequest& o) {
  if (o.interval == "auto") return 0;
  try {
    std::size_t pos = 0;
    const double v = std::stod(o.interval, &pos);
    if (pos == o.interval.size() && v > 0 && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw InputError(
      fmt::format("--checkpoint-interval {} is not a positive number of minutes or 'auto'",
                  excerpt(o.interval)));
}

SimConfig make_sim(const JobRequest& o, const TrainingSetup& s, const StepBreakdown& b,
                   const FailureTable& ft) {
  SimConfig c;
  c.chips = b.chips_used, c.chips_per_node = s.topo.chips_per_node;
  c.step_s = b.step_s, c.tokens_per_step = b.tokens, c.model_flops_per_step = b.model_flops;
  c.peak_flops_per_chip = s.chip.peak_tflops * 1e12;
  c.days = o.days, c.token_budget = o.tokens;
  c.failures = ft;
  c.detect_min = o.detect_min, c.restart_min = o.restart_min, c.rewarm_min = o.rewarm_min;
  c.checkpoint = parse_checkpoint(o.checkpoint);
  c.checkpoint_interval_min = interval_min(o);
  c.state_bytes = s.work.params * o.ckpt_bytes_per_param;
  c.storage_gbps = o.storage_gbps, c.host_copy_gbps = o.host_copy_gbps,
  c.peer_gbps = s.topo.inter_gbps;
  c.checkpoint_overhead_s = o.ckpt_overhead_s;
  // The chips in no whole group: whole nodes of them join the hot spares, the rest stay idle.
  c.spare_nodes = spares_for(o, b.chips_used) +
                  static_cast<int>(b.chips_left / std::max(1, s.topo.chips_per_node));
  c.repair_hours = o.repair_hours, c.replace_min = o.replace_min;
  c.straggler_fraction = o.straggler_fraction, c.straggler_slowdown = o.straggler_slowdown;
  c.timeline = o.timeline;
  return c;
}

ModelWork work_of(const JobRequest& o) {
  return model_work(load_bundled_model(o.model), o.seq, parse_dt(o.dtype));
}

// With a target: the fewest spares that reach it, at the job's checkpointing.
std::optional<TargetPlan> target_of(const JobRequest& o, const SimConfig& c) {
  if (o.target_ettr > 0)
    return plan_for_target(c, TargetMetric::ettr, o.target_ettr, o.runs, o.seed, o.threads);
  if (o.target_goodput > 0)
    return plan_for_target(c, TargetMetric::goodput, o.target_goodput, o.runs, o.seed, o.threads);
  return std::nullopt;
}

const SweepVariant kVariants[] = {
    {"fixed", "sync checkpoints at a fixed interval, no hot spares", Checkpoint::sync, false,
     false},
    {"daly", "sync checkpoints at Daly's optimum, no hot spares", Checkpoint::sync, true, false},
    {"daly_spares", "sync at Daly's optimum, hot spares", Checkpoint::sync, true, true},
    {"async_spares", "async at Daly's optimum, hot spares", Checkpoint::async, true, true},
};

}  // namespace

void JobRequest::validate() {
  if (runs <= 0 || runs > kMaxRuns)
    throw InputError(fmt::format("--runs {} outside 1..{}", runs, kMaxRuns));
  if (chips <= 0 || chips > kMaxChips)
    throw InputError(fmt::format("--chips {} outside 1..{}", chips, kMaxChips));
  if (seq <= 0 || batch <= 0) throw InputError("--seq and --batch must be positive");
  if (cp < 1) throw InputError(fmt::format("--cp {} must be 1 or more", cp));
  if (!(days >= 0 && days <= kMaxSimDays))
    throw InputError(fmt::format("--days {:g} outside 0..{:g}", days, kMaxSimDays));
  if (!(tokens >= 0 && std::isfinite(tokens)))
    throw InputError("--tokens must be a finite number, 0 or more");
  for (auto n : sweep)
    if (n <= 0 || n > kMaxChips)
      throw InputError(fmt::format("--sweep chip count {} outside 1..{}", n, kMaxChips));
  parse_checkpoint(checkpoint);
  interval_min(*this);
  if (target_ettr != 0 && target_goodput != 0)
    throw InputError("give --target-ettr or --target-goodput, not both");
  for (double t : {target_ettr, target_goodput})
    if (t != 0 && !(t > 0 && t < 1))
      throw InputError(fmt::format("a target of {:g} is not a fraction in (0, 1)", t));
  if (!efficiency_from.empty()) {
    const auto m = efficiency_from_results(read_results(efficiency_from), efficiency_backend);
    efficiency = std::min(1.0, m.efficiency);
    efficiency_ops = m.ops;
    measured = m.measured;
  }
}

JobOutcome simulate_job(const JobRequest& req, const std::function<void(int)>& progress) {
  JobOutcome o;
  o.request = req;
  o.failures = load_failure_table(req.failures);
  o.setup = make_setup(req, req.chips, work_of(req));
  o.step = step_time(o.setup);
  o.sim = make_sim(req, o.setup, o.step, o.failures);
  o.mc = monte_carlo(o.sim, req.runs, req.seed, req.threads, progress);
  o.target = target_of(req, o.sim);
  return o;
}

std::size_t sweep_runs(const JobRequest& req) {
  return req.sweep.size() * std::size(kVariants) * static_cast<std::size_t>(req.runs);
}

SweepOutcome sweep_jobs(const JobRequest& req,
                        const std::function<void(std::size_t, const std::string&)>& progress) {
  SweepOutcome out;
  out.request = req;
  out.failures = load_failure_table(req.failures);
  out.fixed_interval_min = req.interval == "auto" ? 60 : interval_min(req);
  const ModelWork work = work_of(req);
  std::size_t runs_before = 0;
  for (std::int64_t want : req.sweep) {
    SweepPoint pt;
    pt.setup = make_setup(req, want, work);
    pt.setup.par = choose_parallelism(pt.setup);
    pt.step = step_time(pt.setup);
    for (const auto& v : kVariants) {
      JobRequest rv = req;
      rv.checkpoint = v.checkpoint == Checkpoint::sync ? "sync" : "async";
      rv.interval = v.daly ? "auto" : fmt::format("{}", out.fixed_interval_min);
      rv.timeline = false;
      SimConfig c = make_sim(rv, pt.setup, pt.step, out.failures);
      if (!v.spares) c.spare_nodes = 0;
      const std::string what = fmt::format("{} chips, {}", pt.setup.chips, v.name);
      SweepVariantOutcome vo;
      vo.variant = v;
      vo.spare_nodes = c.spare_nodes;
      vo.mc = monte_carlo(c, req.runs, req.seed, req.threads, [&](int done) {
        if (progress) progress(runs_before + static_cast<std::size_t>(done), what);
      });
      runs_before += static_cast<std::size_t>(req.runs);
      pt.variants.push_back(std::move(vo));
    }
    JobRequest rt = req;
    rt.interval = "auto", rt.timeline = false;
    pt.target = target_of(rt, make_sim(rt, pt.setup, pt.step, out.failures));
    out.points.push_back(std::move(pt));
  }
  return out;
}

}  // namespace attain::cluster
