// attain tune: fill the tuning cache (measured search per op), or explain one op's choice
// (what it prints: src/tune/report.cpp).
#include "attain/tune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "attain/bench.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    OpSource src;
    std::string explain, out;
    int threads = 0, stages = 2, top = 10;
    double budget = 1.5;
    bool force = false, json = false, no_progress = false;
    std::uint64_t seed = 42;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "tune",
      "Fill the tuning cache: a measured search of GEMM schedules per op (or --explain one)");
  o->src.add_to(sub, true);
  sub->add_option("--explain", o->explain,
                  "an op spec: print the heuristic, the cost model's ranking and the measured "
                  "times of the top candidates");
  sub->add_option("--threads", o->threads, "threads (default: all logical CPUs); part of the key");
  sub->add_option("--stages", o->stages, "pipeline depth the default schedule uses")
      ->capture_default_str();
  sub->add_option("--top", o->top, "measure at most this many candidates per op")
      ->capture_default_str();
  sub->add_option("--budget", o->budget, "seconds of measuring per op at most")
      ->capture_default_str();
  sub->add_flag("--force", o->force, "re-tune ops already in the cache");
  sub->add_option("--seed", o->seed, "seed of the random inputs")->capture_default_str();
  sub->add_flag("--json", o->json, "print the outcome per op as JSON");
  sub->add_option("--out", o->out, "also write the JSON here");
  sub->add_flag("--no-progress", o->no_progress, "no progress bar");
  sub->footer(
      "The cache is $XDG_CACHE_HOME/attain/tuning.json (default ~/.cache/attain/tuning.json;\n"
      "ATTAIN_TUNE_CACHE overrides the path). attain bench --schedule auto reads it.");
  set_action(sub, [o] {
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (o->threads < 0 || o->threads > 4 * hw)
      throw InputError(
          fmt::format("--threads {} (this machine has {} logical CPUs)", o->threads, hw));
    if (o->stages < 1 || o->stages > 8) throw InputError("--stages must be 1..8");
    if (o->top < 1) throw InputError("--top must be at least 1");
    if (!(o->budget > 0)) throw InputError("--budget must be positive");
    tune::TuneConfig cfg;
    cfg.threads = o->threads > 0 ? o->threads : hw;
    cfg.stages = o->stages;
    cfg.seed = o->seed;
    cfg.force = o->force;
    cfg.progress = !o->no_progress && !o->json;
    cfg.search.top = o->top;
    cfg.search.budget_s = o->budget;
    const HostCeilings host = probe_host(false, !o->json);
    cfg.search.llc_bytes = timing_llc_bytes(host);
    const tune::Machine m = tune::Machine::from(host, cfg.threads);
    tune::Scheduler& sched = tune::Scheduler::instance();
    if (!o->explain.empty()) {
      fmt::print("{}", tune::explain_op(o->explain, cfg, sched, m));
      return 0;
    }
    const tune::TuneRun run = tune::tune_run(o->src.resolve("quick"), cfg, sched, m);
    if (o->json || !o->out.empty()) emit_json(tune::to_json(run), o->out, o->json);
    if (!o->json) fmt::print("{}", tune::tune_run_text(run));
    return run.failures() > 0 ? 1 : 0;
  });
});

}  // namespace
}  // namespace attain::cli
