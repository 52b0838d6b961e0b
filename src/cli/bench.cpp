// attain bench: measure ops on backends, side by side, verified first.
#include "attain/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
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
  bool recheck = false, no_recheck = false, resume = false;
  std::string deadline;
  double sample_every = 60;
  std::uint64_t seed = 42;
};

// "90m", "6h", "45s", "3600": seconds; InputError for anything else.
double parse_duration(const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = used > 0 ? text.substr(used) : "";
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 0;
  if (used == 0 || scale == 0 || !(v > 0) || !std::isfinite(v * scale))
    throw InputError(
        fmt::format("--deadline '{}': give a positive duration, e.g. 45s, 90m, 6h", text));
  return v * scale;
}

// The signal that asked the run to stop (SIGINT, SIGTERM), 0 while none did. The first one
// stops the run between ops, its file written; a second one ends the process at once.
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
  std::signal(sig, SIG_DFL);
}

// Runs of this many ops or more measure the machine's ceilings again before the first op and
// after the last, and sample them between ops (--recheck / --no-recheck decide for any run).
constexpr std::size_t kRecheckMinOps = 8;
// Shorter than the probe's trials: three of 50 ms per FMA loop, every read loop three times.
const probe::ProbeConfig kCheckConfig{0, 0.05, 3, 0, ""};
// A sample between ops: two FMA trials of 20 ms per loop, two reads with the probe's fastest
// read loop (about 0.3 s in all, with the pause before it).
const probe::ProbeConfig kSampleConfig{0, 0.02, 2, 0, ""};

bool rechecks(const Opts& o, std::size_t ops) {
  return !o.no_recheck && (o.recheck || ops >= kRecheckMinOps);
}

// Measures the ceilings again into `checks` when the run does (`ops`: its op count).
void recheck(const Opts& o, std::size_t ops, int threads, const char* when,
             std::vector<CeilingsCheck>& checks) {
  if (!rechecks(o, ops)) return;
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

// Judges the run's results against the best ceilings known now: the probe cache as it is (a
// run beside this one may have raised it) raised by this run's checks, and the checks
// themselves (at the run's thread count). Results still faster than those ceilings are ceiling
// errors: they raise the cache for later runs (not from a hot run, whose operands sit in cache
// and beat the memory ceiling by design), and this run's aggregates leave them out.
void judge_run(ResultsFile& f, const HostCeilings& host, int threads, bool hot, bool verbose) {
  const Roofline start = host_roofline(host, threads);
  HostCeilings best = host;
  const auto cached = probe::raise_cached([&](HostCeilings& c) {
    return !raise_from_run(c, threads, f.machine.checks, {}, start).empty();
  });
  if (cached)
    best = *cached;
  else
    raise_from_run(best, threads, f.machine.checks, {}, start);
  Roofline roof = host_roofline(best, threads);
  if (!f.machine.checks.empty()) roof = best_of(roof, checked_roofline(f.machine.checks));
  roof.source = fmt::format("the best known at the end of the run: {}{}", start.source,
                            f.machine.checks.empty()
                                ? ""
                                : fmt::format(" and {} checks during the run (the higher of each)",
                                              f.machine.checks.size()));
  judge_results(f.results, roof, f.machine.checks);
  f.machine.roofline = roof;
  f.machine.ceilings = best;
  std::vector<std::string> raised;
  if (!hot)
    probe::raise_cached([&](HostCeilings& c) {
      raised = raise_from_run(c, threads, {}, f.results, roof);
      return !raised.empty();
    });
  const auto errors = std::count_if(f.results.begin(), f.results.end(),
                                    [](const Result& r) { return r.exceeds_ceiling(); });
  if (errors > 0 && verbose) {
    fmt::print(stderr,
               "attain: warning: {} result{} ran faster than the ceilings allow: shown as "
               "CEIL!, left out of the aggregates. A ceiling is wrong, not a kernel fast.\n",
               errors, errors == 1 ? "" : "s");
    for (const auto& line : raised) fmt::print(stderr, "  the probe cache now holds {}\n", line);
  }
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
    MachineInfo m;
    m.roofline = roof, m.checks = checks;
    fmt::print("{}", format_checks(m));
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
                            "op and after the last (a second or two each), and sample them between "
                            "ops (--sample-every); on by default from {} ops. Efficiencies are "
                            "judged against the best ceilings known at the end of the run",
                            kRecheckMinOps));
  sub->add_flag("--no-recheck", o->no_recheck,
                "do not measure the ceilings again (nor sample them between ops)");
  sub->add_option("--sample-every", o->sample_every,
                  "in runs that re-check: sample the ceilings between ops at most this often, in "
                  "seconds (about 0.3 s each; 0: never), so that each op is also judged against "
                  "what the machine gave near it")
      ->capture_default_str();
  sub->add_flag("--resume", o->resume,
                "finish the --out file of an earlier run that stopped: its ops and backends are "
                "skipped (the settings must be the same); without a file, start it");
  sub->add_option("--deadline", o->deadline,
                  "start no op after this long (e.g. 45s, 90m, 6h): the --out file is left "
                  "incomplete for --resume, and attain exits with status 3");
  sub->add_option("--seed", o->seed, "seed of the random inputs")->capture_default_str();
  sub->add_flag("--json", o->json, "print the results file (JSON) on stdout instead of the table");
  sub->add_option("--out", o->out,
                  "write the results file (schema attain.results/1) here, op by op as the run "
                  "goes with --rounds 1 (a kill loses at most the op in flight; under mpirun each "
                  "rank writes its shard to FILE.rank<r>of<R>, rank 0 all of it to FILE)");
  sub->add_flag("--no-progress", o->no_progress,
                "no progress: neither the bar (on a terminal) nor a line a minute (in a log)");
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
    if (!(o->sample_every >= 0) || !std::isfinite(o->sample_every))
      throw InputError("--sample-every must be 0 or more seconds");
    const double deadline_s = o->deadline.empty() ? 0 : parse_duration(o->deadline);
    if (o->resume && o->out.empty())
      throw InputError("--resume needs --out FILE: the file to finish");
    if (o->resume && o->rounds > 1)
      throw InputError("--resume takes runs of one round (--rounds 1)");
    if (o->resume && !o->layer.empty()) throw InputError("--resume does not apply to --layer");
    if (!o->layer.empty() && (!o->src.suite.empty() || !o->src.ops.empty() ||
                              !o->src.shape.empty() || !o->src.model.empty()))
      throw InputError("--layer runs one layer: it takes no --suite, --model, --op or --shape");
    const auto ops = o->layer.empty() ? o->src.resolve("quick") : std::vector<CatalogOp>{};
    // One op larger than memory is bad input (in a suite it is recorded as unsupported).
    if (ops.size() == 1) require_memory_for(ops[0].op);
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
    // Under mpirun the ops are sharded round robin over the ranks (one rank per host), each
    // rank writes its shard's file (FILE.rank<r>of<R>) op by op, and rank 0 gathers every result
    // in the suite's order and writes the one results file.
    std::unique_ptr<moe::MpiSession> mpi;
    int rank = 0;
    if (moe::launched_by_mpirun()) {
      mpi = std::make_unique<moe::MpiSession>();
      rank = mpi->rank();
      cfg.progress = cfg.progress && rank == 0;
      rf.config["ranks"] = mpi->size();
      // A finished file is left as it is (its shards' files are gone with the run that made
      // it).
      bool done = false;
      if (rank == 0 && o->resume && std::filesystem::exists(o->out)) {
        try {
          done = read_results(o->out).complete;
        } catch (const InputError&) {
        }
      }
      if (moe::from_rank0(done)) {
        if (rank == 0 && !o->json) fmt::print("{} is complete: nothing left to run\n", o->out);
        return 0;
      }
    }
    const std::vector<CatalogOp> mine = mpi ? moe::shard_of(ops, rank, mpi->size()) : ops;
    const std::string journal_path =
        mpi ? fmt::format("{}.rank{}of{}", o->out, rank, mpi->size()) : o->out;
    // One round with --out: the file is written op by op (and resumable).
    std::unique_ptr<ResultsJournal> journal;
    if (!o->out.empty() && cfg.rounds == 1) {
      journal = std::make_unique<ResultsJournal>(journal_path, rf, mine, o->resume);
      if (journal->resumed() > 0 && !o->json)
        fmt::print(
            "resuming {}: {} results recorded, {} ops left to run\n", journal_path,
            journal->resumed(), std::count_if(mine.begin(), mine.end(), [&](const CatalogOp& op) {
              return std::any_of(cfg.backends.begin(), cfg.backends.end(),
                                 [&](const std::string& b) { return !journal->recorded(op, b); });
            }));
      cfg.hooks.skip = [&](const CatalogOp& op, const std::string& b) {
        return journal->recorded(op, b);
      };
      cfg.hooks.op_done = [&](std::span<const Result> rs) { journal->add(rs); };
    }
    ResultsFile& file = journal ? journal->file() : rf;
    std::vector<CeilingsCheck>& checks = file.machine.checks;
    const auto t0 = std::chrono::steady_clock::now();
    g_stop_signal = 0;
    std::signal(SIGINT, on_stop_signal);
    std::signal(SIGTERM, on_stop_signal);
    bool past_deadline = false;
    cfg.hooks.stop = [&] {
      past_deadline =
          past_deadline ||
          (deadline_s > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >=
               deadline_s);
      return past_deadline || g_stop_signal != 0;
    };
    // Short samples of the ceilings between ops, at most every --sample-every seconds (one
    // process only: ranks sharing a host would measure each other).
    const bool checked = !mpi && rechecks(*o, ops.size());
    std::unique_ptr<probe::CeilingSampler> sampler;
    auto last_sample = std::chrono::steady_clock::now();
    if (checked && o->sample_every > 0)
      cfg.hooks.before_op = [&] {
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - last_sample).count() <
            o->sample_every)
          return;
        if (!sampler) {
          probe::ProbeConfig sc = kSampleConfig;
          sc.read_kernel = host.read_kernel;
          sampler = std::make_unique<probe::CeilingSampler>(cfg.run.threads, sc);
        }
        ThreadPool::instance().rest();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // others' spin-waits
        checks.push_back(sampler->sample("sample"));
        last_sample = std::chrono::steady_clock::now();
      };
    if (!mpi) tune_for_auto(ops, cfg, host, o->no_tune, !o->json);
    if (!mpi && !checked && !o->no_recheck && !o->json)
      fmt::print(stderr,
                 "(runs of fewer than {} ops do not measure the ceilings again: --recheck "
                 "does)\n",
                 kRecheckMinOps);
    if (checked) recheck(*o, ops.size(), cfg.run.threads, "start", checks);
    last_sample = std::chrono::steady_clock::now();
    std::vector<Result> fresh = run_bench(mine, cfg, roof, &file.machine.libraries);
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    sampler.reset();
    bool complete = !past_deadline && g_stop_signal == 0;
    if (checked && g_stop_signal == 0) recheck(*o, ops.size(), cfg.run.threads, "end", checks);
    if (journal) {
      journal->finish(complete, cfg.backends);
      fresh = journal->file().results;
    }
    if (mpi) {
      rf.results = moe::gather_sharded(ops, fresh, &file.machine.libraries);
      rf.machine.libraries = file.machine.libraries;
      complete = moe::all_ranks(complete);
      // Every rank's shard is in rank 0's file once the run is complete.
      if (journal && complete) {
        journal.reset();
        std::filesystem::remove(journal_path);
      }
      if (rank != 0) return complete ? 0 : g_stop_signal != 0 ? 128 + g_stop_signal : 3;
      std::set<std::string> specs;
      for (const auto& r : rf.results) specs.insert(r.op.op.spec());
      rf.complete = complete, rf.ops_done = specs.size(), rf.ops_total = ops.size();
    } else if (journal) {
      rf = journal->file();
    } else {
      rf.results = std::move(fresh);
      std::set<std::string> specs;
      for (const auto& r : rf.results) specs.insert(r.op.op.spec());
      rf.complete = complete, rf.ops_done = specs.size(), rf.ops_total = ops.size();
    }
    judge_run(rf, host, cfg.run.threads, cfg.timing.hot, !o->json);
    if (journal && !mpi) {  // (a rank's file holds its shard only)
      journal->file() = rf;
      journal->finish(complete, cfg.backends);
    }
    const Summary sum = summarize(rf.results, cfg.backends);
    if (!o->out.empty() && (!journal || mpi)) write_results(o->out, rf);
    const int status = complete ? 0 : g_stop_signal != 0 ? 128 + g_stop_signal : 3;
    auto say_incomplete = [&] {
      if (complete) return;
      fmt::print(
          stderr, "attain: {} after {} of {} ops; {}\n",
          g_stop_signal != 0 ? "interrupted" : "stopped at the deadline", rf.ops_done, ops.size(),
          o->out.empty() ? "(no --out file to resume)"
                         : fmt::format("the same command with --resume finishes {}", o->out));
    };
    if (o->json) {
      auto j = to_json(rf);
      j["summary"] = to_json(sum);
      emit_json(j, "", true);
      say_incomplete();
      return status;
    }
    fmt::print("{}", format_table(rf.results, cfg.backends));
    fmt::print("{}", format_summary(sum, cfg.backends));
    fmt::print("{}", format_checks(rf.machine));
    fmt::print(
        "\nHeadline (the README's form; attain report FILE --headline prints it again):\n\n{}",
        format_headline(rf, cfg.backends));
    for (const auto& [b, v] : rf.machine.libraries) fmt::print("  {:<10} = {}\n", b, v);
    for (const auto& r : rf.results)
      if (r.status == "wrong" || r.status == "error")
        fmt::print("{} {} on {}: {}\n", r.status == "wrong" ? "WRONG" : "ERROR", r.op.op.spec(),
                   r.backend, r.reason);
    if (!o->out.empty()) fmt::print("results written to {}\n", o->out);
    say_incomplete();
    return status;
  });
});

}  // namespace
}  // namespace attain::cli
