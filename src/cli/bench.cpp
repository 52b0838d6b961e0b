// attain bench: measure ops on backends, side by side, verified first. The run of record and
// the layer run are library calls (attain/bench_session.hpp); this file parses and prints.
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "attain/bench_session.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

std::string default_backends() {
  std::string s;
  for (const auto& b : backend_registry())
    if (b.name == "attain" || b.name == "openblas") s += (s.empty() ? "" : ",") + b.name;
  return s;
}

struct Opts {
  OpSource src;
  std::string backends = default_backends(), out, schedule = "default", layer, deadline;
  int threads = 0, stages = 2, rounds = 1;
  double max_seconds = 0.25, sample_every = 60;
  bool hot = false, json = false, no_progress = false, list = false, no_tune = false;
  bool recheck = false, no_recheck = false, resume = false;
  std::uint64_t seed = 42;
};

int list_backends() {
  for (const auto& b : backend_registry()) {
    std::string why;
    const auto be = b.make(&why);
    fmt::print("{:<10} {}{}\n", b.name, b.description,
               be ? "" : fmt::format(" [not available: {}]", why));
  }
  return 0;
}

// attain bench --layer: one decoder layer's chain of ops, end to end, per backend.
int run_layer_command(const Opts& o, const BenchRequest& req, const HostCeilings& host) {
  const Roofline roof = host_roofline(host, req.cfg.run.threads);
  LayerReport r =
      plan_layer(o.layer, o.src.context, o.src.dtype_or(DType::bf16), req.cfg.run.threads, roof);
  r.created = req.created, r.command = req.command;
  if (!o.json) fmt::print("{}", layer_plan_text(r));
  run_layer_session(r, req, host);
  if (!o.out.empty() || o.json) emit_json(to_json(r), o.out, o.json);
  if (!o.json) fmt::print("{}", layer_results_text(r, roof));
  return r.any_failed() ? 1 : 0;
}

int run(const Opts& o) {
  if (o.list) return list_backends();
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (o.threads < 0 || o.threads > 4 * hw)
    throw InputError(fmt::format("--threads {} (this machine has {} logical CPUs)", o.threads, hw));
  if (o.recheck && o.no_recheck) throw InputError("--recheck and --no-recheck contradict");
  if (!o.layer.empty()) {
    if (o.rounds > 1) throw InputError("--rounds does not apply to --layer");
    if (o.resume) throw InputError("--resume does not apply to --layer");
    if (!o.src.suite.empty() || !o.src.ops.empty() || !o.src.shape.empty() || !o.src.model.empty())
      throw InputError("--layer runs one layer: it takes no --suite, --model, --op or --shape");
  }
  BenchRequest req;
  req.deadline_s = o.deadline.empty() ? 0 : parse_duration(o.deadline);
  req.cfg.backends = split_list(o.backends);
  req.cfg.run.threads = o.threads > 0 ? o.threads : hw;
  req.cfg.run.stages = o.stages;
  req.cfg.run.schedule = o.schedule;
  req.cfg.timing.max_seconds = o.max_seconds;
  req.cfg.timing.hot = o.hot;
  req.cfg.seed = o.seed;
  req.cfg.rounds = o.rounds;
  req.cfg.progress = !o.no_progress && !o.json;
  req.out = o.out;
  req.resume = o.resume;
  req.recheck = o.recheck ? Recheck::always : o.no_recheck ? Recheck::never : Recheck::by_size;
  req.sample_every_s = o.sample_every;
  req.tune = !o.no_tune;
  req.verbose = !o.json;
  req.created = now_iso();
  req.command = command_line();
  req.validate();
  if (o.layer.empty()) req.ops = o.src.resolve("quick");
  // One op larger than memory is bad input (in a suite it is recorded as unsupported).
  if (req.ops.size() == 1) require_memory_for(req.ops[0].op);

  const HostCeilings host = probe_host(false, !o.json);
  req.cfg.timing.llc_bytes = timing_llc_bytes(host);
  if (!o.layer.empty()) return run_layer_command(o, req, host);
  if (!o.json) {
    const Roofline roof = host_roofline(host, req.cfg.run.threads);
    fmt::print(
        "attain bench: {} ops x {} backends{}, {} threads, {} cache; roofline {:.1f} GFLOP/s, "
        "{:.1f} GB/s ({})\n",
        req.ops.size(), req.cfg.backends.size(),
        req.cfg.rounds > 1 ? fmt::format(" x {} rounds", req.cfg.rounds) : "", req.cfg.run.threads,
        req.cfg.timing.hot ? "hot" : "cold", roof.peak_tflops * 1e3, roof.bw_gbps, roof.source);
  }
  const BenchOutcome outcome = run_bench_session(req, host);
  if (outcome.already_done) {
    if (outcome.holds_results && !o.json)
      fmt::print("{} is complete: nothing left to run\n", o.out);
    return 0;
  }
  if (!outcome.holds_results) return outcome.exit_status();
  const ResultsFile& rf = outcome.file;
  if (o.json) {
    emit_json(to_json(outcome), "", true);
  } else {
    fmt::print("{}", format_table(rf.results, req.cfg.backends));
    fmt::print("{}", format_summary(outcome.summary, req.cfg.backends));
    fmt::print("{}", format_checks(rf.machine));
    fmt::print(
        "\nHeadline (the README's form; attain report FILE --headline prints it again):\n\n{}",
        format_headline(rf, req.cfg.backends));
    for (const auto& [b, v] : rf.machine.libraries) fmt::print("  {:<10} = {}\n", b, v);
    for (const auto& r : rf.results)
      if (r.status == "wrong" || r.status == "error")
        fmt::print("{} {} on {}: {}\n", r.status == "wrong" ? "WRONG" : "ERROR", r.op.op.spec(),
                   r.backend, r.reason);
    if (!o.out.empty()) fmt::print("results written to {}\n", o.out);
  }
  fmt::print(stderr, "{}", outcome.incomplete_note(o.out));
  return outcome.exit_status();
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
  set_action(sub, [o] { return run(*o); });
});

}  // namespace
}  // namespace attain::cli
