// The run-time schedule choice: tuning cache, nearest tuned shape, cost model.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "attain/tune.hpp"

namespace attain::tune {

namespace {

// A cached schedule is usable for this call when the engine accepts it for this shape.
bool usable(const gemm::Call& c, const gemm::Schedule& s) {
  if (s.path == gemm::Path::decode && (c.p.trans_b != gemm::Trans::T || c.p.m > 64))  // kDecodeMaxM
    return false;
  return s.threads <= c.p.threads;
}

}  // namespace

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

Scheduler::Scheduler(std::filesystem::path cache_file)
    : cache_(std::move(cache_file), current_identity(gemm::isa_name(gemm::detected_isa()))) {
  const std::string warning = cache_.load();
  if (!warning.empty()) fmt::print(stderr, "attain: tuning cache: {}\n", warning);
}

Scheduler& Scheduler::instance() {
  static Scheduler s(Cache::default_path());
  return s;
}

Scheduler::Choice Scheduler::choose(const gemm::Call& c, const Machine& m) const {
  const Key k = key_of(c);
  for (const Entry* e : {cache_.find(k), cache_.nearest(k)}) {
    if (e == nullptr) continue;
    try {
      const gemm::Schedule s = gemm::parse_schedule(e->best);
      if (usable(c, s)) return {s, e == cache_.find(k) ? Source::tuned : Source::nearest};
    } catch (const std::invalid_argument&) {
      // An entry this build cannot read: fall through to the model.
    }
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
