// attain bench: measure ops on backends, side by side, verified first.
#include "attain/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "attain/layer.hpp"
#include "attain/moe.hpp"
#include "attain/threadpool.hpp"
#include "attain/tune.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"
#include "device/probe.hpp"

namespace attain::cli {
namespace {

std::string default_backends() {
  std::string s;
  for (const auto& b : backend_registry()) {
    if (b.name != "attain" && b.name != "openblas") continue;
    s += (s.empty() ? "" : ",") + b.name;
  }
  return s;
}

struct Opts {
  OpSource src;
  std::string backends = default_backends(), out, schedule = "default", layer;
  int threads = 0, stages = 2, rounds = 1;
  double max_seconds = 0.25;
  bool hot = false, json = false, no_progress = false, list = false, no_tune = false;
  bool recheck = false, no_recheck = false;
  std::uint64_t seed = 42;
};

// Runs of this many ops or more measure the machine's ceilings again before the first op and
// after the last (--recheck / --no-recheck decide for any run).
constexpr std::size_t kRecheckMinOps = 8;
// Shorter than the probe's trials: three of 50 ms per FMA loop, three reads of its array.
const probe::ProbeConfig kCheckConfig{0, 0.05, 3, 0};

// Measures the ceilings again into `checks` when the run does (`ops`: its op count).
void recheck(const Opts& o, std::size_t ops, int threads, const char* when,
             std::vector<CeilingsCheck>& checks) {
  if (o.no_recheck || !(o.recheck || ops >= kRecheckMinOps)) return;
  if (!o.json) std::fprintf(stderr, "measuring the machine's ceilings again (%s)\n", when);
  // No thread of a library competes with the check's: attain's pool rests, and the others'
  // threads finish their spin-waits (OpenBLAS: ~0.1 s) first.
  ThreadPool::instance().rest();
  if (std::string_view(when) == "end") std::this_thread::sleep_for(std::chrono::milliseconds(300));
  checks.push_back(probe::check_ceilings(threads, when, kCheckConfig));
}

// Auto schedules come from the tuning cache: the ops it lacks are tuned first (what
// `attain tune` does), so a bench of attain:auto measures tuned schedules, not guesses.
void tune_for_auto(const std::vector<CatalogOp>& ops, const BenchConfig& cfg,
                   const HostCeilings& host, bool no_tune, bool verbose) {
  const bool uses_auto =
      std::any_of(cfg.backends.begin(), cfg.backends.end(), [&](const std::string& b) {
        return b == "attain:auto" || (b == "attain" && cfg.run.schedule == "auto");
      });
  if (!uses_auto || no_tune) return;
  tune::Scheduler& sched = tune::Scheduler::instance();
  tune::TuneConfig tc;
  tc.threads = cfg.run.threads;
  tc.stages = cfg.run.stages;
  tc.seed = cfg.seed;
  tc.progress = cfg.progress;
  tc.search.llc_bytes = cfg.timing.llc_bytes;
  const tune::Machine m = tune::Machine::from(host, tc.threads);
  const auto t0 = std::chrono::steady_clock::now();
  const auto outs = tune::tune_ops(ops, tc, sched, m);
  std::size_t tuned = 0;
  for (const auto& x : outs) {
    tuned += x.status == "tuned";
    if (x.status == "wrong" || x.status == "error")
      fmt::print(stderr, "attain: tuning {}: {}: {}\n", x.op.op.spec(), x.status, x.reason);
  }
  if (verbose && tuned > 0)
    fmt::print("tuned {} ops the cache lacked in {:.1f} s ({})\n", tuned,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
               sched.cache().path().string());
}

// attain bench --layer: one decoder layer's chain of ops, end to end, per backend.
int run_layer_command(const Opts& o, const BenchConfig& cfg, const HostCeilings& host,
                      const Roofline& roof) {
  const LayerSpec spec = parse_layer_spec(o.layer, o.src.context, dtype_arg(o.src.dtype));
  const ModelConfig model = load_bundled_model(spec.model);
  const std::vector<LayerOp> lops = layer_ops(model, spec.pass);
  std::vector<CatalogOp> ops;
  double flops = 0, bytes = 0;
  for (const auto& l : lops) {
    ops.push_back(l.op);
    flops += l.op.op.flops();
    bytes += l.op.op.bytes();
  }
  // The layer's time with every op at its roofline r.
  auto floor_at = [&](const Roofline& r) {
    double s = 0;
    for (const auto& l : lops) s += l.op.op.flops() / (r.attainable_tflops(l.op.op) * 1e12);
    return s;
  };
  const double floor_s = floor_at(roof);
  const int stages = lops.empty() ? 0
                                  : static_cast<int>(std::set<int>([&] {
                                                       std::set<int> s;
                                                       for (const auto& l : lops) s.insert(l.stage);
                                                       return s;
                                                     }())
                                                         .size());
  if (!o.json) {
    fmt::print(
        "attain bench --layer {}: {} {} tokens{}, {} ops in {} stages, {:.3f} GFLOP, {:.1f} MB; "
        "{} threads; roofline floor {:.3f} ms\n",
        o.layer, model.name, spec.pass.tokens,
        spec.pass.phase == "decode" ? fmt::format(" @ context {}", spec.pass.context) : "",
        lops.size(), stages, flops / 1e9, bytes / 1e6, cfg.run.threads, floor_s * 1e3);
    for (const auto& l : lops)
      fmt::print("  stage {}  {:<16} {}\n", l.stage, l.role, l.op.op.spec());
  }
  tune_for_auto(ops, cfg, host, o.no_tune, !o.json);
  std::vector<CeilingsCheck> checks;
  recheck(o, ops.size(), cfg.run.threads, "start", checks);
  const std::vector<LayerResult> rs = run_layer(lops, cfg);
  recheck(o, ops.size(), cfg.run.threads, "end", checks);
  // The floor again against the ceilings measured during the run (0: none measured).
  const double checked_floor_s = checks.empty() ? 0 : floor_at(checked_roofline(checks));
  nlohmann::json j = {{"schema", "attain.layer/1"},
                      {"layer", o.layer},
                      {"model", model.name},
                      {"phase", spec.pass.phase},
                      {"tokens", spec.pass.tokens},
                      {"context", spec.pass.context},
                      {"dtype", dtype_name(spec.pass.dtype)},
                      {"threads", cfg.run.threads},
                      {"created", now_iso()},
                      {"command", command_line()},
                      {"flops", flops},
                      {"bytes", bytes},
                      {"roofline_floor_s", floor_s},
                      {"checks", nlohmann::json::array()},
                      {"ops", nlohmann::json::array()},
                      {"results", nlohmann::json::array()}};
  for (const auto& l : lops)
    j["ops"].push_back({{"spec", l.op.op.spec()}, {"role", l.role}, {"stage", l.stage}});
  for (const auto& c : checks) j["checks"].push_back(to_json(c));
  if (!checks.empty()) j["checked_roofline_floor_s"] = checked_floor_s;
  const LayerResult* base = nullptr;
  for (const auto& r : rs)
    if (r.status == "ok" && base == nullptr) base = &r;
  for (const auto& r : rs) {
    nlohmann::json e = {{"backend", r.backend}, {"status", r.status}, {"verified", r.verified}};
    if (!r.reason.empty()) e["reason"] = r.reason;
    if (r.status == "ok") {
      e["median_s"] = r.median_s;
      e["min_s"] = r.min_s;
      e["iqr_s"] = r.iqr_s;
      e["reps"] = r.reps;
      e["steps"] = r.regions;
      e["roofline_fraction"] = floor_s / r.median_s;
      if (!checks.empty()) e["checked_roofline_fraction"] = checked_floor_s / r.median_s;
      if (base != nullptr) e["speedup_vs_" + base->backend] = base->median_s / r.median_s;
    }
    j["results"].push_back(e);
  }
  if (!o.out.empty() || o.json) emit_json(j, o.out, o.json);
  if (o.json) return 0;
  fmt::print("\n{:<14} {:>11} {:>9} {:>6} {:>9} {:>10}\n", "backend", "layer time", "IQR", "steps",
             "roofline", base ? "vs " + base->backend : "");
  int bad = 0;
  for (const auto& r : rs) {
    if (r.status != "ok") {
      fmt::print("{:<14} {}: {}\n", r.backend, r.status, r.reason);
      bad += r.status == "wrong" || r.status == "error";
      continue;
    }
    fmt::print("{:<14} {:>8.3f} ms {:>6.3f} ms {:>6} {:>8.0f}% {:>9.2f}x\n", r.backend,
               r.median_s * 1e3, r.iqr_s * 1e3, r.regions, 100 * floor_s / r.median_s,
               base->median_s / r.median_s);
  }
  if (!checks.empty()) {
    fmt::print("{}", format_check_lines(checks, roof));
    fmt::print(
        "Roofline floor against the highest of these ceilings: {:.3f} ms (the probe's: {:.3f} ms)",
        checked_floor_s * 1e3, floor_s * 1e3);
    for (const auto& r : rs)
      if (r.status == "ok")
        fmt::print("; {} {:.0f}%", r.backend, 100 * checked_floor_s / r.median_s);
    fmt::print("\n");
  }
  return bad > 0 ? 1 : 0;
}

const bool registered = add_command([](CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "bench", "Measure ops (a suite, a model, one op) on backends, verified first");
  o->src.add_to(sub, true);
  sub->add_option("--backend", o->backends,
                  "comma list of backends, timed side by side: each alone, attain and "
                  "attain:auto in turn run by run (see attain bench --list)")
      ->capture_default_str();
  sub->add_option("--threads", o->threads, "threads per backend (default: all logical CPUs)");
  sub->add_option("--max-seconds", o->max_seconds, "timing budget per op and backend, in seconds")
      ->capture_default_str();
  sub->add_option("--rounds", o->rounds,
                  "run the whole op list this many times, the backends in reverse order every "
                  "other run, and keep each op and backend's fastest run (a shared machine's slow "
                  "spells then hit single runs; a wrong answer in any run stays)")
      ->capture_default_str();
  sub->add_flag("--hot", o->hot, "warm cache: no input rotation, no LLC flush");
  sub->add_option("--stages", o->stages, "attain backend: tile pipeline depth (1 = no prefetch)")
      ->capture_default_str();
  sub->add_option("--schedule", o->schedule,
                  "attain backend: default or auto (attain:auto in --backend runs auto beside "
                  "the default)")
      ->capture_default_str();
  sub->add_option("--layer", o->layer,
                  "MODEL:PHASE:TOKENS: time one decoder layer's op chain end to end (e.g. "
                  "deepseek-v3:decode:32; --context and --dtype apply)");
  sub->add_flag("--no-tune", o->no_tune,
                "auto schedules: do not tune the ops the cache lacks (use the nearest tuned "
                "shape or the cost model)");
  sub->add_flag("--recheck", o->recheck,
                fmt::format("measure the FMA peaks and the read bandwidth again before the first "
                            "op and after the last (a second or two each; on by default from {} "
                            "ops): a shared machine drifts from its cached probe",
                            kRecheckMinOps));
  sub->add_flag("--no-recheck", o->no_recheck, "do not measure the ceilings again");
  sub->add_option("--seed", o->seed, "seed of the random inputs")->capture_default_str();
  sub->add_flag("--json", o->json, "print the results file (JSON) on stdout instead of the table");
  sub->add_option("--out", o->out, "write the results file (schema attain.results/1) here");
  sub->add_flag("--no-progress", o->no_progress,
                "no progress bar (it is shown only on a terminal anyway)");
  sub->add_flag("--list", o->list, "list the backends compiled in, and exit");
  set_action(sub, [o] {
    if (o->list) {
      for (const auto& b : backend_registry()) {
        std::string why;
        const auto be = b.make(&why);
        fmt::print("{:<10} {}{}\n", b.name, b.description,
                   be ? "" : fmt::format(" [not available: {}]", why));
      }
      return 0;
    }
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (o->threads < 0 || o->threads > 4 * hw)
      throw InputError(
          fmt::format("--threads {} (this machine has {} logical CPUs)", o->threads, hw));
    if (o->stages < 1 || o->stages > 8)
      throw InputError(fmt::format("--stages {} must be 1..8", o->stages));
    if (o->schedule != "default" && o->schedule != "auto")
      throw InputError(fmt::format("--schedule {} (known: default, auto)", o->schedule));
    if (!(o->max_seconds > 0)) throw InputError("--max-seconds must be positive");
    if (o->rounds < 1 || o->rounds > 100)
      throw InputError(fmt::format("--rounds {} must be 1..100", o->rounds));
    if (o->rounds > 1 && !o->layer.empty()) throw InputError("--rounds does not apply to --layer");
    if (o->recheck && o->no_recheck) throw InputError("--recheck and --no-recheck contradict");
    if (!o->layer.empty() && (!o->src.suite.empty() || !o->src.ops.empty() ||
                              !o->src.shape.empty() || !o->src.model.empty()))
      throw InputError("--layer runs one layer: it takes no --suite, --model, --op or --shape");
    const auto ops = o->layer.empty() ? o->src.resolve("quick") : std::vector<CatalogOp>{};
    BenchConfig cfg;
    cfg.backends = split_list(o->backends);
    if (cfg.backends.empty()) throw InputError("--backend needs at least one backend");
    cfg.run.threads = o->threads > 0 ? o->threads : hw;
    cfg.run.stages = o->stages;
    cfg.run.schedule = o->schedule;
    cfg.timing.max_seconds = o->max_seconds;
    cfg.timing.hot = o->hot;
    cfg.seed = o->seed;
    cfg.rounds = o->rounds;
    cfg.progress = !o->no_progress && !o->json;

    const HostCeilings host = probe_host(false, !o->json);
    cfg.timing.llc_bytes = timing_llc_bytes(host);
    const Roofline roof = host_roofline(host, cfg.run.threads);

    ResultsFile rf;
    rf.created = now_iso();
    rf.command = command_line();
    rf.machine.cpu_model = host.cpu_model;
    rf.machine.cores = host.cores;
    rf.machine.threads = cfg.run.threads;
    rf.machine.device = "host";
    rf.machine.roofline = roof;
    rf.machine.ceilings = host;
    rf.config = {
        {"max_seconds", cfg.timing.max_seconds},
        {"hot", cfg.timing.hot},
        {"seed", cfg.seed},
        {"stages", cfg.run.stages},
        {"schedule", cfg.run.schedule},
        {"backends", cfg.backends},
        {"rounds", cfg.rounds},
        {"timing", cfg.rounds > 1
                       ? "median of repeats after warm-up, the fastest of the rounds (runs of "
                         "the whole op list); cold cache by input rotation or LLC flush"
                       : "median of repeats after warm-up; cold cache by input rotation or LLC "
                         "flush"},
        {"flops_model", "2*M*N*K per GEMM (grouped: summed; mla: QK^T + PV)"},
        {"bytes_model", "inputs read once + outputs written once, stored dtypes"}};
    if (!o->layer.empty()) return run_layer_command(*o, cfg, host, roof);
    if (!o->json)
      fmt::print(
          "attain bench: {} ops x {} backends{}, {} threads, {} cache; roofline {:.1f} "
          "GFLOP/s, {:.1f} GB/s ({})\n",
          ops.size(), cfg.backends.size(),
          cfg.rounds > 1 ? fmt::format(" x {} rounds", cfg.rounds) : "", cfg.run.threads,
          cfg.timing.hot ? "hot" : "cold", roof.peak_tflops * 1e3, roof.bw_gbps, roof.source);
    // Under mpirun the ops are sharded round robin over the ranks (one rank per host), and
    // rank 0 gathers every result in the suite's order and writes the one results file.
    std::unique_ptr<moe::MpiSession> mpi;
    if (moe::launched_by_mpirun()) {
      mpi = std::make_unique<moe::MpiSession>();
      cfg.progress = cfg.progress && mpi->rank() == 0;
      rf.results = moe::run_bench_sharded(ops, cfg, roof, &rf.machine.libraries);
      if (mpi->rank() != 0) return 0;
      rf.config["ranks"] = mpi->size();
    } else {
      tune_for_auto(ops, cfg, host, o->no_tune, !o->json);
      recheck(*o, ops.size(), cfg.run.threads, "start", rf.machine.checks);
      rf.results = run_bench(ops, cfg, roof, &rf.machine.libraries);
      recheck(*o, ops.size(), cfg.run.threads, "end", rf.machine.checks);
    }
    const Summary sum = summarize(rf.results, cfg.backends);
    if (!o->out.empty()) write_results(o->out, rf);
    if (o->json) {
      auto j = to_json(rf);
      j["summary"] = to_json(sum);
      emit_json(j, "", true);
      return 0;
    }
    fmt::print("{}", format_table(rf.results, cfg.backends));
    fmt::print("{}", format_summary(sum, cfg.backends));
    fmt::print("{}", format_checks(rf.machine, rf.results, cfg.backends));
    for (const auto& [b, v] : rf.machine.libraries) fmt::print("  {:<10} = {}\n", b, v);
    for (const auto& r : rf.results)
      if (r.status == "wrong" || r.status == "error")
        fmt::print("{} {} on {}: {}\n", r.status == "wrong" ? "WRONG" : "ERROR", r.op.op.spec(),
                   r.backend, r.reason);
    if (!o->out.empty()) fmt::print("results written to {}\n", o->out);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
