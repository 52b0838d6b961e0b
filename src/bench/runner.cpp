#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <utility>

#include "attain/bench.hpp"
#include "attain/threadpool.hpp"
#include "attain/verify.hpp"
#include "device/probe.hpp"

namespace attain {

double available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024.0;
  return 4.0 * (1ull << 30);
}

namespace {

using Clock = std::chrono::steady_clock;

std::string human_bytes(double b) {
  if (b >= 1ull << 30) return fmt::format("{:.1f} GiB", b / (1ull << 30));
  return fmt::format("{:.0f} MiB", b / (1ull << 20));
}

std::string human_secs(double s) {
  if (s >= 3600)
    return fmt::format("{}h{:02d}m", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
  if (s >= 60) return fmt::format("{}m{:02d}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return fmt::format("{:.0f}s", s);
}

Result base_result(const CatalogOp& op, const std::string& backend, const Roofline& roof) {
  Result r;
  r.op = op, r.backend = backend;
  r.flops = op.op.flops(), r.bytes = op.op.bytes();
  r.attainable_tflops = roof.attainable_tflops(op.op);
  return r;
}

}  // namespace

double default_memory_limit_bytes() {
  return 0.8 * available_memory_bytes();
}

void require_memory_for(const Op& op) {
  const double need = static_cast<double>(tensor_set_bytes(op)),
               have = default_memory_limit_bytes();
  if (need > have)
    throw InputError(fmt::format("{} needs {} of memory; {} available", op.spec(),
                                 human_bytes(need), human_bytes(have)));
}

double expected_seconds(const Op& op, const Roofline& roof, const TimingConfig& timing,
                        std::size_t backends) {
  const double attainable = roof.attainable_tflops(op);
  const double run_s = attainable > 0 ? op.flops() / (attainable * 1e12) : 0;
  const std::size_t set = tensor_set_bytes(op);
  const double sets = rotation_sets(set, timing);
  // Per backend: the timing budget (or its minimum of runs), a warm-up and a verified run per
  // input set; and once per op, the sets filled (~1 GB/s of random values).
  const double per_backend =
      std::max(timing.max_seconds, timing.min_reps * run_s) + (sets + 2) * run_s;
  return static_cast<double>(backends) * per_backend + sets * static_cast<double>(set) / 1e9;
}

ProgressBar::ProgressBar(bool on, std::size_t total, double total_work, std::string unit)
    : on_(on),
      tty_(::isatty(2) != 0),
      total_(total),
      total_work_(total_work < 0 ? static_cast<double>(total) : total_work),
      unit_(std::move(unit)),
      t0_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(std::size_t done, double work_done, const std::string& what) {
  if (!on_) return;
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const double eta = work_done > 0 ? el / work_done * std::max(0.0, total_work_ - work_done) : 0;
  if (!tty_) {
    // A log (nohup, CI): one plain line a minute at most.
    if (el - last_line_s_ < kLineSeconds || done == 0 || done >= total_) return;
    last_line_s_ = el;
    fmt::print(stderr, "attain: {}/{} {} after {}, ETA {} (next: {})\n", done, total_, unit_,
               human_secs(el), human_secs(eta), what);
    std::fflush(stderr);
    return;
  }
  // Redrawn ten times a second at most: callers may report thousands of small steps.
  if (done > 0 && done < total_ && el - last_draw_s_ < 0.1) return;
  last_draw_s_ = el;
  const int width = 24;
  const int fill = total_ ? static_cast<int>(width * done / total_) : width;
  std::string label = what.size() > 48 ? what.substr(0, 45) + "..." : what;
  fmt::print(stderr, "\r[{}{}] {}/{} {:<48} ETA {:>6}\x1b[K",
             std::string(static_cast<std::size_t>(fill), '#'),
             std::string(static_cast<std::size_t>(width - fill), '.'), done, total_, label,
             work_done > 0 ? human_secs(eta) : "?");
  std::fflush(stderr);
}

ProgressBar::~ProgressBar() {
  if (on_ && tty_) fmt::print(stderr, "\r\x1b[K");
}

void keep_faster_round(std::vector<Result>& kept, const std::vector<Result>& round) {
  // Each backend's results come in the op list's order in every run: the n-th of a backend in
  // `round` is the n-th of that backend in `kept`.
  std::map<std::string, std::vector<std::size_t>> at;
  for (std::size_t i = 0; i < kept.size(); ++i) at[kept[i].backend].push_back(i);
  std::map<std::string, std::size_t> seen;
  auto failed = [](const Result& r) { return r.status == "wrong" || r.status == "error"; };
  for (const Result& r : round) {
    const std::size_t n = seen[r.backend]++;
    const auto f = at.find(r.backend);
    if (f == at.end() || n >= f->second.size() || kept[f->second[n]].op.op.spec() != r.op.op.spec())
      throw std::logic_error("keep_faster_round: runs of different op lists or backends");
    Result& k = kept[f->second[n]];
    if (failed(k)) continue;
    if (failed(r) || (r.status == "ok" && (k.status != "ok" || r.median_s < k.median_s))) k = r;
  }
}

namespace {

// One run of the op list. `work` holds each op's expected_seconds, `work_before` the work of the
// rounds before this one (for the progress bar); hooks.skip and hooks.op_done apply when
// `first` (the first round).
std::vector<Result> run_round(const std::vector<CatalogOp>& ops, const BenchConfig& cfg,
                              const Roofline& roof, std::map<std::string, std::string>* libraries,
                              ProgressBar& progress, std::size_t done_before,
                              const std::vector<double>& work, double work_before, bool first) {
  std::vector<std::pair<std::string, std::unique_ptr<Backend>>> backends;
  for (const auto& name : cfg.backends) {
    auto be = make_backend(name);
    if (libraries) (*libraries)[name] = be->version();
    backends.emplace_back(name, std::move(be));
  }
  const double limit =
      cfg.memory_limit_bytes > 0 ? cfg.memory_limit_bytes : default_memory_limit_bytes();
  RunOptions run_opt = cfg.run;
  run_opt.hot = cfg.timing.hot;
  const BenchHooks& hooks = cfg.hooks;
  std::vector<Result> out;
  // Fills the op's input sets, then verifies and times its runnable results (indices into out).
  auto time_op = [&](const CatalogOp& cop, std::size_t set_bytes,
                     const std::vector<std::size_t>& runnable) {
    int nsets = rotation_sets(set_bytes, cfg.timing);
    nsets = std::max(1, std::min(nsets, static_cast<int>(limit / static_cast<double>(set_bytes))));
    std::vector<std::unique_ptr<TensorSet>> sets;
    for (int i = 0; i < nsets; ++i) {
      sets.push_back(std::make_unique<TensorSet>(cop.op));
      fill_inputs(*sets.back(), cfg.seed + static_cast<std::uint64_t>(i));
    }
    auto backend_of = [&](std::size_t ri) -> Backend& {
      return *std::find_if(backends.begin(), backends.end(), [&](auto& p) {
                return p.first == out[ri].backend;
              })->second;
    };
    // One kernel per input set, the first run and verified (empty: r says why not).
    auto prepare_verified = [&](Result& r, Backend& be) {
      std::vector<std::unique_ptr<Kernel>> kernels;
      try {
        poison_outputs(*sets[0]);
        kernels.push_back(be.prepare(*sets[0], run_opt));
        kernels[0]->run();
        const Verification v = verify(*sets[0]);
        r.verified = v.ok, r.error = v.error;
        if (!v.ok) {
          r.status = "wrong", r.reason = v.detail;
          kernels.clear();
          return kernels;
        }
        for (int i = 1; i < nsets; ++i)
          kernels.push_back(be.prepare(*sets[static_cast<std::size_t>(i)], run_opt));
      } catch (const std::exception& e) {
        r.status = "error", r.reason = e.what();
        kernels.clear();
      }
      return kernels;
    };
    // Consecutive backends of one interleave group (attain, attain:auto) are timed together,
    // run by run; the others one by one.
    for (std::size_t gi = 0; gi < runnable.size();) {
      const std::size_t ge = interleave_run_end(gi, runnable.size(), [&](std::size_t i) {
        return backend_of(runnable[i]).interleave_group();
      });
      std::vector<std::vector<std::unique_ptr<Kernel>>> owned;
      std::vector<std::vector<Kernel*>> raw;
      std::vector<std::size_t> timed;  // indices into out
      for (std::size_t k = gi; k < ge; ++k) {
        auto kernels = prepare_verified(out[runnable[k]], backend_of(runnable[k]));
        if (kernels.empty()) continue;
        raw.emplace_back();
        for (auto& kn : kernels) raw.back().push_back(kn.get());
        owned.push_back(std::move(kernels));
        timed.push_back(runnable[k]);
      }
      gi = ge;
      if (raw.empty()) continue;
      try {
        const std::vector<Timing> ts = time_interleaved(raw, set_bytes, cfg.timing);
        ThreadPool::instance().rest();  // the next backend gets the cores to itself
        for (std::size_t j = 0; j < timed.size(); ++j) {
          Result& r = out[timed[j]];
          const Timing& t = ts[j];
          r.median_s = t.median_s, r.min_s = t.min_s, r.iqr_s = t.iqr_s, r.reps = t.reps;
          r.tflops = r.flops / t.median_s / 1e12;
          r.gbps = r.bytes / t.median_s / 1e9;
          r.efficiency = r.attainable_tflops > 0 ? r.tflops / r.attainable_tflops : 0;
          r.t_unix = probe::unix_now();
        }
      } catch (const std::exception& e) {
        for (std::size_t ri : timed) out[ri].status = "error", out[ri].reason = e.what();
      }
    }
  };
  double work_done = work_before;
  for (std::size_t oi = 0; oi < ops.size(); work_done += work[oi], ++oi) {
    const CatalogOp& cop = ops[oi];
    progress.update(done_before + oi, work_done, cop.op.spec());
    if (hooks.stop && hooks.stop()) break;
    if (hooks.before_op) hooks.before_op();
    const std::size_t set_bytes = tensor_set_bytes(cop.op);
    const std::size_t op_begin = out.size();
    std::vector<std::size_t> runnable;
    for (std::size_t bi = 0; bi < backends.size(); ++bi) {
      if (first && hooks.skip && hooks.skip(cop, backends[bi].first)) continue;
      Result r = base_result(cop, backends[bi].first, roof);
      const Support s = backends[bi].second->supports(cop.op);
      if (!s.ok) {
        r.status = "unsupported", r.reason = s.reason;
      } else if (static_cast<double>(set_bytes) > limit) {
        r.status = "unsupported";
        r.reason = fmt::format("needs {} of memory; {} available",
                               human_bytes(static_cast<double>(set_bytes)), human_bytes(limit));
      } else {
        runnable.push_back(out.size());
      }
      out.push_back(std::move(r));
    }
    if (!runnable.empty()) time_op(cop, set_bytes, runnable);
    if (first && hooks.op_done && out.size() > op_begin)
      hooks.op_done(std::span<const Result>(out.data() + op_begin, out.size() - op_begin));
  }
  return out;
}

}  // namespace

std::vector<Result> run_bench(const std::vector<CatalogOp>& ops, const BenchConfig& cfg,
                              const Roofline& roof, std::map<std::string, std::string>* libraries) {
  if (cfg.rounds < 1) throw std::invalid_argument("run_bench: rounds must be at least 1");
  const auto rounds = static_cast<std::size_t>(cfg.rounds);
  if (rounds > 1 && (cfg.hooks.skip || cfg.hooks.op_done))
    throw std::invalid_argument("run_bench: skip and op_done apply to one-round runs");
  std::vector<double> work;
  double round_work = 0;
  for (const auto& op : ops) {
    const std::size_t n = static_cast<std::size_t>(std::count_if(
        cfg.backends.begin(), cfg.backends.end(),
        [&](const std::string& b) { return !cfg.hooks.skip || !cfg.hooks.skip(op, b); }));
    work.push_back(n == 0 ? 0.0 : expected_seconds(op.op, roof, cfg.timing, n));
    round_work += work.back();
  }
  ProgressBar progress(cfg.progress, ops.size() * rounds, round_work * static_cast<double>(rounds));
  std::vector<Result> out = run_round(ops, cfg, roof, libraries, progress, 0, work, 0, true);
  BenchConfig reversed = cfg;
  std::reverse(reversed.backends.begin(), reversed.backends.end());
  for (std::size_t r = 1; r < rounds; ++r) {
    if (cfg.hooks.stop && cfg.hooks.stop()) break;
    keep_faster_round(
        out, run_round(ops, r % 2 ? reversed : cfg, roof, nullptr, progress, r * ops.size(), work,
                       round_work * static_cast<double>(r), false));
  }
  progress.update(ops.size() * rounds, round_work * static_cast<double>(rounds), "done");
  return out;
}

}  // namespace attain
