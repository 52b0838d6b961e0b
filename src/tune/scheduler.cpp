// The run-time schedule choice: tuning cache, nearest tuned shape, cost model.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>

#include "attain/gemm_plan.hpp"
#include "attain/tune.hpp"

namespace attain::tune {

namespace {

// A cached schedule is usable for this call when the engine accepts it for this shape.
bool usable(const gemm::Call& c, const gemm::Schedule& s) {
  return gemm::schedule_fits(c.p, s) && s.threads <= c.p.threads;
}

}  // namespace

const Machine& host_machine(int threads) {
  static std::mutex mu;
  static std::map<int, Machine> machines;
  std::lock_guard<std::mutex> lock(mu);
  auto it = machines.find(threads);
  if (it == machines.end())
    it = machines.emplace(threads, Machine::from(probe_host(), threads)).first;
  return it->second;
}

std::string_view source_name(Scheduler::Source s) {
  switch (s) {
    case Scheduler::Source::tuned:
      return "tuned";
    case Scheduler::Source::nearest:
      return "nearest";
    case Scheduler::Source::model:
      return "model";
  }
  return "?";
}

std::string entry_fault(const Entry& e, gemm::Schedule* parsed) {
  gemm::Schedule s;
  try {
    s = gemm::parse_schedule(e.best);
  } catch (const std::invalid_argument& x) {
    return x.what();
  }
  if (s.threads > e.key.threads)
    return fmt::format("schedule threads={} above the key's {}", s.threads, e.key.threads);
  const bool fused = e.key.items > 1 && s.fuse_items != gemm::Fuse::off;
  if (!gemm::grid_makes_threads(s, e.key.threads, fused))
    return fmt::format("grid {}x{} (split_k {}) does not make {} threads", s.threads_m, s.threads_n,
                       s.split_k, s.threads != 0 ? s.threads : e.key.threads);
  if (parsed != nullptr) *parsed = s;
  return {};
}

Scheduler::Scheduler(std::filesystem::path cache_file)
    : cache_(std::move(cache_file), current_identity(gemm::isa_name(gemm::detected_isa()))) {
  cache_.validate_with([](const Entry& e) { return entry_fault(e); });
  const std::string warning = cache_.load();
  if (!warning.empty()) fmt::print(stderr, "attain: tuning cache: {}\n", warning);
}

Scheduler& Scheduler::instance() {
  static Scheduler s(Cache::default_path());
  return s;
}

namespace {
// Everything key_of() reads, hashed (FNV-1a over the fields), plus the machine's threads.
std::uint64_t shape_hash(const gemm::Call& c, const Machine& m) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(static_cast<std::uint64_t>(c.form));
  mix(static_cast<std::uint64_t>(c.p.a_type) | static_cast<std::uint64_t>(c.p.b_type) << 8 |
      static_cast<std::uint64_t>(c.p.c_type) << 16 | static_cast<std::uint64_t>(c.p.trans_a) << 24 |
      static_cast<std::uint64_t>(c.p.trans_b) << 32);
  mix(static_cast<std::uint64_t>(c.p.threads) | static_cast<std::uint64_t>(m.threads) << 32);
  mix(static_cast<std::uint64_t>(c.p.m));
  mix(static_cast<std::uint64_t>(c.p.n));
  mix(static_cast<std::uint64_t>(c.p.k));
  mix(static_cast<std::uint64_t>(c.form == gemm::Form::single ? 1 : c.items));
  return h;
}
}  // namespace

Scheduler::Choice Scheduler::choose(const gemm::Call& c, const Machine& m) const {
  // A grouped call's model choice depends on its counts / offsets: only tuned choices of
  // grouped calls are remembered.
  const bool grouped =
      c.form == gemm::Form::grouped_contiguous || c.form == gemm::Form::grouped_masked;
  const std::uint64_t h = shape_hash(c, m);
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = memo_.find(h);
    if (it != memo_.end()) return it->second;
  }
  const Choice ch = choose_uncached(c, m);
  if (!grouped || ch.source == Source::tuned) {
    std::lock_guard<std::mutex> lock(mu_);
    memo_.emplace(h, ch);
  }
  return ch;
}

Scheduler::Choice Scheduler::choose_uncached(const gemm::Call& c, const Machine& m) const {
  const Key k = key_of(c);
  const Entry* exact = cache_.find(k);
  for (const Entry* e : {exact, cache_.nearest(k)}) {
    // (An entry this build cannot read, or may not run, falls through to the model.)
    gemm::Schedule s;
    if (e != nullptr && entry_fault(*e, &s).empty() && usable(c, s))
      return {s, e == exact ? Source::tuned : Source::nearest};
  }
  double best = std::numeric_limits<double>::max();
  Choice out;
  for (const gemm::Schedule& s : candidates(c, m)) {
    const double t = estimate(c, s, m);
    if (t < best) best = t, out.schedule = s;
  }
  out.source = Source::model;
  return out;
}

}  // namespace attain::tune
