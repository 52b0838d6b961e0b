// attain cluster: how long, at what goodput, with which checkpoint interval, on which chips.
// The simulation and its files live in the library (attain/cluster_job.hpp).
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>

#include "attain/bench.hpp"
#include "attain/cluster_job.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

struct Opts {
  cluster::JobRequest job;
  bool json = false, no_timeline = false;
  std::string out;
};

int run(Opts& o, const CLI::App* sub) {
  cluster::JobRequest& q = o.job;
  // Overrides: given, they must be figures (their defaults mean "the table's / the device's").
  auto given = [&](const char* flag, double v, bool zero_ok) {
    const bool ok = std::isfinite(v) && (zero_ok ? v >= 0 : v > 0);
    if (sub->count(flag) > 0 && !ok)
      throw InputError(fmt::format("{} {:g} must be {} and finite", flag, v,
                                   zero_ok ? "0 or more" : "positive"));
  };
  given("--peak-tflops", q.peak_tflops, false);
  given("--efficiency", q.efficiency, false);
  given("--mem-gbps", q.mem_gbps, false);
  given("--scaleup-gbps", q.scaleup_gbps, false);
  given("--mem-gb", q.mem_gb, true);
  given("--detect-min", q.detect_min, true);
  given("--restart-min", q.restart_min, true);
  given("--rewarm-min", q.rewarm_min, true);
  if (sub->count("--tokens") && !sub->count("--days")) q.days = 0;
  if (sub->count("--sweep") && q.sweep.empty())
    q.sweep = {1000, 2000, 5000, 10000, 20000, 50000, 100000};
  q.timeline = !o.no_timeline;
  q.created = now_iso();
  q.command = command_line();
  q.validate();
  nlohmann::ordered_json j;
  std::string text;
  if (q.sweep.empty()) {
    ProgressBar bar(!o.json, static_cast<std::size_t>(q.runs), -1, "runs");
    const auto out = cluster::simulate_job(
        q, [&](int done) { bar.update(static_cast<std::size_t>(done), "Monte Carlo runs"); });
    j = cluster::to_json(out);
    text = cluster::job_text(out);
  } else {
    ProgressBar bar(!o.json, cluster::sweep_runs(q), -1, "runs");
    const auto out = cluster::sweep_jobs(
        q, [&](std::size_t done, const std::string& what) { bar.update(done, what); });
    j = cluster::to_json(out);
    text = cluster::sweep_text(out);
  }
  if (!o.out.empty()) write_text_file(o.out, j.dump(2) + "\n");
  if (o.json)
    std::cout << j.dump(2) << "\n";
  else
    std::cout << text;
  return 0;
}

const bool registered = add_command([](CLI::App& app) {
  auto o = std::make_shared<Opts>();
  cluster::JobRequest* q = &o->job;
  auto* sub = app.add_subcommand("cluster",
                                 "Simulate one training job on thousands of chips: step time, "
                                 "failures, checkpoints, ETTR and goodput");
  // What runs
  sub->add_option("--device", q->device,
                  "device id (attain devices) or a device file's path (default h100-sxm)");
  sub->add_option("--dtype", q->dtype, "training dtype for the compute peak (default bf16)");
  sub->add_option("--peak-tflops", q->peak_tflops, "override the device's dense peak at --dtype");
  sub->add_option("--assume-peak", q->assume_peaks,
                  "fill a peak the vendor does not publish, labelled as assumed: bf16=fp8/2, "
                  "bf16=500 (repeatable)");
  sub->add_option("--mem-gbps", q->mem_gbps, "override the device's memory bandwidth (GB/s)");
  sub->add_option("--mem-gb", q->mem_gb, "override the device's memory capacity (GB)");
  sub->add_option("--scaleup-gbps", q->scaleup_gbps,
                  "override the device's scale-up link (GB/s per direction)");
  sub->add_option("--model", q->model,
                  "bundled model name or config.json path (default llama-3.1-405b)");
  sub->add_option("--chips", q->chips, "chips in the job (default 16384)");
  sub->add_option("--seq", q->seq, "sequence length (default 8192)");
  sub->add_option("--batch", q->batch, "global batch in sequences (default 2048)");
  sub->add_flag("--scale-batch", q->scale_batch,
                "raise the batch to whole micro-batches on every DP rank (default: kept as given)");
  sub->add_option("--tp", q->tp, "tensor parallel size (default: chips per node, 1 for MoE)");
  sub->add_option("--pp", q->pp, "pipeline parallel size (default: smallest power of 2 that fits)");
  sub->add_option("--cp", q->cp,
                  "context parallel size: each sequence's tokens over CP ranks (default 1)");
  sub->add_option("--ep", q->ep, "expert parallel size (MoE; default chips per node)");
  sub->add_option("--micro-batch", q->micro_batch, "sequences per micro-batch (default 1)");
  sub->add_option("--virtual-stages", q->virtual_stages,
                  "interleaved pipeline chunks per rank (default min(4, layers/pp))");
  sub->add_option("--efficiency", q->efficiency,
                  "fraction of the roofline the matrix ops reach (default: the device file's "
                  "training_efficiency, else 0.7)");
  sub->add_option(
      "--efficiency-from", q->efficiency_from,
      "take the efficiency from measured results (attain bench --out FILE, or attain import): "
      "each op at the nearest measured op of its kind and dtype, the rest at their geometric "
      "mean");
  sub->add_option("--efficiency-backend", q->efficiency_backend,
                  "with --efficiency-from: only this backend");
  sub->add_option("--target-ettr", q->target_ettr,
                  "solve for the fewest hot spares that reach this mean ETTR (e.g. 0.95), at the "
                  "checkpoint interval in use (with --sweep: at every scale)");
  sub->add_option("--target-goodput", q->target_goodput,
                  "the same for a goodput (a fraction of the cluster's peak)");
  sub->add_option("--overlap", q->overlap,
                  "fraction of communication hidden under compute (default 0.8)");
  sub->add_option("--overlap-slowdown", q->overlap_slowdown,
                  "how much slower compute runs beside the traffic it hides (default 0.189, "
                  "arXiv:2507.03114)");
  sub->add_option("--allreduce", q->allreduce, "ring, tree or best (default best)");
  sub->add_flag("--recompute", q->recompute, "full activation recomputation");
  sub->add_flag("--unfused-attention", q->unfused_attention, "attention scores go through memory");
  // Topology
  sub->add_option("--chips-per-node", q->topo.chips_per_node,
                  "chips per node / scale-up domain (default 8)");
  sub->add_option("--intra-gbps", q->topo.intra_gbps,
                  "per chip, inside a node, GB/s (default: the device's link)");
  sub->add_option("--inter-gbps", q->topo.inter_gbps, "per chip NIC, GB/s (default 50 = 400 Gb/s)");
  sub->add_option("--intra-latency-us", q->topo.intra_latency_us,
                  "intra-node message latency (default 3)");
  sub->add_option("--inter-latency-us", q->topo.inter_latency_us,
                  "inter-node message latency (default 10)");
  sub->add_option("--pod-chips", q->topo.pod_chips,
                  "chips under one non-blocking network tier (default 0: the whole cluster; "
                  "Llama 3's pods: 3072)");
  sub->add_option("--oversubscription", q->topo.oversubscription,
                  "the tier between pods: a chip's share of it is --inter-gbps / this (default 1; "
                  "Llama 3's: 7)");
  // How long
  sub->add_option("--days", q->days, "wall-clock days to simulate (default 54; 0 with --tokens)");
  sub->add_option("--tokens", q->tokens, "token budget: simulate until it is trained");
  // Failures and recovery
  sub->add_option("--failures", q->failures,
                  "failure table: bundled name, JSON path or none (default llama3)");
  sub->add_option("--detect-min", q->detect_min, "override the table's detection time");
  sub->add_option("--restart-min", q->restart_min, "override the table's restart time");
  sub->add_option("--rewarm-min", q->rewarm_min, "override the table's re-warm time");
  sub->add_option("--spares", q->spares, "hot spare nodes, or auto = 2% of nodes (default auto)");
  sub->add_option("--repair-hours", q->repair_hours,
                  "a swapped node returns to the spares after (default 48)");
  sub->add_option("--replace-min", q->replace_min,
                  "wait for a node when no spare is free (default 60)");
  sub->add_option("--straggler-fraction", q->straggler_fraction,
                  "probability that a node is slow (default 0)");
  sub->add_option("--straggler-slowdown", q->straggler_slowdown,
                  "job slowdown while a slow node is in it (default 1)");
  // Checkpoints
  sub->add_option("--checkpoint", q->checkpoint, "sync, async or memory (default async)");
  sub->add_option("--checkpoint-interval", q->interval,
                  "minutes between checkpoints, or auto = Daly (default auto)");
  sub->add_option("--storage-gbps", q->storage_gbps,
                  "aggregate checkpoint storage bandwidth, GB/s (default 2000)");
  sub->add_option("--ckpt-bytes-per-param", q->ckpt_bytes_per_param,
                  "checkpoint bytes per parameter (default 14)");
  sub->add_option("--ckpt-overhead-s", q->ckpt_overhead_s,
                  "fixed pause per checkpoint (default 2)");
  sub->add_option("--host-copy-gbps", q->host_copy_gbps,
                  "device-to-host copy per chip, GB/s (default 25)");
  // Monte Carlo and output
  sub->add_option("--runs", q->runs, "Monte Carlo runs (default 16)");
  sub->add_option("--seed", q->seed, "random seed (default 1)");
  sub->add_option("--threads", q->threads, "threads for the runs (default: all cores)");
  sub->add_flag("--json", o->json, "print JSON instead of the text summary");
  sub->add_option("--out", o->out, "also write the JSON to this file");
  sub->add_flag("--no-timeline", o->no_timeline, "leave the interruption timeline out of the JSON");
  sub->add_option("--sweep", q->sweep, "chip counts to sweep (e.g. 1000,10000,100000)")
      ->delimiter(',')
      ->expected(0, -1)
      ->default_str("1000,2000,5000,10000,20000,50000,100000");
  set_action(sub, [o, sub] { return run(*o, sub); });
});

}  // namespace
}  // namespace attain::cli
