// What `attain tune` prints and writes: a tuning run's outcomes, and one op's choice explained.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>

#include "attain/bench.hpp"
#include "attain/tensor.hpp"
#include "attain/tune.hpp"
#include "attain/verify.hpp"

namespace attain::tune {
namespace {

std::string us(double s) {
  return s >= 1e-3 ? fmt::format("{:.2f} ms", s * 1e3) : fmt::format("{:.1f} us", s * 1e6);
}

DType dtype_of(const std::string& name) {
  const auto d = parse_dtype(name);
  if (!d) throw InputError(fmt::format("tuning key: unknown dtype '{}'", excerpt(name)));
  return *d;
}

// A call with the key's shape and no data: enough for the scheduler's choice.
gemm::Call call_from_key(const Key& k) {
  gemm::Call c;
  for (gemm::Form f : {gemm::Form::single, gemm::Form::batched, gemm::Form::grouped_contiguous,
                       gemm::Form::grouped_masked})
    if (gemm::form_name(f) == k.op) c.form = f;
  c.p.a_type = dtype_of(k.a_type);
  c.p.b_type = dtype_of(k.b_type);
  c.p.c_type = dtype_of(k.c_type);
  c.p.trans_a = k.trans_a == 'N' ? gemm::Trans::N : gemm::Trans::T;
  c.p.trans_b = k.trans_b == 'N' ? gemm::Trans::N : gemm::Trans::T;
  c.p.threads = k.threads;
  c.p.m = k.m, c.p.n = k.n, c.p.k = k.k;
  c.items = k.items;
  return c;
}

// Mean time of one warm-cache choice over the tuned shapes.
double dispatch_seconds(const Scheduler& s, const std::vector<gemm::Call>& calls,
                        const Machine& m) {
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

nlohmann::json outcome_json(const TuneOutcome& o) {
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

}  // namespace

int TuneRun::failures() const {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(), [](const TuneOutcome& x) {
    return x.status == "wrong" || x.status == "error";
  }));
}

TuneRun tune_run(const std::vector<CatalogOp>& ops, const TuneConfig& cfg, Scheduler& sched,
                 const Machine& m) {
  TuneRun r;
  const auto t0 = std::chrono::steady_clock::now();
  r.outcomes = tune_ops(ops, cfg, sched, m);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<gemm::Call> calls;
  for (const auto& x : r.outcomes)
    if (x.status == "tuned" || x.status == "cached") calls.push_back(call_from_key(x.key));
  r.dispatch_s = dispatch_seconds(sched, calls, m);
  r.cache_path = sched.cache().path().string();
  r.entries = sched.cache().size();
  r.threads = cfg.threads;
  return r;
}

nlohmann::json to_json(const TuneRun& r) {
  nlohmann::json j = {{"cache", r.cache_path},      {"entries", r.entries},
                      {"threads", r.threads},       {"seconds", r.seconds},
                      {"dispatch_s", r.dispatch_s}, {"ops", nlohmann::json::array()}};
  for (const auto& x : r.outcomes) j["ops"].push_back(outcome_json(x));
  return j;
}

std::string tune_run_text(const TuneRun& r) {
  std::vector<double> gains;
  std::map<std::string, int> counts;
  std::string s =
      fmt::format("{:<62} {:>10} {:>10} {:>6}  schedule\n", "op", "default", "tuned", "gain");
  for (const auto& x : r.outcomes) {
    ++counts[x.status];
    if (x.status != "tuned") {
      if (x.status != "cached")
        s += fmt::format("{:<62} {}: {}\n", x.op.op.spec(), x.status, x.reason);
      continue;
    }
    gains.push_back(x.result.default_s / x.result.best_s);
    s += fmt::format(
        "{:<62} {:>10} {:>10} {:>5.2f}x  {}\n", x.op.op.spec(), us(x.result.default_s),
        us(x.result.best_s), gains.back(),
        x.result.best_text == gemm::to_string(gemm::Schedule{}) ? "(default)" : x.result.best_text);
  }
  const Aggregate g = gains.empty() ? Aggregate{} : aggregate(gains);
  s += fmt::format("\n{} ops: {} tuned, {} already cached, {} skipped, {} wrong/error; {:.1f} s\n",
                   r.outcomes.size(), counts["tuned"], counts["cached"], counts["skipped"],
                   counts["wrong"] + counts["error"], r.seconds);
  if (!gains.empty())
    s += fmt::format("tuned vs default at tuning time: geomean {:.2f}x faster ({} ops)\n",
                     g.geomean, g.count);
  s += fmt::format("cache {}: {} entries; warm-cache dispatch {:.0f} ns per op\n", r.cache_path,
                   r.entries, r.dispatch_s * 1e9);
  return s;
}

std::string explain_op(const std::string& spec, const TuneConfig& cfg, Scheduler& sched,
                       const Machine& m) {
  std::string out;
  const Op op = Op::parse(spec);
  if (op.kind == OpKind::mla_decode)
    throw InputError("--explain: mla_decode is not a GEMM (it has its own split-KV schedule)");
  TensorSet set(op);
  fill_inputs(set, cfg.seed);
  RunOptions run;
  run.threads = cfg.threads;
  run.stages = cfg.stages;
  gemm::Call call = backends::gemm_call(set, run);
  const Key key = key_of(call);
  out += fmt::format("op        {}\nkey       {}\n", spec, key.str());
  out += fmt::format(
      "machine   {} threads, {:.0f} GFLOP/s per thread, read {:.1f} GB/s (1 thread) / "
      "{:.1f} GB/s ({} threads)\n",
      m.threads, m.fma_gflops_1t, m.read_gbps_1t, m.read_gbps_all, m.threads);
  const auto before = sched.choose(call, m);
  out += fmt::format("cache     {} ({})\n", sched.cache().path().string(),
                     before.source == Scheduler::Source::tuned ? "tuned entry present"
                     : before.source == Scheduler::Source::nearest
                         ? "no entry; the nearest tuned shape would be used"
                         : "no entry; the cost model would choose");
  const gemm::Schedule h = heuristic(call, m);
  // Schedules resolve per item: shown for the first item's rows, as the search's list does.
  out += fmt::format("heuristic {}  (model {})\n", describe(call, h), us(estimate(call, h, m)));
  out += fmt::format("default   {}  (model {})\n", describe(call, gemm::Schedule{}),
                     us(estimate(call, gemm::Schedule{}, m)));
  // The engine's reasons for its default (the first item's rows), as gemm::explain gives them.
  gemm::Params first = call.p;
  if (const auto rows = item_rows(call); !rows.empty()) first.m = rows.front();
  const std::vector<std::string> why = gemm::explain(first);
  for (std::size_t i = 0; i + 1 < why.size(); ++i)
    out += fmt::format("{}{}\n", i == 0 ? "because   " : "          ", why[i]);
  SearchOptions so = cfg.search;
  so.bytes = set.total_bytes();
  const SearchResult r = search(call, m, so);
  out += fmt::format(
      "\nmeasured search: {} candidates ranked by the cost model, {} measured (cold cache)\n",
      r.ranked, r.trials.size());
  out += fmt::format("  {:>10} {:>10} {:>7}  schedule\n", "model", "measured", "vs def");
  auto shown = [&](const std::string& text) { return describe(call, gemm::parse_schedule(text)); };
  for (const auto& t : r.trials)
    out += fmt::format("  {:>10} {:>10} {:>6.2f}x  {}{}\n", us(t.estimate_s), us(t.median_s),
                       r.default_s / t.median_s, shown(t.schedule),
                       t.schedule == r.best_text ? "   <- chosen" : "");
  out += fmt::format("\nchosen    {}\n          {}\n          {} vs default {} ({:.2f}x)\n",
                     r.best_text, shown(r.best_text), us(r.best_s), us(r.default_s),
                     r.default_s / r.best_s);
  return out;
}

}  // namespace attain::tune
