// attain cluster: how long, at what goodput, with which checkpoint interval, on which chips.
#include "attain/cluster.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attain/bench.hpp"
#include "attain/catalog.hpp"
#include "attain/files.hpp"
#include "attain/op.hpp"
#include "attain/results.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

using namespace attain::cluster;
using ojson = nlohmann::ordered_json;

struct Opts {
  std::string device = "h100-sxm", dtype = "bf16", model = "llama-3.1-405b";
  double peak_tflops = 0, mem_gbps = 0, mem_gb = -1, scaleup_gbps = 0;  // overrides
  std::int64_t chips = 16384, seq = 8192, batch = 2048;
  int tp = 0, pp = 0, ep = 0, micro_batch = 1, virtual_stages = 0;
  double efficiency = 0.7, overlap = 0.8;
  std::string efficiency_from, efficiency_backend;
  std::int64_t efficiency_ops = 0;  // results the efficiency came from (0: given)
  std::string allreduce = "best";
  bool recompute = false, unfused_attention = false;
  Topology topo;
  double days = 54, tokens = 0;
  std::string failures = "llama3";
  double detect_min = -1, restart_min = -1, rewarm_min = -1;
  std::string checkpoint = "async", interval = "auto", spares = "auto";
  double storage_gbps = 2000, ckpt_bytes_per_param = 14, ckpt_overhead_s = 2, host_copy_gbps = 25;
  double repair_hours = 48, replace_min = 60, straggler_fraction = 0, straggler_slowdown = 1;
  int runs = 16, threads = 0;
  std::uint64_t seed = 1;
  bool json = false, no_timeline = false;
  std::string out;
  std::vector<std::int64_t> sweep;
};

double finite_or(double x, double alt) {
  return std::isfinite(x) ? x : alt;
}
ojson num(double x) {
  return std::isfinite(x) ? ojson(x) : ojson(nullptr);
}

ojson stat_json(const Stat& s) {
  return {{"mean", num(s.mean)}, {"sd", num(s.sd)},   {"ci95", {num(s.lo), num(s.hi)}},
          {"p5", num(s.p5)},     {"p95", num(s.p95)}, {"n", s.n}};
}

Checkpoint parse_checkpoint(const std::string& s) {
  if (s == "sync") return Checkpoint::sync;
  if (s == "async") return Checkpoint::async;
  if (s == "memory") return Checkpoint::memory;
  throw InputError(fmt::format("--checkpoint {} (known: sync, async, memory)", s));
}
std::string_view checkpoint_name(Checkpoint c) {
  return c == Checkpoint::sync ? "sync" : c == Checkpoint::async ? "async" : "memory";
}

DType parse_dt(const std::string& s) {
  auto d = parse_dtype(s);
  if (!d) throw InputError(fmt::format("--dtype {} (known: fp32, bf16, fp16, fp8)", s));
  return *d;
}

// The healthy-cluster model for `chips` chips.
TrainingSetup make_setup(const Opts& o, std::int64_t chips, const ModelWork& work) {
  TrainingSetup s;
  const DType dt = parse_dt(o.dtype);
  s.chip = load_chip(o.device, dt);
  if (o.peak_tflops > 0) s.chip.peak_tflops = o.peak_tflops;
  if (o.mem_gbps > 0) s.chip.mem_bw_gbps = o.mem_gbps;
  if (o.mem_gb >= 0) s.chip.mem_gb = o.mem_gb;
  if (o.scaleup_gbps > 0) s.chip.scaleup_gbps = o.scaleup_gbps;
  s.topo = o.topo;
  s.work = work;
  s.chips = chips;
  s.global_batch = o.batch;
  s.par = {o.tp, o.pp, o.ep, o.micro_batch, o.virtual_stages};
  s.efficiency = o.efficiency, s.overlap = o.overlap, s.recompute = o.recompute;
  s.fused_attention = !o.unfused_attention;
  if (o.allreduce == "ring")
    s.allreduce = AllReduce::ring;
  else if (o.allreduce == "tree")
    s.allreduce = AllReduce::tree;
  else if (o.allreduce == "best")
    s.allreduce = AllReduce::best;
  else
    throw InputError(fmt::format("--allreduce {} (known: ring, tree, best)", o.allreduce));
  return s;
}

int spares_for(const Opts& o, std::int64_t chips) {
  const double nodes = std::ceil(static_cast<double>(chips) / o.topo.chips_per_node);
  if (o.spares == "auto") return static_cast<int>(std::ceil(0.02 * nodes));
  try {
    std::size_t pos = 0;
    const int n = std::stoi(o.spares, &pos);
    if (pos == o.spares.size() && n >= 0) return n;
  } catch (const std::exception&) {
  }
  throw InputError(fmt::format("--spares {} is not a count or 'auto'", o.spares));
}

double interval_min(const Opts& o) {
  if (o.interval == "auto") return 0;
  try {
    std::size_t pos = 0;
    const double v = std::stod(o.interval, &pos);
    if (pos == o.interval.size() && v > 0 && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw InputError(fmt::format(
      "--checkpoint-interval {} is not a positive number of minutes or 'auto'", o.interval));
}

SimConfig make_sim(const Opts& o, const TrainingSetup& s, const StepBreakdown& b,
                   const FailureTable& ft) {
  SimConfig c;
  c.chips = s.chips, c.chips_per_node = s.topo.chips_per_node;
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
  c.spare_nodes = spares_for(o, s.chips);
  c.repair_hours = o.repair_hours, c.replace_min = o.replace_min;
  c.straggler_fraction = o.straggler_fraction, c.straggler_slowdown = o.straggler_slowdown;
  c.timeline = !o.no_timeline;
  return c;
}

ojson step_json(const TrainingSetup& s, const StepBreakdown& b) {
  return {{"tp", b.tp},
          {"pp", b.pp},
          {"dp", b.dp},
          {"ep", b.ep},
          {"virtual_stages", b.virtual_stages},
          {"micro_batch", s.par.micro_batch},
          {"micro_batches", b.micro_batches},
          {"global_batch", b.global_batch},
          {"tokens_per_step", b.tokens},
          {"fwd_s", b.fwd_s},
          {"bwd_s", b.bwd_s},
          {"compute_s", b.compute_s},
          {"bubble_s", b.bubble_s},
          {"tp_comm_s", b.tp_comm_s},
          {"ep_comm_s", b.ep_comm_s},
          {"pp_comm_s", b.pp_comm_s},
          {"dp_comm_s", b.dp_comm_s},
          {"exposed_comm_s", b.exposed_comm_s},
          {"optimizer_s", b.optimizer_s},
          {"step_s", b.step_s},
          {"model_flops", b.model_flops},
          {"mfu", b.mfu}};
}

ojson inputs_json(const Opts& o, const TrainingSetup& s, const SimConfig& c) {
  return {
      {"device", s.chip.id},
      {"peak_tflops", s.chip.peak_tflops},
      {"mem_bw_gbps", s.chip.mem_bw_gbps},
      {"mem_gb", s.chip.mem_gb},
      {"dtype", o.dtype},
      {"model", s.work.name},
      {"params", s.work.params},
      {"active_params", s.work.active_params},
      {"chips", s.chips},
      {"chips_per_node", s.topo.chips_per_node},
      {"intra_gbps", s.topo.intra_gbps > 0 ? s.topo.intra_gbps : s.chip.scaleup_gbps},
      {"inter_gbps", s.topo.inter_gbps},
      {"intra_latency_us", s.topo.intra_latency_us},
      {"inter_latency_us", s.topo.inter_latency_us},
      {"seq", s.work.seq},
      {"global_batch", o.batch},
      {"efficiency", s.efficiency},
      {"efficiency_from", o.efficiency_from.empty() ? ojson(nullptr) : ojson(o.efficiency_from)},
      {"efficiency_ops", o.efficiency_ops},
      {"overlap", s.overlap},
      {"allreduce", o.allreduce},
      {"recompute", s.recompute},
      {"fused_attention", s.fused_attention},
      {"days", o.days},
      {"token_budget", o.tokens},
      {"failures", c.failures.name},
      {"checkpoint", checkpoint_name(c.checkpoint)},
      {"checkpoint_state_bytes", c.state_bytes},
      {"storage_gbps", c.storage_gbps},
      {"checkpoint_overhead_s", c.checkpoint_overhead_s},
      {"spare_nodes", c.spare_nodes},
      {"repair_hours", c.repair_hours},
      {"replace_min", c.replace_min},
      {"straggler_fraction", c.straggler_fraction},
      {"straggler_slowdown", c.straggler_slowdown},
      {"runs", o.runs},
      {"seed", o.seed}};
}

void emit(const ojson& j, const std::string& text, const Opts& o) {
  if (!o.out.empty()) write_file_atomic(o.out, j.dump(2) + "\n");
  if (o.json)
    std::cout << j.dump(2) << "\n";
  else
    std::cout << text;
}

std::string pct(double x) {
  return fmt::format("{:.1f}%", 100 * x);
}
std::string pct_ci(const Stat& s) {
  return s.n > 1 ? fmt::format("{:.1f}% [{:.1f}, {:.1f}]", 100 * s.mean, 100 * s.lo, 100 * s.hi)
                 : pct(s.mean);
}
std::string count_ci(const Stat& s) {
  return s.n > 1 ? fmt::format("{:.1f} [{:.1f}, {:.1f}]", s.mean, s.lo, s.hi)
                 : fmt::format("{:.0f}", s.mean);
}

int run_one(const Opts& o, const ModelWork& work, const FailureTable& ft) {
  const TrainingSetup s = make_setup(o, o.chips, work);
  const StepBreakdown b = step_time(s);
  const SimConfig c = make_sim(o, s, b, ft);
  ProgressBar bar(!o.json, static_cast<std::size_t>(o.runs), -1, "runs");
  const MonteCarlo mc = monte_carlo(c, o.runs, o.seed, o.threads, [&](int done) {
    bar.update(static_cast<std::size_t>(done), "Monte Carlo runs");
  });
  const CheckpointPlan& p = mc.plan;

  ojson j;
  j["schema"] = "attain.cluster/1";
  j["command"] = command_line();
  j["created"] = now_iso();
  j["inputs"] = inputs_json(o, s, c);
  j["step"] = step_json(s, b);
  ojson by_cause = ojson::object(), by_cause_stats = ojson::object(), published = ojson::object();
  for (const auto& cause : ft.causes) {
    by_cause[cause.name] = mc.by_cause.at(cause.name).mean;
    by_cause_stats[cause.name] = stat_json(mc.by_cause.at(cause.name));
    if (cause.published >= 0) published[cause.name] = cause.published;
  }
  j["interruptions"] = {{"unexpected", mc.unexpected.mean},
                        {"planned", mc.planned.mean},
                        {"by_cause", by_cause},
                        {"unexpected_stats", stat_json(mc.unexpected)},
                        {"planned_stats", stat_json(mc.planned)},
                        {"by_cause_stats", by_cause_stats}};
  if (ft.observed_chips > 0)
    j["published"] = {{"source", ft.source},
                      {"chips", ft.observed_chips},
                      {"days", ft.observed_days},
                      {"unexpected", ft.observed_unexpected},
                      {"planned", ft.observed_planned},
                      {"by_cause", published}};
  j["ettr"] = mc.ettr.mean;
  j["goodput"] = mc.goodput.mean;
  j["mfu"] = b.mfu;
  j["optimal_checkpoint_interval_min"] = num(p.daly_min);
  j["checkpoint"] = {{"mode", checkpoint_name(c.checkpoint)},
                     {"interval_min", num(p.interval_min)},
                     {"daly_min", num(p.daly_min)},
                     {"young_min", num(p.young_min)},
                     {"pause_s", p.pause_s},
                     {"persist_s", p.persist_s},
                     {"load_s", p.load_s},
                     {"write_sync_s", p.write_sync_s}};
  j["mtbf_h"] = num(p.mtbf_h);
  j["stats"] = {{"ettr", stat_json(mc.ettr)},
                {"goodput", stat_json(mc.goodput)},
                {"wall_h", stat_json(mc.wall_h)},
                {"tokens", stat_json(mc.tokens)},
                {"lost_work_h", stat_json(mc.lost_work_h)},
                {"down_h", stat_json(mc.down_h)},
                {"checkpoint_h", stat_json(mc.checkpoint_h)}};
  j["tokens"] = mc.tokens.mean;
  j["wall_days"] = mc.wall_h.mean / 24;
  if (o.tokens > 0) {
    std::int64_t reached = 0;
    for (const auto& r : mc.runs) reached += r.budget_reached ? 1 : 0;
    j["wall_days_to_budget"] = reached == o.runs ? num(mc.wall_h.mean / 24) : ojson(nullptr);
    j["wall_days_to_budget_ci95"] = {num(mc.wall_h.lo / 24), num(mc.wall_h.hi / 24)};
  } else {
    // Projection: days to train the same tokens again at this run's kept-token rate.
    j["tokens_per_day"] = mc.tokens.mean / (mc.wall_h.mean / 24);
  }
  ojson tl = ojson::array();
  for (const auto& e : mc.runs[0].timeline)
    tl.push_back({{"t_h", e.t_h},
                  {"kind", e.planned ? "planned" : "unexpected"},
                  {"cause", e.cause},
                  {"lost_work_min", e.lost_work_min},
                  {"down_min", e.down_min},
                  {"spare_used", e.spare_used}});
  if (!o.no_timeline) {
    // Run 0's own totals beside its timeline (the means above are over all runs).
    const RunResult& r0 = mc.runs[0];
    j["timeline_run"] = {{"run", 0},
                         {"wall_h", r0.wall_h},
                         {"useful_h", r0.useful_h},
                         {"lost_work_h", r0.lost_work_h},
                         {"down_h", r0.down_h},
                         {"checkpoint_h", r0.checkpoint_h},
                         {"unexpected", r0.unexpected},
                         {"planned", r0.planned},
                         {"ettr", r0.ettr},
                         {"goodput", r0.goodput}};
    j["timeline"] = tl;  // run 0
  }

  std::ostringstream t;
  t << fmt::format("attain cluster: {} on {} x {} ({}), {}, failures {}, {} run{} (seed {})\n",
                   s.work.name, s.chips, s.chip.id, o.dtype,
                   o.tokens > 0 ? fmt::format("until {:.3g} tokens", o.tokens)
                                : fmt::format("{:g} days", o.days),
                   ft.name, o.runs, o.runs == 1 ? "" : "s", o.seed);
  t << fmt::format(
      "step        TP {} x PP {} ({} virtual) x DP {}{}; {} micro-batches of {} x {} tokens\n",
      b.tp, b.pp, b.virtual_stages, b.dp, b.ep > 1 ? fmt::format(" (EP {})", b.ep) : "",
      b.micro_batches, s.par.micro_batch, s.work.seq);
  t << fmt::format(
      "            compute {:.3f} s + bubble {:.3f} s + exposed comm {:.3f} s + optimizer {:.3f} s "
      "= {:.3f} s\n",
      b.compute_s, b.bubble_s, b.exposed_comm_s, b.optimizer_s, b.step_s);
  t << fmt::format(
      "            comm before overlap: TP {:.3f} s, EP {:.3f} s, PP {:.3f} s, DP {:.3f} s "
      "(overlap {:g})\n",
      b.tp_comm_s, b.ep_comm_s, b.pp_comm_s, b.dp_comm_s, s.overlap);
  t << fmt::format(
      "            MFU {} (3 x forward FLOPs / (chips x peak x step); efficiency {:.3g}{})\n",
      pct(b.mfu), s.efficiency,
      o.efficiency_ops > 0
          ? fmt::format(", geometric mean of {} results in {}", o.efficiency_ops, o.efficiency_from)
          : "");
  t << fmt::format(
      "checkpoint  {} of {:.2f} TB: pause {:.1f} s, durable {:.1f} s later, load {:.1f} s\n",
      checkpoint_name(c.checkpoint), c.state_bytes / 1e12, p.pause_s, p.persist_s, p.load_s);
  t << fmt::format(
      "            MTBF {:.2f} h; interval {:.1f} min (Daly optimum {:.1f}, Young {:.1f})\n",
      finite_or(p.mtbf_h, 0), finite_or(p.interval_min, 0), finite_or(p.daly_min, 0),
      finite_or(p.young_min, 0));
  t << fmt::format("interruptions  unexpected {}  planned {}", count_ci(mc.unexpected),
                   count_ci(mc.planned));
  if (ft.observed_chips > 0)
    t << fmt::format("  (published: {:g} and {:g} on {} chips in {:g} days)",
                     ft.observed_unexpected, ft.observed_planned, ft.observed_chips,
                     ft.observed_days);
  t << "\n";
  for (const auto& cause : ft.causes)
    t << fmt::format(
        "  {:<32} {:>8.1f}{}\n", cause.name, mc.by_cause.at(cause.name).mean,
        cause.published >= 0 ? fmt::format("   (published {:g})", cause.published) : "");
  t << fmt::format("ETTR        {}\ngoodput     {}  (kept model FLOPs / (chips x peak x wall))\n",
                   pct_ci(mc.ettr), pct_ci(mc.goodput));
  t << fmt::format(
      "wall {:.1f} h = useful {:.1f} + lost work {:.1f} + down {:.1f} + checkpoints {:.1f} "
      "(means)\n",
      mc.wall_h.mean, mc.wall_h.mean - mc.lost_work_h.mean - mc.down_h.mean - mc.checkpoint_h.mean,
      mc.lost_work_h.mean, mc.down_h.mean, mc.checkpoint_h.mean);
  if (o.tokens > 0)
    t << fmt::format("days to {:.3g} tokens: {:.2f} [{:.2f}, {:.2f}]\n", o.tokens,
                     mc.wall_h.mean / 24, mc.wall_h.lo / 24, mc.wall_h.hi / 24);
  else
    t << fmt::format("tokens trained: {:.4g} ({:.4g} per day)\n", mc.tokens.mean,
                     mc.tokens.mean / (mc.wall_h.mean / 24));
  emit(j, t.str(), o);
  return 0;
}

// Goodput against scale, and what checkpointing and hot spares buy back at each scale.
int run_sweep(const Opts& o, const ModelWork& work, const FailureTable& ft) {
  struct Variant {
    const char* name;
    const char* what;
    Checkpoint ckpt;
    bool daly, spares;
  };
  const double fixed = o.interval == "auto" ? 60 : interval_min(o);
  const Variant variants[] = {
      {"fixed", "sync checkpoints at a fixed interval, no hot spares", Checkpoint::sync, false,
       false},
      {"daly", "sync checkpoints at Daly's optimum, no hot spares", Checkpoint::sync, true, false},
      {"daly_spares", "sync at Daly's optimum, hot spares", Checkpoint::sync, true, true},
      {"async_spares", "async at Daly's optimum, hot spares", Checkpoint::async, true, true},
  };
  ojson j;
  j["schema"] = "attain.cluster-sweep/1";
  j["command"] = command_line();
  j["created"] = now_iso();
  j["inputs"] = {
      {"device", o.device},       {"dtype", o.dtype},    {"model", work.name}, {"days", o.days},
      {"token_budget", o.tokens}, {"failures", ft.name}, {"runs", o.runs},     {"seed", o.seed}};
  j["fixed_interval_min"] = fixed;
  ojson vs = ojson::array();
  for (const auto& v : variants) vs.push_back({{"name", v.name}, {"what", v.what}});
  j["variants"] = vs;
  ojson points = ojson::array();
  std::ostringstream t;
  t << fmt::format("attain cluster --sweep: {} on {}, {:g} days, failures {}, {} runs per point\n",
                   work.name, o.device, o.days, ft.name, o.runs);
  t << fmt::format(
      "goodput (ETTR) by variant: fixed = sync every {:g} min, no spares; daly = Daly's interval;\n"
      "+spares = hot spares ({}); async = asynchronous checkpoints\n",
      fixed, o.spares == "auto" ? "2% of nodes" : o.spares);
  t << fmt::format("{:>8} {:>9} {:>7} {:>6}  {:>15} {:>15} {:>15} {:>15}\n", "chips", "MTBF h",
                   "step s", "MFU", "fixed", "daly", "daly+spares", "async+spares");
  // Progress over every run of every point and variant.
  const std::size_t total_runs =
      o.sweep.size() * std::size(variants) * static_cast<std::size_t>(o.runs);
  ProgressBar bar(!o.json, total_runs, -1, "runs");
  std::size_t runs_before = 0;
  for (std::int64_t want : o.sweep) {
    TrainingSetup s = make_setup(o, want, work);
    const Parallelism par = choose_parallelism(s);
    const std::int64_t unit =
        static_cast<std::int64_t>(par.tp) * par.pp * (work.experts > 0 ? par.ep : 1);
    s.chips = std::max<std::int64_t>(unit, want / unit * unit);
    s.par = par;
    const StepBreakdown b = step_time(s);
    ojson pt = {{"chips", s.chips}, {"step", step_json(s, b)}, {"mfu", b.mfu}};
    t << fmt::format("{:>8} ", s.chips);
    bool first = true;
    ojson vr = ojson::object();
    for (const auto& v : variants) {
      Opts ov = o;
      ov.checkpoint = v.ckpt == Checkpoint::sync ? "sync" : "async";
      ov.interval = v.daly ? "auto" : fmt::format("{}", fixed);
      if (!v.spares) ov.spares = "0";
      ov.no_timeline = true;
      const SimConfig c = make_sim(ov, s, b, ft);
      const MonteCarlo mc = monte_carlo(c, o.runs, o.seed, o.threads, [&](int done) {
        bar.update(runs_before + static_cast<std::size_t>(done),
                   fmt::format("{} chips, {}", s.chips, v.name));
      });
      runs_before += static_cast<std::size_t>(o.runs);
      if (first) {
        pt["mtbf_h"] = num(mc.plan.mtbf_h);
        t << fmt::format("{:>9.2f} {:>7.2f} {:>6} ", finite_or(mc.plan.mtbf_h, 0), b.step_s,
                         pct(b.mfu));
        first = false;
      }
      vr[v.name] = {{"ettr", mc.ettr.mean},
                    {"ettr_ci95", {mc.ettr.lo, mc.ettr.hi}},
                    {"goodput", mc.goodput.mean},
                    {"goodput_ci95", {mc.goodput.lo, mc.goodput.hi}},
                    {"interval_min", num(mc.plan.interval_min)},
                    {"unexpected", mc.unexpected.mean},
                    {"spare_nodes", c.spare_nodes}};
      t << fmt::format(" {:>6} ({:>5})", pct(mc.goodput.mean), pct(mc.ettr.mean));
    }
    pt["variants"] = vr;
    points.push_back(pt);
    t << "\n";
  }
  j["points"] = points;
  emit(j, t.str(), o);
  return 0;
}

const bool registered = add_command([](CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("cluster",
                                 "Simulate one training job on thousands of chips: step time, "
                                 "failures, checkpoints, ETTR and goodput");
  // What runs
  sub->add_option("--device", o->device, "device id from the database (default h100-sxm)");
  sub->add_option("--dtype", o->dtype, "training dtype for the compute peak (default bf16)");
  sub->add_option("--peak-tflops", o->peak_tflops, "override the device's dense peak at --dtype");
  sub->add_option("--mem-gbps", o->mem_gbps, "override the device's memory bandwidth (GB/s)");
  sub->add_option("--mem-gb", o->mem_gb, "override the device's memory capacity (GB)");
  sub->add_option("--scaleup-gbps", o->scaleup_gbps,
                  "override the device's scale-up link (GB/s per direction)");
  sub->add_option("--model", o->model,
                  "bundled model name or config.json path (default llama-3.1-405b)");
  sub->add_option("--chips", o->chips, "chips in the job (default 16384)");
  sub->add_option("--seq", o->seq, "sequence length (default 8192)");
  sub->add_option("--batch", o->batch, "global batch in sequences (default 2048)");
  sub->add_option("--tp", o->tp, "tensor parallel size (default: chips per node, 1 for MoE)");
  sub->add_option("--pp", o->pp, "pipeline parallel size (default: smallest power of 2 that fits)");
  sub->add_option("--ep", o->ep, "expert parallel size (MoE; default chips per node)");
  sub->add_option("--micro-batch", o->micro_batch, "sequences per micro-batch (default 1)");
  sub->add_option("--virtual-stages", o->virtual_stages,
                  "interleaved pipeline chunks per rank (default min(4, layers/pp))");
  sub->add_option("--efficiency", o->efficiency,
                  "fraction of the roofline the kernels reach (default 0.7)");
  sub->add_option(
      "--efficiency-from", o->efficiency_from,
      "take the efficiency from measured results (attain bench --out FILE): geometric mean");
  sub->add_option("--efficiency-backend", o->efficiency_backend,
                  "with --efficiency-from: only this backend");
  sub->add_option("--overlap", o->overlap,
                  "fraction of communication hidden under compute (default 0.8)");
  sub->add_option("--allreduce", o->allreduce, "ring, tree or best (default best)");
  sub->add_flag("--recompute", o->recompute, "full activation recomputation");
  sub->add_flag("--unfused-attention", o->unfused_attention, "attention scores go through memory");
  // Topology
  sub->add_option("--chips-per-node", o->topo.chips_per_node,
                  "chips per node / scale-up domain (default 8)");
  sub->add_option("--intra-gbps", o->topo.intra_gbps,
                  "per chip, inside a node, GB/s (default: the device's link)");
  sub->add_option("--inter-gbps", o->topo.inter_gbps, "per chip NIC, GB/s (default 50 = 400 Gb/s)");
  sub->add_option("--intra-latency-us", o->topo.intra_latency_us,
                  "intra-node message latency (default 3)");
  sub->add_option("--inter-latency-us", o->topo.inter_latency_us,
                  "inter-node message latency (default 10)");
  // How long
  sub->add_option("--days", o->days, "wall-clock days to simulate (default 54; 0 with --tokens)");
  sub->add_option("--tokens", o->tokens, "token budget: simulate until it is trained");
  // Failures and recovery
  sub->add_option("--failures", o->failures,
                  "failure table: bundled name, JSON path or none (default llama3)");
  sub->add_option("--detect-min", o->detect_min, "override the table's detection time");
  sub->add_option("--restart-min", o->restart_min, "override the table's restart time");
  sub->add_option("--rewarm-min", o->rewarm_min, "override the table's re-warm time");
  sub->add_option("--spares", o->spares, "hot spare nodes, or auto = 2% of nodes (default auto)");
  sub->add_option("--repair-hours", o->repair_hours,
                  "a swapped node returns to the spares after (default 48)");
  sub->add_option("--replace-min", o->replace_min,
                  "wait for a node when no spare is free (default 60)");
  sub->add_option("--straggler-fraction", o->straggler_fraction,
                  "probability that a node is slow (default 0)");
  sub->add_option("--straggler-slowdown", o->straggler_slowdown,
                  "job slowdown while a slow node is in it (default 1)");
  // Checkpoints
  sub->add_option("--checkpoint", o->checkpoint, "sync, async or memory (default async)");
  sub->add_option("--checkpoint-interval", o->interval,
                  "minutes between checkpoints, or auto = Daly (default auto)");
  sub->add_option("--storage-gbps", o->storage_gbps,
                  "aggregate checkpoint storage bandwidth, GB/s (default 2000)");
  sub->add_option("--ckpt-bytes-per-param", o->ckpt_bytes_per_param,
                  "checkpoint bytes per parameter (default 14)");
  sub->add_option("--ckpt-overhead-s", o->ckpt_overhead_s,
                  "fixed pause per checkpoint (default 2)");
  sub->add_option("--host-copy-gbps", o->host_copy_gbps,
                  "device-to-host copy per chip, GB/s (default 25)");
  // Monte Carlo and output
  sub->add_option("--runs", o->runs, "Monte Carlo runs (default 16)");
  sub->add_option("--seed", o->seed, "random seed (default 1)");
  sub->add_option("--threads", o->threads, "threads for the runs (default: all cores)");
  sub->add_flag("--json", o->json, "print JSON instead of the text summary");
  sub->add_option("--out", o->out, "also write the JSON to this file");
  sub->add_flag("--no-timeline", o->no_timeline, "leave the interruption timeline out of the JSON");
  sub->add_option("--sweep", o->sweep, "chip counts to sweep (e.g. 1000,10000,100000)")
      ->delimiter(',')
      ->expected(0, -1)
      ->default_str("1000,2000,5000,10000,20000,50000,100000");
  set_action(sub, [o, sub] {
    if (o->runs <= 0 || o->runs > kMaxRuns)
      throw InputError(fmt::format("--runs {} outside 1..{}", o->runs, kMaxRuns));
    if (o->chips <= 0 || o->chips > kMaxChips)
      throw InputError(fmt::format("--chips {} outside 1..{}", o->chips, kMaxChips));
    if (o->seq <= 0 || o->batch <= 0) throw InputError("--seq and --batch must be positive");
    if (!(o->days >= 0 && o->days <= kMaxSimDays))
      throw InputError(fmt::format("--days {:g} outside 0..{:g}", o->days, kMaxSimDays));
    if (!(o->tokens >= 0 && std::isfinite(o->tokens)))
      throw InputError("--tokens must be a finite number, 0 or more");
    // Overrides: given, they must be figures (their defaults mean "the table's / the device's").
    auto given = [&](const char* flag, double v, bool zero_ok) {
      const bool ok = std::isfinite(v) && (zero_ok ? v >= 0 : v > 0);
      if (sub->count(flag) > 0 && !ok)
        throw InputError(fmt::format("{} {:g} must be {} and finite", flag, v,
                                     zero_ok ? "0 or more" : "positive"));
    };
    given("--peak-tflops", o->peak_tflops, false);
    given("--mem-gbps", o->mem_gbps, false);
    given("--scaleup-gbps", o->scaleup_gbps, false);
    given("--mem-gb", o->mem_gb, true);
    given("--detect-min", o->detect_min, true);
    given("--restart-min", o->restart_min, true);
    given("--rewarm-min", o->rewarm_min, true);
    if (sub->count("--tokens") && !sub->count("--days")) o->days = 0;
    if (sub->count("--sweep") && o->sweep.empty())
      o->sweep = {1000, 2000, 5000, 10000, 20000, 50000, 100000};
    for (auto n : o->sweep)
      if (n <= 0 || n > kMaxChips)
        throw InputError(fmt::format("--sweep chip count {} outside 1..{}", n, kMaxChips));
    if (!o->efficiency_from.empty()) {
      const auto m =
          efficiency_from_results(read_results(o->efficiency_from), o->efficiency_backend);
      o->efficiency = std::min(1.0, m.efficiency);
      o->efficiency_ops = m.ops;
    }
    const ModelConfig cfg = load_bundled_model(o->model);
    const ModelWork work = model_work(cfg, o->seq, parse_dt(o->dtype));
    const FailureTable ft = load_failure_table(o->failures);
    return o->sweep.empty() ? run_one(*o, work, ft) : run_sweep(*o, work, ft);
  });
});

}  // namespace
}  // namespace attain::cli
