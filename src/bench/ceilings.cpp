// A run's results judged against the best ceilings known when it ends, and the probe's
// ceilings raised by what the run measured: an efficiency above 1.0 means a wrong ceiling.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attain/bench.hpp"

namespace attain {

namespace {
// A check further than this from an op in time says nothing of the machine's minute when the op
// ran (a resumed run's first check can come hours after the last op of the run before).
constexpr double kNearSeconds = 900;
}  // namespace

Roofline checked_roofline(const std::vector<CeilingsCheck>& checks) {
  Roofline r;
  for (const auto& c : checks) {
    r.peak_tflops = std::max(r.peak_tflops, c.fma_gflops / 1e3);
    r.bf16_peak_tflops = std::max(r.bf16_peak_tflops, c.bf16_gflops / 1e3);
    r.bw_gbps = std::max(r.bw_gbps, c.read_gbps);
  }
  r.source = "ceilings measured during the run";
  return r;
}

Roofline best_of(const Roofline& a, const Roofline& b) {
  Roofline r;
  r.peak_tflops = std::max(a.peak_tflops, b.peak_tflops);
  r.bf16_peak_tflops = std::max(a.bf16_peak_tflops, b.bf16_peak_tflops);
  r.bw_gbps = std::max(a.bw_gbps, b.bw_gbps);
  r.source = a.source.empty()   ? b.source
             : b.source.empty() ? a.source
                                : fmt::format("the higher of each of {}; {}", a.source, b.source);
  return r;
}

void judge_results(std::vector<Result>& results, const Roofline& roof,
                   const std::vector<CeilingsCheck>& checks) {
  // The checks in time order (those of the run's threads: every check of one run has them).
  std::vector<const CeilingsCheck*> timed;
  for (const auto& c : checks)
    if (c.t_unix > 0) timed.push_back(&c);
  std::sort(timed.begin(), timed.end(),
            [](const CeilingsCheck* a, const CeilingsCheck* b) { return a->t_unix < b->t_unix; });
  for (Result& r : results) {
    if (r.status != "ok" || !(r.median_s > 0)) continue;
    r.attainable_tflops = roof.attainable_tflops(r.op.op);
    r.efficiency = r.attainable_tflops > 0 ? r.tflops / r.attainable_tflops : 0;
    r.local_efficiency = 0;
    if (timed.empty() || !(r.t_unix > 0)) continue;
    const auto after =
        std::lower_bound(timed.begin(), timed.end(), r.t_unix,
                         [](const CeilingsCheck* c, double t) { return c->t_unix < t; });
    std::vector<CeilingsCheck> near;
    if (after != timed.end() && (*after)->t_unix - r.t_unix <= kNearSeconds)
      near.push_back(**after);
    if (after != timed.begin() && r.t_unix - (*std::prev(after))->t_unix <= kNearSeconds)
      near.push_back(**std::prev(after));
    if (near.empty()) continue;
    const double local = checked_roofline(near).attainable_tflops(r.op.op);
    if (local > 0) r.local_efficiency = r.tflops / local;
  }
}

std::vector<std::string> raise_from_run(HostCeilings& c, int threads,
                                        const std::vector<CeilingsCheck>& checks,
                                        const std::vector<Result>& results, const Roofline& roof) {
  std::vector<std::string> notes;
  const bool one = threads == 1, all = threads == c.cores;
  if (!one && !all) return notes;
  auto raise = [&](const char* figure, double value, const std::string& by) {
    const std::string name = fmt::format("{}_{}", figure, one ? "1t" : "all");
    const double before = [&] {
      for (const CeilingFigure& f : kCeilingFigures)
        if (name == f.name) return c.*f.value;
      return 0.0;
    }();
    if (raise_ceiling(c, name, value, by))
      notes.push_back(fmt::format("{} {:.1f} -> {:.1f} ({})", name, before, value, by));
    // With one core, the 1-thread and the all-thread figure are one measurement.
    if (c.cores == 1 && one) raise_ceiling(c, fmt::format("{}_all", figure), value, by);
  };
  for (const CeilingsCheck& k : checks) {
    const std::string by = fmt::format("the {} check of a benchmark run", k.when);
    raise("fma_gflops", k.fma_gflops, by);
    raise("bf16_gflops", k.bf16_gflops, by);
    raise("read_gbps", k.read_gbps, by);
  }
  // An op that moves less than the probe found to read at memory speed (cold_bytes; else the
  // LLC the CPU reports) may be served partly from cache however cold its timing: it says
  // nothing about the memory, and raises no read figure (it is still a ceiling error).
  const double memory_sized = static_cast<double>(c.cold_bytes > 0 ? c.cold_bytes : c.l3_bytes);
  for (const Result& r : results) {
    if (!r.exceeds_ceiling()) continue;
    const Op& op = r.op.op;
    const double memory_roof = op.flops() / op.bytes() * roof.bw_gbps / 1e3;
    const std::string by = fmt::format("{} on {}", op.spec(), r.backend);
    if (memory_roof < roof.compute_peak(op.dtype)) {
      if (op.bytes() >= memory_sized) raise("read_gbps", r.gbps, by);
    } else {
      const bool dot = (op.dtype == DType::bf16 || op.dtype == DType::fp8) &&
                       roof.bf16_peak_tflops > roof.peak_tflops;
      raise(dot ? "bf16_gflops" : "fma_gflops", r.tflops * 1e3, by);
    }
  }
  return notes;
}

std::string format_checks(const MachineInfo& m) {
  const auto& checks = m.checks;
  if (checks.empty()) return "";
  const Roofline& p = m.roofline;
  const bool bf16 = p.bf16_peak_tflops > 0;
  std::string out = fmt::format(
      "\nThe machine while the ops ran ({} threads; in brackets the ceilings the efficiencies "
      "above use, the best known at the end of the run):\n",
      checks.front().threads);
  auto line = [&](const std::string& what, double fma, double dot, double read) {
    std::string s =
        fmt::format("  {:<28} fp32 FMA {:6.1f} GFLOP/s ({:.1f})", what, fma, p.peak_tflops * 1e3);
    if (bf16) s += fmt::format("  bf16 dot {:6.1f} ({:.1f})", dot, p.bf16_peak_tflops * 1e3);
    return s + fmt::format("  read {:5.1f} GB/s ({:.1f})\n", read, p.bw_gbps);
  };
  std::vector<double> fma, dot, read;
  for (const auto& c : checks) {
    if (c.when != "sample") {
      out += line(fmt::format("{} {}", c.when, c.at), c.fma_gflops, c.bf16_gflops, c.read_gbps);
      continue;
    }
    fma.push_back(c.fma_gflops), dot.push_back(c.bf16_gflops), read.push_back(c.read_gbps);
  }
  if (!read.empty()) {
    auto range = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return fmt::format("{:.1f}-{:.1f}", v.front(), v.back());
    };
    out += fmt::format("  {} samples between ops: fp32 FMA {} GFLOP/s", read.size(), range(fma));
    if (bf16) out += fmt::format(", bf16 dot {}", range(dot));
    out += fmt::format(", read {} GB/s\n", range(read));
  }
  return out;
}

}  // namespace attain
