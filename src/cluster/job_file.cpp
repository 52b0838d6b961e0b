// The `attain cluster` files, schemas "attain.cluster/1" (one job) and
// "attain.cluster-sweep/1" (goodput against scale): the one place that writes them, prints
// them as text and reads them back (for `attain report`).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "attain/cluster_job.hpp"
#include "attain/report.hpp"

namespace attain::cluster {
namespace {

using ojson = nlohmann::ordered_json;

double finite_or(double x, double alt) {
  return std::isfinite(x) ? x : alt;
}
ojson num(double x) {
  return std::isfinite(x) ? ojson(x) : ojson(nullptr);
}

std::string_view checkpoint_name(Checkpoint c) {
  return c == Checkpoint::sync ? "sync" : c == Checkpoint::async ? "async" : "memory";
}

ojson stat_json(const Stat& s) {
  return {{"mean", num(s.mean)}, {"sd", num(s.sd)},   {"ci95", {num(s.lo), num(s.hi)}},
          {"p5", num(s.p5)},     {"p95", num(s.p95)}, {"n", s.n}};
}

// The compute op by op: the shape on one chip (an `attain bench --op` spec), its efficiency and
// where that came from.
ojson ops_json(const StepBreakdown& b) {
  ojson a = ojson::array();
  for (const auto& o : b.ops)
    a.push_back({{"op", o.op.spec()},
                 {"count", o.count},
                 {"efficiency", o.efficiency},
                 {"measured", o.measured.empty() ? ojson(nullptr) : ojson(o.measured)},
                 {"distance", o.distance},
                 {"fwd_s", o.fwd_s}});
  return a;
}

ojson step_json(const TrainingSetup& s, const StepBreakdown& b) {
  return {{"tp", b.tp},
          {"cp", b.cp},
          {"pp", b.pp},
          {"dp", b.dp},
          {"ep", b.ep},
          {"virtual_stages", b.virtual_stages},
          {"micro_batch", s.par.micro_batch},
          {"micro_batches", b.micro_batches},
          {"global_batch", b.global_batch},
          {"chips_used", b.chips_used},
          {"chips_left", b.chips_left},
          {"tokens_per_step", b.tokens},
          {"fwd_s", b.fwd_s},
          {"bwd_s", b.bwd_s},
          {"compute_s", b.compute_s},
          {"nonmatrix_fwd_s", b.nonmatrix_fwd_s},
          {"nonmatrix_s", b.nonmatrix_s},
          {"stage_layers", b.stage_layers},
          {"last_stage_layers", b.last_layers},
          {"stage_load", b.stage_load},
          {"imbalance_s", b.imbalance_s},
          {"bubble_s", b.bubble_s},
          {"tp_comm_s", b.tp_comm_s},
          {"cp_comm_s", b.cp_comm_s},
          {"ep_comm_s", b.ep_comm_s},
          {"pp_comm_s", b.pp_comm_s},
          {"dp_comm_s", b.dp_comm_s},
          {"exposed_comm_s", b.exposed_comm_s},
          {"contention_s", b.contention_s},
          {"optimizer_s", b.optimizer_s},
          {"step_s", b.step_s},
          {"model_flops", b.model_flops},
          {"mfu", b.mfu},
          {"ops_measured", b.ops_measured},
          {"ops", ops_json(b)}};
}

ojson inputs_json(const JobRequest& o, const TrainingSetup& s, const SimConfig& c) {
  return {
      {"device", s.chip.id},
      {"peak_tflops", s.chip.peak_tflops},
      {"peak_source", s.chip.peak_source},
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
      {"pod_chips", s.topo.pod_chips},
      {"oversubscription", s.topo.oversubscription},
      {"seq", s.work.seq},
      {"global_batch", o.batch},
      {"scale_batch", o.scale_batch},
      {"efficiency", s.efficiency},
      {"efficiency_source", s.efficiency_source},
      {"efficiency_from", o.efficiency_from.empty() ? ojson(nullptr) : ojson(o.efficiency_from)},
      {"efficiency_ops", o.efficiency_ops},
      {"overlap", s.overlap},
      {"overlap_slowdown", s.overlap_slowdown},
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

// The parts of a job that its file and its text are made of.
struct JobParts {
  const JobRequest& o;
  const TrainingSetup& s;
  const StepBreakdown& b;
  const SimConfig& c;
  const FailureTable& ft;
  const MonteCarlo& mc;
  const CheckpointPlan& p;
};
JobParts parts_of(const JobOutcome& out) {
  return {out.request, out.setup, out.step, out.sim, out.failures, out.mc, out.mc.plan};
}

// The ops that took a measured efficiency: what each runs as on one chip, the measured op it
// follows and its share of the forward pass.
std::string ops_text(const StepBreakdown& b) {
  std::string t =
      fmt::format("            per op ({} of {} from the nearest measured op; forward share):\n",
                  b.ops_measured, b.ops.size());
  for (const auto& o : b.ops)
    t += fmt::format("              {:<52} eff {:.2f}  {:>5.1f}%  {}\n", o.op.spec(), o.efficiency,
                     b.fwd_s > 0 ? 100 * o.fwd_s / b.fwd_s : 0.0,
                     o.measured.empty()
                         ? std::string("no measured op of its kind: the geometric mean")
                     : o.distance < 1e-9 ? std::string("measured")
                                         : fmt::format("as {}", o.measured));
  return t;
}

std::string_view metric_name(TargetMetric m) {
  return m == TargetMetric::ettr ? "ETTR" : "goodput";
}

// The figure a target is about, as reached with the plan's spares.
const Stat& target_figure(const TargetPlan& t) {
  return t.metric == TargetMetric::ettr ? t.ettr : t.goodput;
}

// The answer to --target-ettr / --target-goodput, beside the spares the job ran with.
std::string target_text(const TargetPlan& t, int spares_run) {
  const Stat& got = target_figure(t);
  if (!t.reached)
    return fmt::format(
        "target      {} {} is out of reach by hot spares: with one per node ({}) it is {}; the "
        "rest is detection, restarts, checkpoint loads and lost work (try --checkpoint memory, "
        "a faster --restart-min)\n",
        metric_name(t.metric), pct(t.target), t.spare_nodes, pct_ci(got));
  const bool ettr = t.metric == TargetMetric::ettr;
  return fmt::format(
      "target      {} {}: {} hot-spare node{} (this run had {}) at a {:.1f} min checkpoint "
      "interval give {} {} ({} {}; {} spare counts simulated)\n",
      metric_name(t.metric), pct(t.target), t.spare_nodes, t.spare_nodes == 1 ? "" : "s",
      spares_run, t.interval_min, metric_name(t.metric), pct_ci(got), ettr ? "goodput" : "ETTR",
      pct(ettr ? t.goodput.mean : t.ettr.mean), t.evaluated);
}

ojson target_json(const TargetPlan& t) {
  return {{"metric", metric_name(t.metric)},
          {"target", t.target},
          {"reached", t.reached},
          {"spare_nodes", t.spare_nodes},
          {"interval_min", num(t.interval_min)},
          {"ettr", stat_json(t.ettr)},
          {"goodput", stat_json(t.goodput)},
          {"evaluated", t.evaluated}};
}

}  // namespace

ojson to_json(const JobOutcome& out) {
  const auto& [o, s, b, c, ft, mc, p] = parts_of(out);
  ojson j;
  j["schema"] = kRunSchema;
  j["command"] = o.command;
  j["created"] = o.created;
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
  if (o.timeline) {
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
    ojson tl = ojson::array();
    for (const auto& e : r0.timeline)
      tl.push_back({{"t_h", e.t_h},
                    {"kind", e.planned ? "planned" : "unexpected"},
                    {"cause", e.cause},
                    {"lost_work_min", e.lost_work_min},
                    {"down_min", e.down_min},
                    {"spare_used", e.spare_used}});
    j["timeline"] = tl;
  }
  if (out.target) j["target"] = target_json(*out.target);
  return j;
}

// What the layout made of the chips and the batch, where it is not simply the user's numbers:
// chips in no whole group, and a batch that does not fill every DP rank's micro-batches.
std::string layout_notes(const JobRequest& o, const TrainingSetup& s, const StepBreakdown& b) {
  std::string t;
  if (b.chips_left > 0) {
    const std::int64_t cpn = std::max(1, s.topo.chips_per_node);
    t += fmt::format(
        "chips       {} of {} train; {} in no whole group: {} node(s) of them join the hot "
        "spares, {} chip(s) idle\n",
        b.chips_used, s.chips, b.chips_left, b.chips_left / cpn, b.chips_left % cpn);
  }
  const std::int64_t per_round = static_cast<std::int64_t>(b.dp) * s.par.micro_batch;
  if (b.global_batch != o.batch)
    t += fmt::format("batch       raised from {} to {} sequences (--scale-batch): {} per DP rank\n",
                     o.batch, b.global_batch, b.micro_batches * s.par.micro_batch);
  else if (b.global_batch % per_round != 0)
    t += fmt::format(
        "batch       {} sequences as given, over DP {} x micro-batch {}: {} to {} micro-batches "
        "per rank, the busiest set the step (--scale-batch fills them: {} sequences)\n",
        b.global_batch, b.dp, s.par.micro_batch, b.global_batch / per_round, b.micro_batches,
        b.micro_batches * per_round);
  return t;
}

std::string job_text(const JobOutcome& out) {
  const auto& [o, s, b, c, ft, mc, p] = parts_of(out);
  std::string t;
  t += fmt::format("attain cluster: {} on {} x {} ({}), {}, failures {}, {} run{} (seed {})\n",
                   s.work.name, s.chips, s.chip.id, o.dtype,
                   o.tokens > 0 ? fmt::format("until {:.3g} tokens", o.tokens)
                                : fmt::format("{:g} days", o.days),
                   ft.name, o.runs, o.runs == 1 ? "" : "s", o.seed);
  // A peak that is not the vendor's is said at the top: every figure below scales with it.
  if (s.chip.peak_source.rfind("ASSUMED", 0) == 0 || s.chip.peak_source.rfind("given", 0) == 0)
    t += fmt::format("peak        {:g} TFLOP/s {}: {}\n", s.chip.peak_tflops, o.dtype,
                     s.chip.peak_source);
  t += fmt::format(
      "step        TP {}{} x PP {} ({} virtual) x DP {}{}; {} micro-batches of {} x {} tokens\n",
      b.tp, b.cp > 1 ? fmt::format(" x CP {}", b.cp) : "", b.pp, b.virtual_stages, b.dp,
      b.ep > 1 ? fmt::format(" (EP {})", b.ep) : "", b.micro_batches, s.par.micro_batch,
      s.work.seq);
  t += fmt::format(
      "            compute {:.3f} s + non-matrix {:.3f} s + stage imbalance {:.3f} s + bubble "
      "{:.3f} s + exposed comm {:.3f} s + contention {:.3f} s + optimizer {:.3f} s = {:.3f} s\n",
      b.compute_s, b.nonmatrix_s, b.imbalance_s, b.bubble_s, b.exposed_comm_s, b.contention_s,
      b.optimizer_s, b.step_s);
  if (b.pp > 1)
    t += fmt::format(
        "            stages: {} layers on {}, at most {} a stage, {} and the LM head on the "
        "last; the busiest stage {:.3f}x the mean\n",
        s.work.layers, b.pp, b.stage_layers, b.last_layers, b.stage_load);
  t += fmt::format(
      "            comm before overlap: TP {:.3f} s,{} EP {:.3f} s, PP {:.3f} s, DP {:.3f} s "
      "(overlap {:g}; compute beside it {:g} slower)\n",
      b.tp_comm_s, b.cp > 1 ? fmt::format(" CP {:.3f} s,", b.cp_comm_s) : "", b.ep_comm_s,
      b.pp_comm_s, b.dp_comm_s, s.overlap, s.overlap_slowdown);
  t += fmt::format(
      "            MFU {} (3 x forward FLOPs / (chips that train x peak x step); efficiency "
      "{:.3g}, {})\n",
      pct(b.mfu), s.efficiency, s.efficiency_source);
  if (b.ops_measured > 0) t += ops_text(b);
  t += layout_notes(o, s, b);
  t += fmt::format(
      "checkpoint  {} of {:.2f} TB: pause {:.1f} s, durable {:.1f} s later, load {:.1f} s\n",
      checkpoint_name(c.checkpoint), c.state_bytes / 1e12, p.pause_s, p.persist_s, p.load_s);
  t += fmt::format(
      "            MTBF {:.2f} h; interval {:.1f} min (Daly optimum {:.1f}, Young {:.1f})\n",
      finite_or(p.mtbf_h, 0), finite_or(p.interval_min, 0), finite_or(p.daly_min, 0),
      finite_or(p.young_min, 0));
  t += fmt::format("interruptions  unexpected {}  planned {}", count_ci(mc.unexpected),
                   count_ci(mc.planned));
  if (ft.observed_chips > 0)
    t +=
        fmt::format("  (published: {:g} and {:g} on {} chips in {:g} days)", ft.observed_unexpected,
                    ft.observed_planned, ft.observed_chips, ft.observed_days);
  t += "\n";
  // The published counts are one run's: compare them with the spread of single runs (mean +-
  // 1.96 sd), not with the interval of the mean, which narrows with every run simulated.
  if (ft.observed_chips > 0 && b.chips_used == ft.observed_chips && o.days == ft.observed_days &&
      mc.unexpected.n > 1) {
    auto lo = [](const Stat& x) { return std::max(0.0, x.mean - 1.96 * x.sd); };
    auto hi = [](const Stat& x) { return x.mean + 1.96 * x.sd; };
    auto where = [&](double v, const Stat& x) {
      return v >= lo(x) && v <= hi(x) ? "inside" : "OUTSIDE";
    };
    t += fmt::format(
        "               one run: unexpected {:.0f}-{:.0f}, planned {:.0f}-{:.0f} (95% of single "
        "runs); the published {:g} is {} and {:g} {}\n",
        lo(mc.unexpected), hi(mc.unexpected), lo(mc.planned), hi(mc.planned),
        ft.observed_unexpected, where(ft.observed_unexpected, mc.unexpected), ft.observed_planned,
        where(ft.observed_planned, mc.planned));
  }
  for (const auto& cause : ft.causes)
    t += fmt::format(
        "  {:<32} {:>8.1f}{}\n", cause.name, mc.by_cause.at(cause.name).mean,
        cause.published >= 0 ? fmt::format("   (published {:g})", cause.published) : "");
  t += fmt::format("ETTR        {}\ngoodput     {}  (kept model FLOPs / (chips x peak x wall))\n",
                   pct_ci(mc.ettr), pct_ci(mc.goodput));
  t += fmt::format(
      "wall {:.1f} h = useful {:.1f} + lost work {:.1f} + down {:.1f} + checkpoints {:.1f} "
      "(means)\n",
      mc.wall_h.mean, mc.wall_h.mean - mc.lost_work_h.mean - mc.down_h.mean - mc.checkpoint_h.mean,
      mc.lost_work_h.mean, mc.down_h.mean, mc.checkpoint_h.mean);
  if (o.tokens > 0)
    t += fmt::format("days to {:.3g} tokens: {:.2f} [{:.2f}, {:.2f}]\n", o.tokens,
                     mc.wall_h.mean / 24, mc.wall_h.lo / 24, mc.wall_h.hi / 24);
  else
    t += fmt::format("tokens trained: {:.4g} ({:.4g} per day)\n", mc.tokens.mean,
                     mc.tokens.mean / (mc.wall_h.mean / 24));
  if (out.target) t += target_text(*out.target, c.spare_nodes);
  return t;
}

ojson to_json(const SweepOutcome& out) {
  const JobRequest& o = out.request;
  ojson j;
  j["schema"] = kSweepSchema;
  j["command"] = o.command;
  j["created"] = o.created;
  j["inputs"] = {{"device", o.device},
                 {"dtype", o.dtype},
                 {"model", out.points.empty() ? o.model : out.points[0].setup.work.name},
                 {"days", o.days},
                 {"token_budget", o.tokens},
                 {"failures", out.failures.name},
                 {"efficiency", out.points.empty() ? 0.0 : out.points[0].setup.efficiency},
                 {"efficiency_source",
                  out.points.empty() ? std::string() : out.points[0].setup.efficiency_source},
                 {"runs", o.runs},
                 {"seed", o.seed}};
  j["fixed_interval_min"] = out.fixed_interval_min;
  ojson vs = ojson::array();
  if (!out.points.empty())
    for (const auto& v : out.points[0].variants)
      vs.push_back({{"name", v.variant.name}, {"what", v.variant.what}});
  j["variants"] = vs;
  ojson points = ojson::array();
  for (const auto& pt : out.points) {
    ojson p = {
        {"chips", pt.setup.chips}, {"step", step_json(pt.setup, pt.step)}, {"mfu", pt.step.mfu}};
    if (!pt.variants.empty()) p["mtbf_h"] = num(pt.variants[0].mc.plan.mtbf_h);
    ojson vr = ojson::object();
    for (const auto& v : pt.variants) {
      const MonteCarlo& mc = v.mc;
      vr[v.variant.name] = {{"ettr", mc.ettr.mean},
                            {"ettr_ci95", {mc.ettr.lo, mc.ettr.hi}},
                            {"goodput", mc.goodput.mean},
                            {"goodput_ci95", {mc.goodput.lo, mc.goodput.hi}},
                            {"interval_min", num(mc.plan.interval_min)},
                            {"unexpected", mc.unexpected.mean},
                            {"spare_nodes", v.spare_nodes}};
    }
    p["variants"] = vr;
    if (pt.target) p["target"] = target_json(*pt.target);
    points.push_back(p);
  }
  j["points"] = points;
  return j;
}

std::string sweep_text(const SweepOutcome& out) {
  const JobRequest& o = out.request;
  const std::string model = out.points.empty() ? o.model : out.points[0].setup.work.name;
  std::string t;
  t += fmt::format("attain cluster --sweep: {} on {}, {:g} days, failures {}, {} runs per point\n",
                   model, o.device, o.days, out.failures.name, o.runs);
  if (!out.points.empty())
    t += fmt::format("efficiency {:.3g}, {}\n", out.points[0].setup.efficiency,
                     out.points[0].setup.efficiency_source);
  t += fmt::format(
      "goodput (ETTR) by variant: fixed = sync every {:g} min, no spares; daly = Daly's interval;\n"
      "+spares = hot spares ({}); async = asynchronous checkpoints\n",
      out.fixed_interval_min, o.spares == "auto" ? "2% of nodes" : o.spares);
  const auto& tp = out.points.empty() ? std::optional<TargetPlan>() : out.points[0].target;
  t += fmt::format(
      "{:>8} {:>8} {:>9} {:>7} {:>6}  {:>15} {:>15} {:>15} {:>15}{}\n", "chips", "train", "MTBF h",
      "step s", "MFU", "fixed", "daly", "daly+spares", "async+spares",
      tp ? fmt::format("  spares for {} {}", metric_name(tp->metric), pct(tp->target)) : "");
  for (const auto& pt : out.points) {
    t += fmt::format("{:>8} {:>8} ", pt.setup.chips, pt.step.chips_used);
    if (!pt.variants.empty())
      t += fmt::format("{:>9.2f} {:>7.2f} {:>6} ", finite_or(pt.variants[0].mc.plan.mtbf_h, 0),
                       pt.step.step_s, pct(pt.step.mfu));
    for (const auto& v : pt.variants)
      t += fmt::format(" {:>6} ({:>5})", pct(v.mc.goodput.mean), pct(v.mc.ettr.mean));
    if (pt.target) {
      const Stat& got = target_figure(*pt.target);
      t += pt.target->reached
               ? fmt::format("  {:>7} ({:>5})", pt.target->spare_nodes, pct(got.mean))
               : fmt::format("  out of reach ({:>5})", pct(got.mean));
    }
    t += "\n";
  }
  t += fmt::format(
      "train: chips in whole TP x PP x DP groups; whole nodes of the rest are hot spares in the "
      "+spares variants, the rest idle. The batch is {} sequences at every scale{}.\n",
      o.batch, o.scale_batch ? " raised to whole micro-batches per DP rank (--scale-batch)" : "");
  if (tp)
    t += fmt::format(
        "spares for {} {}: the fewest hot-spare nodes whose runs reach it, {} checkpoints at "
        "Daly's interval (the figure reached in parentheses).\n",
        metric_name(tp->metric), pct(tp->target), o.checkpoint);
  return t;
}

}  // namespace attain::cluster

// ---------------------------------------------------------------- reading (attain report)

namespace attain {
namespace {

using json = nlohmann::json;

// A number at `key` of object `j`: `def` when absent or null (unless required); InputError
// when it is something else.
double number(const json& j, const char* key, std::string_view origin, bool required,
              double def = 0) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw InputError(fmt::format("{}: missing number '{}'", origin, key));
    return def;
  }
  if (!it->is_number()) throw InputError(fmt::format("{}: '{}' is not a number", origin, key));
  return it->get<double>();
}

std::string text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& object(const json& j, const char* key, std::string_view origin) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_object())
    throw InputError(fmt::format("{}: missing object '{}'", origin, key));
  return *it;
}

// {"mean", "ci95": [lo, hi], "n"} as attain cluster writes it (stat_json); `fallback` is the
// mean when the file has no stats object.
ClusterStat stat(const json* s, double fallback, std::string_view origin) {
  ClusterStat st;
  st.mean = st.lo = st.hi = fallback;
  st.n = 1;
  if (!s || !s->is_object()) return st;
  st.mean = number(*s, "mean", origin, false, fallback);
  st.n = static_cast<std::int64_t>(number(*s, "n", origin, false, 1));
  st.lo = st.hi = st.mean;
  if (auto ci = s->find("ci95"); ci != s->end() && ci->is_array() && ci->size() == 2 &&
                                 (*ci)[0].is_number() && (*ci)[1].is_number())
    st.lo = (*ci)[0].get<double>(), st.hi = (*ci)[1].get<double>();
  return st;
}

const json* find_object(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? &*it : nullptr;
}

// [lo, hi] at `key`, or (v, v).
// A fraction's interval (ETTR, goodput), kept within [0, 1]: a normal-approximation interval
// over few runs can reach past the ends.
std::pair<double, double> interval(const json& j, const char* key, double v) {
  auto it = j.find(key);
  if (it != j.end() && it->is_array() && it->size() == 2 && (*it)[0].is_number() &&
      (*it)[1].is_number())
    return {std::clamp((*it)[0].get<double>(), 0.0, 1.0),
            std::clamp((*it)[1].get<double>(), 0.0, 1.0)};
  return {v, v};
}

}  // namespace

ClusterRun cluster_run_from_json(const json& j, std::string_view origin) {
  ClusterRun r;
  r.command = text(j, "command"), r.created = text(j, "created");
  if (const json* in = find_object(j, "inputs")) {
    r.model = text(*in, "model"), r.device = text(*in, "device");
    r.failures = text(*in, "failures");
    r.chips = static_cast<std::int64_t>(number(*in, "chips", origin, false));
    r.runs = static_cast<std::int64_t>(number(*in, "runs", origin, false));
    r.seed = static_cast<std::int64_t>(number(*in, "seed", origin, false));
    r.days = number(*in, "days", origin, false);
    r.token_budget = number(*in, "token_budget", origin, false);
  }
  const json* stats = find_object(j, "stats");
  auto from_stats = [&](const char* key, double fallback) {
    return stat(stats ? find_object(*stats, key) : nullptr, fallback, origin);
  };
  r.ettr = from_stats("ettr", number(j, "ettr", origin, true));
  r.goodput = from_stats("goodput", number(j, "goodput", origin, true));
  r.wall_h = from_stats("wall_h", number(j, "wall_days", origin, false) * 24);
  r.mfu = number(j, "mfu", origin, true);
  r.mtbf_h = number(j, "mtbf_h", origin, false, NAN);
  const json& in = object(j, "interruptions", origin);
  r.unexpected =
      stat(find_object(in, "unexpected_stats"), number(in, "unexpected", origin, true), origin);
  r.planned = stat(find_object(in, "planned_stats"), number(in, "planned", origin, true), origin);
  const json* by_stats = find_object(in, "by_cause_stats");
  for (const auto& [cause, v] : object(in, "by_cause", origin).items()) {
    if (!v.is_number())
      throw InputError(
          fmt::format("{}: interruptions.by_cause['{}'] is not a number", origin, cause));
    r.by_cause.push_back({cause, stat(by_stats ? find_object(*by_stats, cause.c_str()) : nullptr,
                                      v.get<double>(), origin)});
  }
  if (const json* pub = find_object(j, "published")) {
    if (const json* pc = find_object(*pub, "by_cause"))
      for (const auto& [cause, v] : pc->items())
        if (v.is_number()) r.published[cause] = v.get<double>();
    r.published_chips = static_cast<std::int64_t>(number(*pub, "chips", origin, false));
    r.published_days = number(*pub, "days", origin, false);
    r.published_planned = number(*pub, "planned", origin, false, -1);
  }
  if (const json* ck = find_object(j, "checkpoint")) {
    r.checkpoint_mode = text(*ck, "mode");
    r.interval_min = number(*ck, "interval_min", origin, false, NAN);
    r.daly_min = number(*ck, "daly_min", origin, false, NAN);
    r.young_min = number(*ck, "young_min", origin, false, NAN);
    r.pause_s = number(*ck, "pause_s", origin, false);
  }
  if (auto tl = j.find("timeline"); tl != j.end()) {
    if (!tl->is_array()) throw InputError(fmt::format("{}: 'timeline' is not an array", origin));
    r.has_timeline = true;
    for (std::size_t i = 0; i < tl->size(); ++i) {
      const json& e = (*tl)[i];
      const std::string where = fmt::format("{}: timeline[{}]", origin, i);
      if (!e.is_object()) throw InputError(where + ": not an object");
      ClusterEvent ev;
      ev.t_h = number(e, "t_h", where, true);
      const std::string kind = text(e, "kind");
      if (kind != "planned" && kind != "unexpected")
        throw InputError(fmt::format("{}: kind '{}' (known: planned, unexpected)", where, kind));
      ev.planned = kind == "planned";
      ev.cause = text(e, "cause");
      ev.lost_work_min = number(e, "lost_work_min", where, false);
      ev.down_min = number(e, "down_min", where, false);
      if (!(ev.t_h >= 0) || ev.lost_work_min < 0 || ev.down_min < 0)
        throw InputError(where + ": negative or non-finite time");
      auto sp = e.find("spare_used");
      ev.spare_used = sp != e.end() && sp->is_boolean() && sp->get<bool>();
      r.timeline.push_back(std::move(ev));
    }
    std::stable_sort(r.timeline.begin(), r.timeline.end(),
                     [](const ClusterEvent& a, const ClusterEvent& b) { return a.t_h < b.t_h; });
    if (const json* tr = find_object(j, "timeline_run")) {
      r.timeline_run = static_cast<std::int64_t>(number(*tr, "run", origin, false));
      r.run_wall_h = number(*tr, "wall_h", origin, false, -1);
      r.run_useful_h = number(*tr, "useful_h", origin, false, -1);
      r.run_ettr = number(*tr, "ettr", origin, false, -1);
      r.run_goodput = number(*tr, "goodput", origin, false, -1);
      if (tr->contains("unexpected") && tr->contains("planned"))
        r.run_events =
            number(*tr, "unexpected", origin, false) + number(*tr, "planned", origin, false);
    }
  }
  return r;
}

ClusterSweep cluster_sweep_from_json(const json& j, std::string_view origin) {
  ClusterSweep s;
  s.command = text(j, "command"), s.created = text(j, "created");
  if (const json* in = find_object(j, "inputs")) {
    s.model = text(*in, "model"), s.device = text(*in, "device");
    s.failures = text(*in, "failures");
    s.days = number(*in, "days", origin, false);
    s.runs = static_cast<std::int64_t>(number(*in, "runs", origin, false));
  }
  auto vs = j.find("variants");
  if (vs == j.end() || !vs->is_array() || vs->empty())
    throw InputError(fmt::format("{}: missing array 'variants'", origin));
  for (const auto& v : *vs) {
    const std::string name = v.is_object() ? text(v, "name") : std::string();
    if (name.empty()) throw InputError(fmt::format("{}: a variant without a name", origin));
    s.variants.push_back({name, text(v, "what")});
  }
  auto ps = j.find("points");
  if (ps == j.end() || !ps->is_array() || ps->empty())
    throw InputError(fmt::format("{}: missing array 'points'", origin));
  for (std::size_t i = 0; i < ps->size(); ++i) {
    const json& p = (*ps)[i];
    const std::string where = fmt::format("{}: points[{}]", origin, i);
    if (!p.is_object()) throw InputError(where + ": not an object");
    ClusterSweepPoint pt;
    pt.chips = static_cast<std::int64_t>(number(p, "chips", where, true));
    if (pt.chips <= 0) throw InputError(where + ": chips must be positive");
    pt.mtbf_h = number(p, "mtbf_h", where, false, NAN);
    pt.mfu = number(p, "mfu", where, false, NAN);
    if (const json* st = find_object(p, "step")) pt.step_s = number(*st, "step_s", where, false);
    const json& vr = object(p, "variants", where);
    for (const auto& [name, what] : s.variants) {
      const json* v = find_object(vr, name.c_str());
      if (!v) throw InputError(fmt::format("{}: no figures for variant '{}'", where, name));
      ClusterVariantPoint cv;
      cv.ettr = number(*v, "ettr", where, true);
      cv.goodput = number(*v, "goodput", where, true);
      std::tie(cv.ettr_lo, cv.ettr_hi) = interval(*v, "ettr_ci95", cv.ettr);
      std::tie(cv.goodput_lo, cv.goodput_hi) = interval(*v, "goodput_ci95", cv.goodput);
      cv.has_ci = cv.ettr_hi > cv.ettr_lo || cv.goodput_hi > cv.goodput_lo;
      cv.interval_min = number(*v, "interval_min", where, false, NAN);
      cv.unexpected = number(*v, "unexpected", where, false);
      cv.spare_nodes = static_cast<std::int64_t>(number(*v, "spare_nodes", where, false));
      pt.variants[name] = cv;
    }
    s.points.push_back(std::move(pt));
  }
  std::stable_sort(s.points.begin(), s.points.end(),
                   [](const auto& a, const auto& b) { return a.chips < b.chips; });
  return s;
}

}  // namespace attain
