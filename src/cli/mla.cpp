// `attain mla`: the MLA decode kernel next to its two baselines (separate K/V caches, naive
// absorbed attention), each verified against the fp64 reference before it is timed.
#include "attain/mla.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "attain/bench.hpp"
#include "attain/device.hpp"
#include "attain/verify.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

struct Args {
  std::int64_t batch = 0, seqlen = 0, heads = 0, s_q = 1;
  bool varlen = false, json = false, hot = false;
  std::string dtype = "bf16", out, variants = "attain,separate_kv,naive";
  int threads = 2;
  double max_seconds = 0.25;
  int min_reps = 5;
  double separate_kv_max_gb = 6;
  std::uint64_t seed = 1;
};

struct Row {
  std::string variant;
  bool verified = false, timed = false;
  double error = 0, tolerance = 0;
  std::string detail;
  Timing t;
  double flops = 0, bytes = 0;
  std::string note;
};

// Seqlens: all = seqlen, or (--varlen) uniform in [1, seqlen], seeded.
std::vector<std::int32_t> make_seqlens(const Args& a) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(a.batch),
                              static_cast<std::int32_t>(a.seqlen));
  if (a.varlen) {
    std::mt19937_64 g(a.seed * 7919 + 3);
    for (auto& x : v) x = static_cast<std::int32_t>(1 + g() % static_cast<std::uint64_t>(a.seqlen));
  }
  return v;
}

// FLOPs and bytes of the absorbed op for these seqlens (cache rows counted once).
void mla_counts(const Op& op, const std::vector<std::int32_t>& sl, double* flops, double* bytes) {
  const double row =
      op.dtype == DType::fp8 ? kMlaFp8RowBytes : kMlaDk * static_cast<double>(dtype_size(op.dtype));
  const double qes = op.dtype == DType::f32 ? 4 : 2;
  double pairs = 0, rows = 0;
  const double Q = static_cast<double>(op.s_q);
  for (auto s : sl) {
    const double S = s;
    rows += S;
    // query i sees max(0, S - Q + i + 1) keys
    for (std::int64_t i = 0; i < op.s_q; ++i)
      pairs += std::max(0.0, S - Q + static_cast<double>(i) + 1);
  }
  *flops = 2.0 * static_cast<double>(op.h) * pairs * (kMlaDk + kMlaDv);
  const double bhq = static_cast<double>(op.b * op.h) * Q;
  *bytes = rows * row + bhq * kMlaDk * qes + bhq * kMlaDv * qes + bhq * 4 +
           static_cast<double>(op.b) * (std::ceil(static_cast<double>(op.s) / kMlaBlock) + 1) * 4;
}

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

Row run_absorbed(const std::string& name, Factory make,
                 std::vector<std::unique_ptr<TensorSet>>& sets, const RunOptions& ro,
                 const TimingConfig& tc, double flops, double bytes) {
  Row r;
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

int run(const Args& a) {
  if (a.batch < 1 || a.seqlen < 1 || a.heads < 1 || a.s_q < 1)
    throw InputError("mla: --batch, --seqlen, --heads and --s-q must be positive");
  if (a.threads < 1 || a.threads > 1024)
    throw InputError(fmt::format("mla: --threads {} out of range", a.threads));
  const auto dt = parse_dtype(a.dtype);
  if (!dt || (*dt != DType::bf16 && *dt != DType::fp8 && *dt != DType::f32))
    throw InputError(fmt::format("mla: --dtype '{}' not supported (bf16, fp8, fp32)", a.dtype));
  std::vector<std::string> variants;
  for (std::size_t pos = 0; pos <= a.variants.size();) {
    const std::size_t c = std::min(a.variants.find(',', pos), a.variants.size());
    const std::string v = a.variants.substr(pos, c - pos);
    if (v != "attain" && v != "separate_kv" && v != "naive")
      throw InputError(fmt::format("mla: unknown variant '{}' (attain, separate_kv, naive)", v));
    variants.push_back(v);
    pos = c + 1;
  }
  if (a.min_reps < 1 || a.min_reps > 100000)
    throw InputError(fmt::format("mla: --min-reps {} outside 1..100000", a.min_reps));
  if (!(a.max_seconds > 0 && a.max_seconds <= 3600))
    throw InputError(fmt::format("mla: --max-seconds {:g} outside (0, 3600]", a.max_seconds));
  if (!(a.separate_kv_max_gb > 0 && std::isfinite(a.separate_kv_max_gb)))
    throw InputError(fmt::format("mla: --separate-kv-max-gb {:g} must be positive and finite",
                                 a.separate_kv_max_gb));
  Op op;
  op.kind = OpKind::mla_decode, op.dtype = *dt;
  op.b = a.batch, op.s = a.seqlen, op.h = a.heads, op.s_q = a.s_q;
  op.validate();
  require_memory_for(op);
  const auto sl = make_seqlens(a);

  TimingConfig tc;
  tc.max_seconds = a.max_seconds, tc.min_reps = a.min_reps, tc.hot = a.hot;
  const RunOptions ro{a.threads};

  const HostCeilings hc = probe_host(false, !a.json);
  std::optional<Roofline> roof = host_roofline(hc, a.threads);
  if (roof->peak_tflops <= 0 || roof->bw_gbps <= 0) roof.reset();  // probe failed: no efficiency
  // The compute ceiling the harness judges this op's dtype by, so `attain mla` and
  // `attain bench` agree.
  const double peak = !roof ? 0 : roof->compute_peak(op.dtype);
  tc.llc_bytes = timing_llc_bytes(hc);

  double flops = 0, bytes = 0;
  mla_counts(op, sl, &flops, &bytes);
  const std::size_t set_bytes = tensor_set_bytes(op);
  const int nsets = rotation_sets(set_bytes, tc);
  std::vector<Row> rows;
  std::vector<std::unique_ptr<TensorSet>> sets;
  const bool absorbed = std::any_of(variants.begin(), variants.end(),
                                    [](const std::string& v) { return v != "separate_kv"; });
  ProgressBar bar(!a.json, variants.size() + 1, -1, "steps");
  bar.update(0, "input sets");
  if (absorbed) sets = make_sets(op, sl, nsets, a.seed);
  std::size_t done = 1;
  for (const auto& v : variants) {
    bar.update(done++, v);
    if (v == "attain")
      rows.push_back(run_absorbed("attain", make_mla_kernel, sets, ro, tc, flops, bytes));
    if (v == "naive")
      rows.push_back(run_absorbed("naive", make_mla_naive_kernel, sets, ro, tc, flops, bytes));
    if (v == "separate_kv") {
      const auto cap = static_cast<std::size_t>(a.separate_kv_max_gb * 1e9);
      SeparateKvCase sk(op, a.seed + 7, cap, sl);
      Row r;
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
      rows.push_back(std::move(r));
    }
  }

  auto find = [&](const char* n) -> const Row* {
    for (const auto& r : rows)
      if (r.variant == n && r.timed) return &r;
    return nullptr;
  };
  const Row* at = find("attain");
  auto speedup = [&](const char* n) -> std::optional<double> {
    const Row* o = find(n);
    if (!at || !o) return std::nullopt;
    return o->t.median_s / at->t.median_s;
  };
  auto attainable = [&](const Row& r) -> std::optional<double> {
    if (!roof) return std::nullopt;
    return std::min(peak, r.flops / r.bytes * roof->bw_gbps / 1e3);
  };

  nlohmann::json j;
  j["schema"] = "attain.mla/1";
  j["op"] = op.spec();
  j["varlen"] = a.varlen;
  j["threads"] = a.threads;
  {
    MlaDecoder probe_isa(1, 1);
    j["isa"] = probe_isa.isa();
  }
  j["timing"] = {{"cache", a.hot ? "hot" : "cold"},
                 {"max_seconds", tc.max_seconds},
                 {"min_reps", tc.min_reps}};
  j["model"] =
      "bytes: every cache row read once + q + o + lse; flops: 2*h*pairs*(576+512) "
      "(separate_kv: 2*h*pairs*(192+128), its K and V bytes)";
  if (roof)
    j["roofline"] = {{"peak_tflops", peak}, {"bw_gbps", roof->bw_gbps}, {"source", roof->source}};
  else
    j["roofline"] = nullptr;
  j["results"] = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json e;
    e["variant"] = r.variant;
    e["verified"] = r.verified;
    e["error"] = r.error;
    e["tolerance"] = r.tolerance;
    e["flops"] = r.flops;
    e["bytes"] = r.bytes;
    if (!r.detail.empty()) e["detail"] = r.detail;
    if (!r.note.empty()) e["note"] = r.note;
    if (r.timed) {
      e["median_s"] = r.t.median_s, e["min_s"] = r.t.min_s, e["iqr_s"] = r.t.iqr_s,
      e["reps"] = r.t.reps;
      e["gbps"] = r.bytes / r.t.median_s / 1e9;
      e["tflops"] = r.flops / r.t.median_s / 1e12;
      const auto att = attainable(r);
      e["attainable_tflops"] = att ? nlohmann::json(*att) : nlohmann::json(nullptr);
      e["efficiency"] =
          att ? nlohmann::json(r.flops / r.t.median_s / 1e12 / *att) : nlohmann::json(nullptr);
      if (roof) e["bound"] = r.flops / r.bytes * roof->bw_gbps / 1e3 < peak ? "memory" : "compute";
    } else {
      e["median_s"] = e["gbps"] = e["tflops"] = e["efficiency"] = nullptr;
    }
    j["results"].push_back(e);
  }
  const auto s1 = speedup("separate_kv"), s2 = speedup("naive");
  j["speedup_vs_separate_kv"] = s1 ? nlohmann::json(*s1) : nlohmann::json(nullptr);
  j["speedup_vs_naive"] = s2 ? nlohmann::json(*s2) : nlohmann::json(nullptr);

  if (!a.out.empty()) write_text_file(a.out, j.dump(2) + "\n");
  if (a.json) {
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}{}  threads={}  isa={}  {} cache, median of timed runs\n", op.spec(),
               a.varlen ? " (varlen)" : "", a.threads, j["isa"].get<std::string>(),
               a.hot ? "hot" : "cold");
    fmt::print("roofline: {}\n", roof ? fmt::format("{:.3f} TFLOP/s, {:.1f} GB/s ({})", peak,
                                                    roof->bw_gbps, roof->source)
                                      : "host probe gave no ceilings: efficiency left out");
    fmt::print("{:<12} {:>10} {:>9} {:>9} {:>8} {:>8} {:>9}  {}\n", "variant", "median ms", "GB/s",
               "TFLOP/s", "eff", "bound", "verified", "");
    for (const auto& r : rows) {
      if (!r.timed) {
        fmt::print("{:<12} {:>10} {:>9} {:>9} {:>8} {:>8} {:>9}  {}\n", r.variant, "-", "-", "-",
                   "-", "-", "WRONG", r.detail);
        continue;
      }
      const auto att = attainable(r);
      const double tf = r.flops / r.t.median_s / 1e12;
      fmt::print(
          "{:<12} {:>10.3f} {:>9.2f} {:>9.4f} {:>8} {:>8} {:>9}  {}\n", r.variant,
          r.t.median_s * 1e3, r.bytes / r.t.median_s / 1e9, tf,
          att ? fmt::format("{:.1f}%", 100 * tf / *att) : "-",
          roof ? (r.flops / r.bytes * roof->bw_gbps / 1e3 < peak ? "memory" : "compute") : "-",
          fmt::format("{:.1e}", r.error), r.note);
    }
    if (s1) fmt::print("attain vs separate_kv: {:.2f}x\n", *s1);
    if (s2) fmt::print("attain vs naive:       {:.2f}x\n", *s2);
    fmt::print(
        "bytes: cache rows read once + q + o + lse (separate_kv: its K and V); "
        "flops: 2*h*pairs*(576+512) (separate_kv: 2*h*pairs*(192+128))\n");
  }
  for (const auto& r : rows)
    if (!r.verified) return 1;
  return 0;
}

const bool reg = add_command([](CLI::App& app) {
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand(
      "mla", "MLA decode attention: attain's kernel vs separate-K/V and naive baselines");
  sub->add_option("--batch,-b", args->batch, "requests")->required();
  sub->add_option("--seqlen,-s", args->seqlen,
                  "cached tokens per request (the maximum with --varlen)")
      ->required();
  sub->add_option("--heads", args->heads, "query heads")->required();
  sub->add_option("--s-q", args->s_q, "query tokens per request (causal when > 1)");
  sub->add_flag("--varlen", args->varlen, "ragged batch: seqlens uniform in [1, seqlen]");
  sub->add_option("--dtype", args->dtype, "cache dtype: bf16, fp8 or fp32");
  sub->add_option("--threads,-t", args->threads, "threads (default 2)");
  sub->add_option("--variants", args->variants,
                  "comma list of attain, separate_kv, naive (default all)");
  sub->add_option("--max-seconds", args->max_seconds, "timing budget per variant (default 0.25)");
  sub->add_option("--min-reps", args->min_reps, "timed runs at least (default 5)");
  sub->add_flag("--hot", args->hot, "warm cache: no input rotation, no LLC flush");
  sub->add_option(
      "--separate-kv-max-gb", args->separate_kv_max_gb,
      "memory the separate-K/V cache may take; beyond it requests share blocks (default 6)");
  sub->add_option("--seed", args->seed, "input seed");
  sub->add_flag("--json", args->json, "machine-readable output on stdout");
  sub->add_option("--out", args->out, "also write the JSON to FILE");
  set_action(sub, [args] { return run(*args); });
});

}  // namespace
}  // namespace attain::cli
