// The measured search over the cost model's best candidates (include/attain/tune.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <set>
#include <tuple>

#include "attain/bench.hpp"
#include "attain/tune.hpp"

namespace attain::tune {

namespace {

// The call as a harness Kernel, so candidates are timed exactly as `attain bench` times ops
// (warm-up, cold cache by LLC flush, median over repetitions, early stop on low noise).
class CallKernel final : public Kernel {
 public:
  explicit CallKernel(const gemm::Call& c) : c_(c) {}
  void run() override { gemm::run(c_); }

 private:
  const gemm::Call& c_;
};

TimingConfig trial_timing(const SearchOptions& opt) {
  TimingConfig cfg;
  cfg.max_seconds = opt.seconds_per_trial;
  cfg.min_reps = 3;
  cfg.max_reps = 15;  // each repetition of a small op also pays an LLC flush
  cfg.llc_bytes = opt.llc_bytes;
  return cfg;
}

double measure(const gemm::Call& c, const SearchOptions& opt) {
  CallKernel k(c);
  Kernel* ks[] = {&k};
  return time_kernels(ks, opt.bytes, trial_timing(opt)).median_s;
}

}  // namespace

SearchResult search(gemm::Call c, const Machine& m, const SearchOptions& opt) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  SearchResult r;
  std::vector<gemm::Schedule> cands = candidates(c, m);
  r.ranked = static_cast<int>(cands.size());
  std::vector<double> est(cands.size());
  for (std::size_t i = 0; i < cands.size(); ++i) est[i] = estimate(c, cands[i], m);
  // The default (cands[0]) is always measured first. Then the model's best of every family
  // (thread count x fused or not x path), so one wrong guess of the model's between families
  // cannot hide a whole family; then the rest in the model's order.
  std::vector<std::size_t> ranked(cands.size() - 1);
  std::iota(ranked.begin(), ranked.end(), 1);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](std::size_t a, std::size_t b) { return est[a] < est[b]; });
  std::vector<std::size_t> order = {0}, rest;
  std::set<std::tuple<int, bool, int>> families;
  auto family = [&](std::size_t i) {
    gemm::Call cc = c;
    cc.p.schedule = cands[i];
    const gemm::Schedule rs = gemm::resolve(cc.p);
    return std::tuple<int, bool, int>(rs.threads, gemm::fuses_items(cc), static_cast<int>(rs.path));
  };
  families.insert(family(0));
  for (std::size_t i : ranked) (families.insert(family(i)).second ? order : rest).push_back(i);
  const std::size_t family_heads = order.size();
  order.insert(order.end(), rest.begin(), rest.end());

  std::size_t best = 0;
  double best_s = 0;
  std::vector<double> ratio;  // measured / estimated, to correct the model's scale
  int measured = 0;
  for (std::size_t idx : order) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    // The family heads are measured regardless of the model's ranking (within the budget).
    const bool head = static_cast<std::size_t>(measured) < family_heads;
    if (measured > 1 && (measured > opt.top || elapsed > opt.budget_s)) break;
    if (measured > 1 && !head) {
      std::vector<double> rs = ratio;
      std::nth_element(rs.begin(), rs.begin() + static_cast<std::ptrdiff_t>(rs.size() / 2),
                       rs.end());
      const double scale = rs[rs.size() / 2];
      if (measured >= 3 && est[idx] * scale > best_s * opt.stop_ratio) break;
    }
    c.p.schedule = cands[idx];
    const double t = measure(c, opt);
    ++measured;
    if (est[idx] > 0) ratio.push_back(t / est[idx]);
    r.trials.push_back({gemm::to_string(cands[idx]), est[idx], t});
    if (idx == 0) {
      r.default_s = t;
      best_s = t;
      best = 0;
    } else if (t < best_s) {
      best_s = t;
      best = idx;
    }
  }
  // Confirm a winner against the default, the two timed run by run in turn for twice a
  // trial's budget each (time_interleaved): a slow moment of the machine while the default was
  // measured must not make a schedule look better than it is. The confirmation decides.
  if (best != 0) {
    gemm::Call cd = c, cb = c;
    cd.p.schedule = cands[0];
    cb.p.schedule = cands[best];
    CallKernel kd(cd), kb(cb);
    const std::vector<std::vector<Kernel*>> pair = {{&kd}, {&kb}};
    TimingConfig cfg = trial_timing(opt);
    cfg.max_seconds *= 2, cfg.max_reps *= 2;
    const std::vector<Timing> t = time_interleaved(pair, opt.bytes, cfg);
    r.default_s = t[0].median_s;
    best_s = t[1].median_s;
  }
  // Keep the default unless the winner beats it clearly: equal code is never slower.
  if (best != 0 && best_s > r.default_s * (1.0 - opt.keep_default)) {
    best = 0;
    best_s = r.default_s;
  }
  r.best = cands[best];
  r.best_text = gemm::to_string(r.best);
  r.best_s = best_s;
  return r;
}

}  // namespace attain::tune
