// `attain bench`'s run of record around run_bench(): ceilings measured again and sampled, the
// results file written op by op and resumable, the deadline and Ctrl-C, sharding under mpirun,
// and the judging of every result against the best ceilings known at the end.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <memory>
#include <set>
#include <thread>

#include "attain/bench_session.hpp"
#include "attain/moe.hpp"
#include "attain/threadpool.hpp"
#include "attain/tune.hpp"
#include "core/util.hpp"
#include "device/probe.hpp"

namespace attain {
namespace {

// The signal that asked the run to stop (SIGINT, SIGTERM), 0 while none did. The first one
// stops the run between ops, its file written; a second one ends the process at once. The first
// says so on stderr (write: async-signal-safe): one op of the full suite runs for minutes.
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
  std::signal(sig, SIG_DFL);
  static constexpr char kSaid[] =
      "\nattain bench: stopping after the op in flight (signal again to stop at once)\n";
  [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, kSaid, sizeof kSaid - 1);
}

// on_stop_signal for SIGINT and SIGTERM while it lives; the handlers it replaced (a Python
// interpreter's, a program's own) come back when it ends.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

// Shorter than the probe's trials: three of 50 ms per FMA loop, every read loop three times.
const probe::ProbeConfig kCheckConfig{0, 0.05, 3, 0, ""};
// A sample between ops: two FMA trials of 20 ms per loop, two reads with the probe's fastest
// read loop (about 0.3 s in all, with the pause before it).
const probe::ProbeConfig kSampleConfig{0, 0.02, 2, 0, ""};

// Measures the ceilings again into `checks`.
void recheck(bool verbose, int threads, const char* when, std::vector<CeilingsCheck>& checks) {
  if (verbose) std::fprintf(stderr, "measuring the machine's ceilings again (%s)\n", when);
  // No thread of a library competes with the check's: attain's pool rests, and the others'
  // threads finish their spin-waits (OpenBLAS: ~0.1 s) first.
  ThreadPool::instance().rest();
  if (std::string_view(when) == "end") std::this_thread::sleep_for(std::chrono::milliseconds(300));
  checks.push_back(probe::check_ceilings(threads, when, kCheckConfig));
}

// Auto schedules come from the tuning cache: the ops it lacks are tuned first (what
// `attain tune` does), so a bench of attain:auto measures tuned schedules, not guesses.
void tune_for_auto(const std::vector<CatalogOp>& ops, const BenchConfig& cfg,
                   const HostCeilings& host, bool verbose) {
  const bool uses_auto =
      std::any_of(cfg.backends.begin(), cfg.backends.end(), [&](const std::string& b) {
        return b == "attain:auto" || (b == "attain" && cfg.run.schedule == "auto");
      });
  if (!uses_auto) return;
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
    fmt::print("tuned {} ops the cache lacked in {:.1f} s ({})\n", tuned, since(t0),
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

// Distinct ops among the results.
std::size_t ops_in(const std::vector<Result>& results) {
  std::set<std::string> specs;
  for (const auto& r : results) specs.insert(r.op.op.spec());
  return specs.size();
}

}  // namespace

double parse_duration(std::string_view text) {
  const std::string t(text);
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = used > 0 ? t.substr(used) : "";
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 0;
  if (used == 0 || scale == 0 || !(v > 0) || !std::isfinite(v * scale))
    throw InputError(
        fmt::format("--deadline '{}': give a positive duration, e.g. 45s, 90m, 6h", excerpt(text)));
  return v * scale;
}

void BenchRequest::validate() const {
  if (cfg.backends.empty()) throw InputError("--backend needs at least one backend");
  if (cfg.run.stages < 1 || cfg.run.stages > 8)
    throw InputError(fmt::format("--stages {} must be 1..8", cfg.run.stages));
  if (cfg.run.schedule != "default" && cfg.run.schedule != "auto")
    throw InputError(
        fmt::format("--schedule {} (known: default, auto)", excerpt(cfg.run.schedule)));
  if (!(cfg.timing.max_seconds > 0)) throw InputError("--max-seconds must be positive");
  if (cfg.rounds < 1 || cfg.rounds > 100)
    throw InputError(fmt::format("--rounds {} must be 1..100", cfg.rounds));
  if (!(sample_every_s >= 0) || !std::isfinite(sample_every_s))
    throw InputError("--sample-every must be 0 or more seconds");
  if (!(deadline_s >= 0)) throw InputError("the deadline must be 0 (none) or more seconds");
  if (resume && out.empty()) throw InputError("--resume needs --out FILE: the file to finish");
  if (resume && cfg.rounds > 1) throw InputError("--resume takes runs of one round (--rounds 1)");
}

std::string BenchOutcome::incomplete_note(const std::string& out) const {
  if (complete) return "";
  return fmt::format("attain: {} after {} of {} ops; {}\n",
                     stop_signal != 0 ? "interrupted" : "stopped at the deadline", file.ops_done,
                     file.ops_total,
                     out.empty() ? "(no --out file to resume)"
                                 : fmt::format("the same command with --resume finishes {}", out));
}

nlohmann::json to_json(const BenchOutcome& o) {
  nlohmann::json j = to_json(o.file);
  j["summary"] = to_json(o.summary);
  return j;
}

ResultsFile results_header(const BenchRequest& req, const HostCeilings& host) {
  const BenchConfig& cfg = req.cfg;
  ResultsFile rf;
  rf.created = req.created;
  rf.command = req.command;
  rf.machine.cpu_model = host.cpu_model;
  rf.machine.cores = host.cores;
  rf.machine.threads = cfg.run.threads;
  rf.machine.device = "host";
  rf.machine.roofline = host_roofline(host, cfg.run.threads);
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
  return rf;
}

BenchOutcome run_bench_session(const BenchRequest& req, const HostCeilings& host) {
  req.validate();
  BenchConfig cfg = req.cfg;
  const std::vector<CatalogOp>& ops = req.ops;
  ResultsFile rf = results_header(req, host);
  const Roofline roof = rf.machine.roofline;
  BenchOutcome outcome;

  std::unique_ptr<moe::MpiSession> mpi;
  int rank = 0;
  if (moe::launched_by_mpirun()) {
    mpi = std::make_unique<moe::MpiSession>();
    rank = mpi->rank();
    cfg.progress = cfg.progress && rank == 0;
    rf.config["ranks"] = mpi->size();
    // A finished file is left as it is (its shards' files are gone with the run that made it).
    bool done = false;
    if (rank == 0 && req.resume && std::filesystem::exists(req.out)) {
      try {
        done = read_results(req.out).complete;
      } catch (const InputError&) {
      }
    }
    if (moe::from_rank0(done)) {
      outcome.already_done = true;
      outcome.holds_results = rank == 0;
      return outcome;
    }
  }
  const std::vector<CatalogOp> mine = mpi ? moe::shard_of(ops, rank, mpi->size()) : ops;
  const std::string journal_path =
      mpi ? fmt::format("{}.rank{}of{}", req.out, rank, mpi->size()) : req.out;
  // One round with --out: the file is written op by op (and resumable).
  std::unique_ptr<ResultsJournal> journal;
  if (!req.out.empty() && cfg.rounds == 1) {
    journal = std::make_unique<ResultsJournal>(journal_path, rf, mine, req.resume);
    if (journal->resumed() > 0 && req.verbose)
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
  auto signals = std::make_unique<StopSignals>();
  bool past_deadline = false;
  cfg.hooks.stop = [&] {
    past_deadline = past_deadline || (req.deadline_s > 0 && since(t0) >= req.deadline_s);
    return past_deadline || g_stop_signal != 0;
  };
  // Short samples of the ceilings between ops, at most every sample_every_s seconds (one
  // process only: ranks sharing a host would measure each other).
  const bool checked = !mpi && req.rechecks(ops.size());
  std::unique_ptr<probe::CeilingSampler> sampler;
  auto last_sample = std::chrono::steady_clock::now();
  if (checked && req.sample_every_s > 0)
    cfg.hooks.before_op = [&] {
      if (since(last_sample) < req.sample_every_s) return;
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
  if (!mpi && req.tune) tune_for_auto(ops, cfg, host, req.verbose);
  if (!mpi && !checked && req.recheck != Recheck::never && req.verbose)
    fmt::print(stderr,
               "(runs of fewer than {} ops do not measure the ceilings again: --recheck does)\n",
               kRecheckMinOps);
  if (checked) recheck(req.verbose, cfg.run.threads, "start", checks);
  last_sample = std::chrono::steady_clock::now();
  std::vector<Result> fresh = run_bench(mine, cfg, roof, &file.machine.libraries);
  signals.reset();
  sampler.reset();
  outcome.stop_signal = g_stop_signal;
  bool complete = !past_deadline && g_stop_signal == 0;
  if (checked && g_stop_signal == 0) recheck(req.verbose, cfg.run.threads, "end", checks);
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
    outcome.complete = complete;
    if (rank != 0) {
      outcome.holds_results = false;
      return outcome;
    }
    rf.complete = complete, rf.ops_done = ops_in(rf.results), rf.ops_total = ops.size();
  } else if (journal) {
    rf = journal->file();
  } else {
    rf.results = std::move(fresh);
    rf.complete = complete, rf.ops_done = ops_in(rf.results), rf.ops_total = ops.size();
  }
  judge_run(rf, host, cfg.run.threads, cfg.timing.hot, req.verbose);
  if (journal && !mpi) {  // (a rank's file holds its shard only)
    journal->file() = rf;
    journal->finish(complete, cfg.backends);
  }
  if (!req.out.empty() && (!journal || mpi)) write_results(req.out, rf);
  outcome.complete = complete;
  outcome.summary = summarize(rf.results, cfg.backends);
  outcome.file = std::move(rf);
  return outcome;
}

LayerReport plan_layer(const std::string& layer, std::int64_t context, DType dtype, int threads,
                       const Roofline& roof) {
  const LayerSpec spec = parse_layer_spec(layer, context, dtype);
  const ModelConfig model = load_bundled_model(spec.model);
  LayerReport r;
  r.layer = layer;
  r.model = model.name;
  r.pass = spec.pass;
  r.threads = threads;
  r.ops = layer_ops(model, spec.pass);
  for (const auto& l : r.ops) {
    r.flops += l.op.op.flops();
    r.bytes += l.op.op.bytes();
    r.floor_s += l.op.op.flops() / (roof.attainable_tflops(l.op.op) * 1e12);
  }
  return r;
}

void run_layer_session(LayerReport& r, const BenchRequest& req, const HostCeilings& host) {
  std::vector<CatalogOp> ops;
  for (const auto& l : r.ops) ops.push_back(l.op);
  if (req.tune) tune_for_auto(ops, req.cfg, host, req.verbose);
  const bool checked = req.rechecks(ops.size());
  if (checked) recheck(req.verbose, req.cfg.run.threads, "start", r.checks);
  r.results = run_layer(r.ops, req.cfg);
  if (checked) recheck(req.verbose, req.cfg.run.threads, "end", r.checks);
  // The floor again against the ceilings measured during the run.
  r.checked_floor_s = 0;
  if (!r.checks.empty()) {
    const Roofline checked_roof = checked_roofline(r.checks);
    for (const auto& l : r.ops)
      r.checked_floor_s += l.op.op.flops() / (checked_roof.attainable_tflops(l.op.op) * 1e12);
  }
}

}  // namespace attain
