// The event-driven run of one training job, and its Monte Carlo repetition.
//
// Failures of independent components superpose: a cause with rate r per unit and U units is a
// Poisson process of rate r*U, and all causes together one of rate sum(r*U); the next failure is
// drawn from that total and its cause in proportion to each rate. Between two events the job's
// progress is closed-form (compute tau, pause delta, repeat), so the cost of a run grows with
// the number of interruptions, not with the number of steps.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <thread>

#include "attain/cluster.hpp"
#include "attain/op.hpp"

namespace attain::cluster {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMaxInterval = 1e15;  // seconds: "never checkpoint"
constexpr std::size_t kMaxTimeline = 20000;

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// xoshiro256**: small, fast and the same on every platform (std distributions are not).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& w : s_) w = splitmix64(seed);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double exponential(double rate) { return rate > 0 ? -std::log1p(-uniform()) / rate : kInf; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t next() {
    const std::uint64_t r = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0], s_[3] ^= s_[1], s_[1] ^= s_[2], s_[0] ^= s_[3], s_[2] ^= t,
        s_[3] = rotl(s_[3], 45);
    return r;
  }
  std::uint64_t s_[4];
};

double or_default(double v, double def) {
  return v >= 0 ? v : def;
}

void validate(const SimConfig& c) {
  if (c.chips <= 0) throw InputError("chips must be positive");
  if (c.chips_per_node <= 0) throw InputError("chips per node must be positive");
  if (!(c.step_s > 0) || !(c.tokens_per_step > 0))
    throw InputError("the step time and tokens per step must be positive");
  if (!(c.days > 0) && !(c.token_budget > 0))
    throw InputError("give a number of days or a token budget");
  if (c.days < 0 || c.token_budget < 0)
    throw InputError("days and token budget must not be negative");
  if (!(c.days <= kMaxSimDays))
    throw InputError(fmt::format("{:g} days outside 0..{:g}", c.days, kMaxSimDays));
  if (!(c.token_budget <= c.tokens_per_step / c.step_s * 86400 * kMaxSimDays))
    throw InputError(fmt::format(
        "a budget of {:.3g} tokens takes more than {:g} days at the failure-free pace ({:.3g} "
        "tokens a day)",
        c.token_budget, kMaxSimDays, c.tokens_per_step / c.step_s * 86400));
  if (c.chips > kMaxChips)
    throw InputError(fmt::format("{} chips outside 1..{}", c.chips, kMaxChips));
  if (c.checkpoint_interval_min < 0)
    throw InputError("the checkpoint interval must not be negative");
  if (!(c.storage_gbps > 0) || !(c.host_copy_gbps > 0) || !(c.peer_gbps > 0))
    throw InputError("storage, host-copy and peer bandwidths must be positive");
  if (c.spare_nodes < 0 || c.repair_hours < 0 || c.replace_min < 0 || c.checkpoint_overhead_s < 0)
    throw InputError("spares, repair, replace and checkpoint overhead must not be negative");
  if (!(c.straggler_fraction >= 0 && c.straggler_fraction <= 1))
    throw InputError("straggler fraction must be in [0, 1]");
  if (!(c.straggler_slowdown >= 1)) throw InputError("straggler slowdown must be >= 1");
}

// Progress of a running segment `e` seconds after it (re)started, checkpointing every `tau`
// seconds of compute with a pause `delta`; a checkpoint survives failures `lag` after its pause.
struct Segment {
  double compute = 0, pause = 0;  // wall seconds
  double done = 0, kept = 0;  // work (healthy-step seconds) done; covered by a durable checkpoint
};
Segment segment(double e, double tau, double delta, double lag, double pace) {
  const double c = tau + delta;
  const double n = std::floor(e / c), rem = e - n * c;
  Segment s;
  s.compute = n * tau + std::min(rem, tau);
  s.pause = n * delta + std::max(0.0, rem - tau);
  s.done = s.compute * pace;
  const double durable = e >= lag ? std::min(n, std::floor((e - lag) / c)) : 0.0;
  s.kept = durable * tau * pace;
  return s;
}
// Wall seconds a segment needs to do `work`.
double segment_time_for(double work, double tau, double delta, double pace) {
  const double cw = work / pace;
  const double pauses = std::max(0.0, std::ceil(cw / tau) - 1);
  return cw + pauses * delta;
}

}  // namespace

CheckpointPlan plan_checkpoints(const SimConfig& c) {
  validate(c);
  CheckpointPlan p;
  const double chips = static_cast<double>(c.chips);
  const double shard = c.state_bytes / chips;
  const double write = c.state_bytes / (std::min(c.storage_gbps, chips * c.peer_gbps) * 1e9);
  const double snapshot = shard / (c.host_copy_gbps * 1e9);
  const double to_peer = shard / (c.peer_gbps * 1e9);
  p.write_sync_s = c.checkpoint_overhead_s + write;
  switch (c.checkpoint) {
    case Checkpoint::sync:
      p.pause_s = p.write_sync_s, p.persist_s = 0, p.load_s = write;
      break;
    case Checkpoint::async:
      p.pause_s = c.checkpoint_overhead_s + snapshot, p.persist_s = write, p.load_s = write;
      break;
    case Checkpoint::memory:  // replicas in a peer node's host memory
      p.pause_s = c.checkpoint_overhead_s + snapshot, p.persist_s = to_peer, p.load_s = to_peer;
      break;
  }
  p.mtbf_h = c.failures.mttf_hours(c.chips, c.chips_per_node);
  p.young_min = young_interval(p.pause_s / 60, p.mtbf_h * 60);
  p.daly_min = daly_interval(p.pause_s / 60, p.mtbf_h * 60);
  p.interval_min = c.checkpoint_interval_min > 0 ? c.checkpoint_interval_min : p.daly_min;
  // A snapshot cannot start before the previous one is durable.
  p.interval_min = std::max(p.interval_min, p.persist_s / 60);
  if (!(p.interval_min > 0)) p.interval_min = kMaxInterval / 60;  // free checkpoints: any interval
  p.interval_min = std::min(p.interval_min, kMaxInterval / 60);
  return p;
}

RunResult simulate(const SimConfig& c, std::uint64_t seed) {
  const CheckpointPlan plan = plan_checkpoints(c);
  Rng rng(seed);
  const FailureTable& ft = c.failures;
  const double tau = plan.interval_min * 60, delta = plan.pause_s, lag = plan.persist_s;
  const double restart = or_default(c.restart_min, ft.restart_min) * 60 + plan.load_s;
  const double rewarm = or_default(c.rewarm_min, ft.rewarm_min) * 60;
  const double detect_default = or_default(c.detect_min, ft.detect_min) * 60;
  const double nodes = std::ceil(static_cast<double>(c.chips) / c.chips_per_node);

  // Per-cause rates (per second) for this job, and their running sum for drawing a cause.
  std::vector<double> cum;
  double total = 0;
  for (const auto& cause : ft.causes) {
    FailureTable one;
    one.causes = {cause};
    total += one.rate_per_hour(c.chips, c.chips_per_node) / 3600;
    cum.push_back(total);
  }
  const double planned_rate = ft.planned_per_day / 86400;
  const double horizon = c.days > 0 ? c.days * 86400 : kInf;
  const double target = c.token_budget > 0 ? c.token_budget / c.tokens_per_step * c.step_s : kInf;
  const double p_slow =
      c.straggler_slowdown > 1 ? 1 - std::pow(1 - c.straggler_fraction, nodes) : 0.0;

  RunResult r;
  for (const auto& cause : ft.causes) r.by_cause[cause.name] = 0;
  std::priority_queue<double, std::vector<double>, std::greater<>> repairs;
  int spares = c.spare_nodes;
  double work = 0, useful = 0, lost = 0, paused = 0;
  double next_fail = rng.exponential(total), next_planned = rng.exponential(planned_rate);

  auto draw_pace = [&] {
    return p_slow > 0 && rng.uniform() < p_slow ? 1 / c.straggler_slowdown : 1.0;
  };
  auto return_repaired = [&](double t) {
    while (!repairs.empty() && repairs.top() <= t) repairs.pop(), ++spares;
  };
  auto record = [&](double t, bool planned, std::string cause, double lost_s, double down_s,
                    bool spare) {
    if (!c.timeline || r.timeline.size() >= kMaxTimeline) return;
    r.timeline.push_back({t / 3600, planned, std::move(cause), lost_s / 60, down_s / 60, spare});
  };
  // A failure at time t: count it, draw its cause, return the time until the job can restart.
  auto fail = [&](double t, double lost_s) {
    const double u = rng.uniform() * total;
    const std::size_t i = std::min<std::size_t>(
        std::upper_bound(cum.begin(), cum.end(), u) - cum.begin(), ft.causes.size() - 1);
    const FailureCause& cause = ft.causes[i];
    r.unexpected += 1;
    r.by_cause[cause.name] += 1;
    double wait = 0;
    bool spare = false;
    if (cause.replace) {
      return_repaired(t);
      if (spares > 0) {
        --spares, spare = true, r.spares_used += 1;
        repairs.push(t + c.repair_hours * 3600);
      } else {
        wait = c.replace_min * 60, r.replace_waits += 1;
      }
    }
    const double d =
        (cause.detect_min >= 0 ? cause.detect_min * 60 : detect_default) + wait + restart + rewarm;
    record(t, false, cause.name, lost_s, d, spare);
    return d;
  };

  double t_run = 0, pace = draw_pace(), t = 0;
  while (true) {
    // Running from t_run until the next event.
    const double t_evt = std::min({next_fail, next_planned, horizon});
    const double t_done = t_run + segment_time_for(target - work, tau, delta, pace);
    if (t_done <= t_evt) {
      const Segment s = segment(t_done - t_run, tau, delta, kInf, pace);
      work = target, useful += s.compute, paused += s.pause, t = t_done, r.budget_reached = true;
      break;
    }
    const Segment s = segment(t_evt - t_run, tau, delta, lag, pace);
    paused += s.pause;
    if (t_evt >= horizon) {
      work += s.done, useful += s.compute, t = horizon;
      break;
    }
    double recovery_end;
    if (next_planned <= next_fail) {
      // Planned stop: write a checkpoint synchronously, then restart.
      t = next_planned;
      work += s.done, useful += s.compute, paused += plan.write_sync_s;
      r.planned += 1;
      record(t, true, "planned", 0, plan.write_sync_s + restart + rewarm, false);
      recovery_end = t + plan.write_sync_s + restart + rewarm;
      next_planned = t + rng.exponential(planned_rate);
      t += plan.write_sync_s;
    } else {
      t = next_fail;
      work += s.kept, useful += s.kept / pace, lost += (s.done - s.kept) / pace;
      next_fail = t + rng.exponential(total);
      recovery_end = t + fail(t, (s.done - s.kept) / pace);
    }
    // Failures while recovering start the recovery over.
    while (next_fail < recovery_end && next_fail < horizon) {
      t = next_fail;
      next_fail = t + rng.exponential(total);
      recovery_end = std::max(recovery_end, t + fail(t, 0));
    }
    // Maintenance that falls in the downtime is done then: it counts, but costs nothing more.
    while (next_planned < recovery_end && next_planned < horizon) {
      r.planned += 1;
      record(next_planned, true, "planned", 0, 0, false);
      next_planned += rng.exponential(planned_rate);
    }
    if (recovery_end >= horizon) {
      t = horizon;
      break;
    }
    t = recovery_end;
    t_run = recovery_end, pace = draw_pace();
  }
  std::stable_sort(r.timeline.begin(), r.timeline.end(),
                   [](const Interruption& a, const Interruption& b) { return a.t_h < b.t_h; });
  r.wall_h = t / 3600;
  // Downtime is whatever was neither kept compute, lost compute nor a checkpoint pause.
  const double down = std::max(0.0, t - useful - lost - paused);
  r.useful_h = useful / 3600, r.lost_work_h = lost / 3600, r.checkpoint_h = paused / 3600,
  r.down_h = down / 3600;
  r.work_s = work;
  r.ettr = t > 0 ? useful / t : 0;
  const double steps = work / c.step_s;
  r.tokens = steps * c.tokens_per_step;
  if (c.peak_flops_per_chip > 0 && t > 0)
    r.goodput =
        steps * c.model_flops_per_step / (static_cast<double>(c.chips) * c.peak_flops_per_chip * t);
  return r;
}

Stat summarize(const std::vector<double>& xs) {
  Stat s;
  s.n = static_cast<std::int64_t>(xs.size());
  if (xs.empty()) return s;
  double sum = 0;
  for (double x : xs) sum += x;
  s.mean = sum / static_cast<double>(s.n);
  double ss = 0;
  for (double x : xs) ss += (x - s.mean) * (x - s.mean);
  s.sd = s.n > 1 ? std::sqrt(ss / static_cast<double>(s.n - 1)) : 0.0;
  // Student's t, 97.5% quantile, for 1..30 degrees of freedom; beyond, Cornish-Fisher.
  static constexpr double kT[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                  2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  const std::int64_t df = s.n - 1;
  const double z = 1.959964;
  const double tq = df <= 0    ? 0.0
                    : df <= 30 ? kT[df - 1]
                               : z + (z * z * z + z) / (4.0 * static_cast<double>(df));
  const double half = s.n > 1 ? tq * s.sd / std::sqrt(static_cast<double>(s.n)) : 0.0;
  s.lo = s.mean - half, s.hi = s.mean + half;
  std::vector<double> sorted = xs;
  std::sort(sorted.begin(), sorted.end());
  auto q = [&](double f) {
    const double pos = f * static_cast<double>(sorted.size() - 1);
    const std::size_t i = static_cast<std::size_t>(pos);
    const double w = pos - static_cast<double>(i);
    return i + 1 < sorted.size() ? sorted[i] * (1 - w) + sorted[i + 1] * w : sorted[i];
  };
  s.p5 = q(0.05), s.p95 = q(0.95);
  return s;
}

double expected_interruptions(const SimConfig& c) {
  const double pace_days = c.tokens_per_step / c.step_s * 86400;  // tokens a day, failure-free
  const double days = c.days > 0 ? c.days : 2 * c.token_budget / pace_days;
  return days *
         (24 * c.failures.rate_per_hour(c.chips, c.chips_per_node) + c.failures.planned_per_day);
}

MonteCarlo monte_carlo(const SimConfig& c, int runs, std::uint64_t seed, int threads,
                       const std::function<void(int)>& progress) {
  if (runs <= 0) throw InputError("runs must be positive");
  MonteCarlo mc;
  mc.plan = plan_checkpoints(c);  // validates c
  const double per_run = expected_interruptions(c);
  if (!(per_run * runs <= kMaxInterruptions))
    throw InputError(fmt::format(
        "{} runs of {:.3g} expected interruptions each ({} chips) are over the limit of {:.0e} "
        "interruptions: fewer runs, days or chips",
        runs, per_run, c.chips, kMaxInterruptions));
  mc.runs.resize(static_cast<std::size_t>(runs));
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min(threads, runs);
  std::atomic<int> next{0}, finished{0};
  auto worker = [&](bool caller) {
    for (int i = next++; i < runs; i = next++) {
      SimConfig ci = c;
      ci.timeline = c.timeline && i == 0;
      std::uint64_t s = seed ^ (0xd1b54a32d192ed03ull * static_cast<std::uint64_t>(i + 1));
      mc.runs[static_cast<std::size_t>(i)] = simulate(ci, splitmix64(s));
      const int done = ++finished;
      if (caller && progress) progress(done);
    }
  };
  std::vector<std::thread> pool;
  for (int k = 1; k < threads; ++k) pool.emplace_back(worker, false);
  worker(true);
  for (auto& th : pool) th.join();

  auto stat = [&](auto field) {
    std::vector<double> xs;
    for (const auto& r : mc.runs) xs.push_back(field(r));
    return summarize(xs);
  };
  mc.ettr = stat([](const RunResult& r) { return r.ettr; });
  mc.goodput = stat([](const RunResult& r) { return r.goodput; });
  mc.unexpected = stat([](const RunResult& r) { return r.unexpected; });
  mc.planned = stat([](const RunResult& r) { return r.planned; });
  mc.wall_h = stat([](const RunResult& r) { return r.wall_h; });
  mc.tokens = stat([](const RunResult& r) { return r.tokens; });
  mc.lost_work_h = stat([](const RunResult& r) { return r.lost_work_h; });
  mc.down_h = stat([](const RunResult& r) { return r.down_h; });
  mc.checkpoint_h = stat([](const RunResult& r) { return r.checkpoint_h; });
  for (const auto& cause : c.failures.causes)
    mc.by_cause[cause.name] = stat([&](const RunResult& r) { return r.by_cause.at(cause.name); });
  return mc;
}

double expected_ettr(const SimConfig& c) {
  const CheckpointPlan p = plan_checkpoints(c);
  const FailureTable& ft = c.failures;
  const double tau = p.interval_min * 60, delta = p.pause_s, lag = p.persist_s;
  const double rate = ft.rate_per_hour(c.chips, c.chips_per_node) / 3600;
  const double planned = ft.planned_per_day / 86400;
  const double restart = or_default(c.restart_min, ft.restart_min) * 60 + p.load_s;
  const double rewarm = or_default(c.rewarm_min, ft.rewarm_min) * 60;
  double detect = 0;  // rate-weighted mean detection time
  for (const auto& cause : ft.causes) {
    FailureTable one;
    one.causes = {cause};
    const double w = rate > 0 ? one.rate_per_hour(c.chips, c.chips_per_node) / 3600 / rate : 0.0;
    detect += w *
              (cause.detect_min >= 0 ? cause.detect_min : or_default(c.detect_min, ft.detect_min)) *
              60;
  }
  // Fraction of wall time the job is up, then of that the share spent computing, minus the
  // compute lost per failure: on average half a cycle plus the persistence lag.
  const double down =
      rate * (detect + restart + rewarm) + planned * (p.write_sync_s + restart + rewarm);
  const double up = std::max(0.0, 1 - down);
  const double cycle = tau + delta;
  const double lost = rate * up * (cycle / 2 + lag) * tau / cycle;
  return std::max(0.0, up * tau / cycle - lost);
}

}  // namespace attain::cluster
