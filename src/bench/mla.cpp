// `attain mla`'s run: the variants verified, then timed cold (or hot) on rotating input sets.
#include "attain/mla.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "attain/device.hpp"
#include "attain/mla_bench.hpp"
#include "attain/verify.hpp"

namespace attain {
namespace {

void check(const MlaBenchConfig& c) {
  if (c.op.kind != OpKind::mla_decode) throw InputError("mla: the op must be an mla_decode");
  if (c.threads < 1 || c.threads > 1024)
    throw InputError(fmt::format("mla: --threads {} out of range", c.threads));
  if (c.op.dtype != DType::bf16 && c.op.dtype != DType::fp8 && c.op.dtype != DType::f32)
    throw InputError(
        fmt::format("mla: --dtype '{}' not supported (bf16, fp8, fp32)", dtype_name(c.op.dtype)));
  if (c.variants.empty()) throw InputError("mla: --variants names no variant");
  for (const auto& v : c.variants)
    if (v != "attain" && v != "separate_kv" && v != "naive")
      throw InputError(
          fmt::format("mla: unknown variant '{}' (attain, separate_kv, naive)", excerpt(v)));
  if (c.timing.min_reps < 1 || c.timing.min_reps > 100000)
    throw InputError(fmt::format("mla: --min-reps {} outside 1..100000", c.timing.min_reps));
  if (!(c.timing.max_seconds > 0 && c.timing.max_seconds <= 3600))
    throw InputError(
        fmt::format("mla: --max-seconds {:g} outside (0, 3600]", c.timing.max_seconds));
  if (!(c.separate_kv_max_gb > 0 && std::isfinite(c.separate_kv_max_gb)))
    throw InputError(fmt::format("mla: --separate-kv-max-gb {:g} must be positive and finite",
                                 c.separate_kv_max_gb));
  c.op.validate();
}

// Input sets for the absorbed variants: enough to rotate through for cold timing.
std::vector<std::unique_ptr<TensorSet>> make_sets(const Op& op, const std::vector<std::int32_t>& sl,
                                                  int n, std::uint64_t seed) {
  std::vector<std::unique_ptr<TensorSet>> sets;
  for (int i = 0; i < n; ++i) {
    auto set = std::make_unique<TensorSet>(op);
    fill_inputs(*set, seed + static_cast<std::uint64_t>(i));
    if (std::any_of(sl.begin(), sl.end(), [&](std::int32_t x) { return x != op.s; })) {
      std::copy(sl.begin(), sl.end(), (*set)["seqlens"].as<std::int32_t>());
      fill_mla_cache(*set, seed + 100 + static_cast<std::uint64_t>(i));
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

using Factory = std::unique_ptr<Kernel> (*)(TensorSet&, const RunOptions&);

MlaVariantResult run_absorbed(const std::string& name, Factory make,
                              std::vector<std::unique_ptr<TensorSet>>& sets, const RunOptions& ro,
                              const TimingConfig& tc, double flops, double bytes) {
  MlaVariantResult r;
  r.variant = name, r.flops = flops, r.bytes = bytes;
  std::vector<std::unique_ptr<Kernel>> ks;
  for (auto& s : sets) ks.push_back(make(*s, ro));
  poison_outputs(*sets[0]);
  ks[0]->run();
  const Verification v = verify(*sets[0]);
  r.verified = v.ok, r.error = v.error, r.tolerance = v.tolerance, r.detail = v.detail;
  if (!v.ok) return r;
  std::vector<Kernel*> raw;
  for (auto& k : ks) raw.push_back(k.get());
  r.t = time_kernels(raw, sets[0]->total_bytes(), tc);
  r.timed = true;
  return r;
}

MlaVariantResult run_separate_kv(const MlaBenchConfig& c, const std::vector<std::int32_t>& sl,
                                 const RunOptions& ro, const TimingConfig& tc) {
  const Op& op = c.op;
  const auto cap = static_cast<std::size_t>(c.separate_kv_max_gb * 1e9);
  SeparateKvCase sk(op, c.seed + 7, cap, sl);
  MlaVariantResult r;
  r.variant = "separate_kv";
  r.flops = sk.flops();
  const double qes = op.dtype == DType::f32 ? 4 : 2;
  r.bytes = static_cast<double>(sk.cache_bytes_read()) +
            static_cast<double>(op.b * op.s_q * op.h) * (192 + 128 + 4.0 / qes) * qes;
  if (sk.aliased())
    r.note = fmt::format(
        "pool of {} blocks ({:.1f} GB) shared by the requests: the whole cache would not fit",
        sk.pool_blocks(), static_cast<double>(sk.footprint_bytes()) / 1e9);
  auto k = sk.make_kernel(ro);
  k->run();
  const Verification ver = sk.verify();
  r.verified = ver.ok, r.error = ver.error, r.tolerance = ver.tolerance, r.detail = ver.detail;
  if (ver.ok) {
    Kernel* raw = k.get();
    r.t = time_kernels(std::span<Kernel* const>(&raw, 1), sk.footprint_bytes(), tc);
    r.timed = true;
  }
  return r;
}

}  // namespace

std::vector<std::int32_t> mla_seqlens(const Op& op, bool varlen, std::uint64_t seed) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(op.b), static_cast<std::int32_t>(op.s));
  if (varlen) {
    std::mt19937_64 g(seed * 7919 + 3);
    for (auto& x : v) x = static_cast<std::int32_t>(1 + g() % static_cast<std::uint64_t>(op.s));
  }
  return v;
}

MlaReport run_mla_bench(const MlaBenchConfig& cfg) {
  check(cfg);
  const Op& op = cfg.op;
  require_memory_for(op);
  MlaReport rep;
  rep.config = cfg;
  TimingConfig tc = cfg.timing;
  const RunOptions ro{cfg.threads};
  const HostCeilings hc = probe_host(false, cfg.progress);
  const Roofline roof = host_roofline(hc, cfg.threads);
  if (roof.peak_tflops > 0 && roof.bw_gbps > 0) {  // a failed probe: no efficiency
    // The compute ceiling the harness judges this op's dtype by, so `attain mla` and
    // `attain bench` agree.
    rep.peak_tflops = roof.compute_peak(op.dtype);
    rep.bw_gbps = roof.bw_gbps;
    rep.roofline_source = roof.source;
  }
  tc.llc_bytes = timing_llc_bytes(hc);
  rep.config.timing = tc;
  rep.isa = MlaDecoder(1, 1).isa();

  const auto sl = mla_seqlens(op, cfg.varlen, cfg.seed);
  const double flops = op.flops(sl), bytes = op.bytes(sl);
  const bool absorbed = std::any_of(cfg.variants.begin(), cfg.variants.end(),
                                    [](const std::string& v) { return v != "separate_kv"; });
  ProgressBar bar(cfg.progress, cfg.variants.size() + 1, -1, "steps");
  bar.update(0, "input sets");
  std::vector<std::unique_ptr<TensorSet>> sets;
  if (absorbed) sets = make_sets(op, sl, rotation_sets(tensor_set_bytes(op), tc), cfg.seed);
  std::size_t done = 1;
  for (const auto& v : cfg.variants) {
    bar.update(done++, v);
    if (v == "attain")
      rep.results.push_back(run_absorbed(v, make_mla_kernel, sets, ro, tc, flops, bytes));
    else if (v == "naive")
      rep.results.push_back(run_absorbed(v, make_mla_naive_kernel, sets, ro, tc, flops, bytes));
    else
      rep.results.push_back(run_separate_kv(cfg, sl, ro, tc));
  }
  return rep;
}

}  // namespace attain
