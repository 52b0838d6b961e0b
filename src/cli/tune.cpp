// attain tune: fill the tuning cache (measured search per op), or explain one op's choice.
#include "attain/tune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "attain/bench.hpp"
#include "attain/tensor.hpp"
#include "attain/verify.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

std::string us(double s) {
  return s >= 1e-3 ? fmt::format("{:.2f} ms", s * 1e3) : fmt::format("{:.1f} us", s * 1e6);
}

// A call with the key's shape and no data: enough for the scheduler's choice.
gemm::Call call_from_key(const tune::Key& k) {
  gemm::Call c;
  for (gemm::Form f : {gemm::Form::single, gemm::Form::batched, gemm::Form::grouped_contiguous,
                       gemm::Form::grouped_masked})
    if (gemm::form_name(f) == k.op) c.form = f;
  c.p.a_type = dtype_arg(k.a_type);
  c.p.b_type = dtype_arg(k.b_type);
  c.p.c_type = dtype_arg(k.c_type);
  c.p.trans_a = k.trans_a == 'N' ? gemm::Trans::N : gemm::Trans::T;
  c.p.trans_b = k.trans_b == 'N' ? gemm::Trans::N : gemm::Trans::T;
  c.p.threads = k.threads;
  c.p.m = k.m, c.p.n = k.n, c.p.k = k.k;
  c.items = k.items;
  return c;
}

// Mean time of one warm-cache choice over the tuned shapes.
double dispatch_seconds(const tune::Scheduler& s, const std::vector<gemm::Call>& calls,
                        const tune::Machine& m) {
  if (calls.empty()) return 0;
  const int rounds = std::max(1, 20000 / static_cast<int>(calls.size()));
  std::size_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r)
    for (const auto& c : calls) sink += s.choose(c, m).schedule.threads;
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (sink == 0) fmt::print("");  // keep the loop
  return dt / (static_cast<double>(rounds) * static_cast<double>(calls.size()));
}

nlohmann::json outcome_json(const tune::TuneOutcome& o) {
  nlohmann::json j = {{"spec", o.op.op.spec()}, {"status", o.status}};
  if (!o.reason.empty()) j["reason"] = o.reason;
  if (o.status == "tuned") {
    j["key"] = o.key.str();
    j["best"] = o.result.best_text;
    j["default_s"] = o.result.default_s;
    j["best_s"] = o.result.best_s;
    j["candidates_ranked"] = o.result.ranked;
    nlohmann::json tr = nlohmann::json::array();
    for (const auto& t : o.result.trials)
      tr.push_back(
          {{"schedule", t.schedule}, {"estimate_s", t.estimate_s}, {"median_s", t.median_s}});
    j["trials"] = tr;
  }
  return j;
}

int explain(const std::string& spec, const tune::TuneConfig& cfg, tune::Scheduler& sched,
            const tune::Machine& m) {
  const Op op = Op::parse(spec);
  if (op.kind == OpKind::mla_decode)
    throw InputError("--explain: mla_decode is not a GEMM (it has its own split-KV schedule)");
  TensorSet set(op);
  fill_inputs(set, cfg.seed);
  RunOptions run;
  run.threads = cfg.threads;
  run.stages = cfg.stages;
  gemm::Call call = backends::gemm_call(set, run);
  const tune::Key key = tune::key_of(call);
  fmt::print("op        {}\nkey       {}\n", spec, key.str());
  fmt::print(
      "machine   {} threads, {:.0f} GFLOP/s per thread, read {:.1f} GB/s (1 thread) / "
      "{:.1f} GB/s ({} threads)\n",
      m.threads, m.fma_gflops_1t, m.read_gbps_1t, m.read_gbps_all, m.threads);
  const auto before = sched.choose(call, m);
  fmt::print("cache     {} ({})\n", sched.cache().path().string(),
             before.source == tune::Scheduler::Source::tuned ? "tuned entry present"
             : before.source == tune::Scheduler::Source::nearest
                 ? "no entry; the nearest tuned shape would be used"
                 : "no entry; the cost model would choose");
  const gemm::Schedule h = tune::heuristic(call, m);
  // Schedules resolve per item: shown for the first item's rows, as the search's list does.
  fmt::print("heuristic {}  (model {})\n", tune::describe(call, h), us(tune::estimate(call, h, m)));
  fmt::print("default   {}  (model {})\n", tune::describe(call, gemm::Schedule{}),
             us(tune::estimate(call, gemm::Schedule{}, m)));
  // The engine's reasons for its default (the first item's rows), as gemm::explain gives them.
  gemm::Params first = call.p;
  if (const auto rows = tune::item_rows(call); !rows.empty()) first.m = rows.front();
  const std::vector<std::string> why = gemm::explain(first);
  for (std::size_t i = 0; i + 1 < why.size(); ++i)
    fmt::print("{}{}\n", i == 0 ? "because   " : "          ", why[i]);
  tune::SearchOptions so = cfg.search;
  so.bytes = set.total_bytes();
  const tune::SearchResult r = tune::search(call, m, so);
  fmt::print(
      "\nmeasured search: {} candidates ranked by the cost model, {} measured (cold cache)\n",
      r.ranked, r.trials.size());
  fmt::print("  {:>10} {:>10} {:>7}  schedule\n", "model", "measured", "vs def");
  auto shown = [&](const std::string& text) {
    return tune::describe(call, gemm::parse_schedule(text));
  };
  for (const auto& t : r.trials)
    fmt::print("  {:>10} {:>10} {:>6.2f}x  {}{}\n", us(t.estimate_s), us(t.median_s),
               r.default_s / t.median_s, shown(t.schedule),
               t.schedule == r.best_text ? "   <- chosen" : "");
  fmt::print("\nchosen    {}\n          {}\n          {} vs default {} ({:.2f}x)\n", r.best_text,
             shown(r.best_text), us(r.best_s), us(r.default_s), r.default_s / r.best_s);
  return 0;
}

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
    if (!o->explain.empty()) return explain(o->explain, cfg, sched, m);

    const auto ops = o->src.resolve("quick");
    const auto t0 = std::chrono::steady_clock::now();
    const auto outs = tune::tune_ops(ops, cfg, sched, m);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<gemm::Call> calls;
    for (const auto& x : outs)
      if (x.status == "tuned" || x.status == "cached") calls.push_back(call_from_key(x.key));
    const double dispatch = dispatch_seconds(sched, calls, m);
    nlohmann::json j = {{"cache", sched.cache().path().string()},
                        {"entries", sched.cache().size()},
                        {"threads", cfg.threads},
                        {"seconds", took},
                        {"dispatch_s", dispatch},
                        {"ops", nlohmann::json::array()}};
    for (const auto& x : outs) j["ops"].push_back(outcome_json(x));
    if (o->json || !o->out.empty()) emit_json(j, o->out, o->json);
    if (o->json) return 0;
    std::vector<double> gains;
    std::map<std::string, int> counts;
    fmt::print("{:<62} {:>10} {:>10} {:>6}  schedule\n", "op", "default", "tuned", "gain");
    for (const auto& x : outs) {
      ++counts[x.status];
      if (x.status != "tuned") {
        if (x.status != "cached") fmt::print("{:<62} {}: {}\n", x.op.op.spec(), x.status, x.reason);
        continue;
      }
      gains.push_back(x.result.default_s / x.result.best_s);
      fmt::print("{:<62} {:>10} {:>10} {:>5.2f}x  {}\n", x.op.op.spec(), us(x.result.default_s),
                 us(x.result.best_s), gains.back(),
                 x.result.best_text == gemm::to_string(gemm::Schedule{}) ? "(default)"
                                                                         : x.result.best_text);
    }
    const Aggregate g = gains.empty() ? Aggregate{} : aggregate(gains);
    fmt::print("\n{} ops: {} tuned, {} already cached, {} skipped, {} wrong/error; {:.1f} s\n",
               outs.size(), counts["tuned"], counts["cached"], counts["skipped"],
               counts["wrong"] + counts["error"], took);
    if (!gains.empty())
      fmt::print("tuned vs default at tuning time: geomean {:.2f}x faster ({} ops)\n", g.geomean,
                 g.count);
    fmt::print("cache {}: {} entries; warm-cache dispatch {:.0f} ns per op\n",
               sched.cache().path().string(), sched.cache().size(), dispatch * 1e9);
    return counts["wrong"] + counts["error"] > 0 ? 1 : 0;
  });
});

}  // namespace
}  // namespace attain::cli
