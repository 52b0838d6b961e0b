// `attain mla`: attain's MLA decode kernel next to its two baselines (separate K/V caches, as a
// non-absorbed implementation keeps them, and naive absorbed attention), each verified against
// the fp64 reference before it is timed. The run is src/bench/mla.cpp; its report (schema
// "attain.mla/1") is written, read and printed by src/bench/mla_report.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attain/bench.hpp"
#include "attain/op.hpp"

namespace attain {

inline constexpr const char* kMlaSchema = "attain.mla/1";

struct MlaBenchConfig {
  Op op;                // an mla_decode op
  bool varlen = false;  // a ragged batch: seqlens uniform in [1, op.s], seeded
  std::vector<std::string> variants = {"attain", "separate_kv", "naive"};
  int threads = 2;
  TimingConfig timing;            // hot, max_seconds, min_reps; the flush size comes from the probe
  double separate_kv_max_gb = 6;  // beyond it the baseline's requests share cache blocks
  std::uint64_t seed = 1;
  bool progress = false;  // a progress bar on stderr
};

struct MlaVariantResult {
  std::string variant;
  bool verified = false, timed = false;
  double error = 0, tolerance = 0;
  std::string detail;  // what failed verification
  std::string note;    // how the variant ran, where it is not the obvious way
  Timing t;            // when timed
  double flops = 0, bytes = 0;
};

struct MlaReport {
  MlaBenchConfig config;
  std::string isa;  // the kernel family the MLA kernel dispatched to
  // The ceilings the harness judges this op's dtype by (none when the probe failed).
  std::optional<double> peak_tflops, bw_gbps;
  std::string roofline_source;
  std::vector<MlaVariantResult> results;
  std::string created, command;  // provenance

  // min(peak, intensity x bandwidth) for a variant's counts; none without ceilings.
  std::optional<double> attainable_tflops(const MlaVariantResult& r) const;
  std::optional<double> efficiency(const MlaVariantResult& r) const;  // timed variants only
  std::string bound(const MlaVariantResult& r) const;  // "memory", "compute" or "" (no ceilings)
  // How many times longer `baseline` took than attain (both timed), else none.
  std::optional<double> speedup_vs(std::string_view baseline) const;
  bool all_verified() const;
};

// The seqlens of a run: every request at op.s, or (varlen) uniform in [1, op.s] from the seed.
std::vector<std::int32_t> mla_seqlens(const Op& op, bool varlen, std::uint64_t seed);

// Runs the comparison (probes the host's ceilings first). InputError for bad settings.
MlaReport run_mla_bench(const MlaBenchConfig& cfg);

nlohmann::json to_json(const MlaReport& r);
MlaReport mla_report_from_json(const nlohmann::json& j, std::string_view origin);  // InputError
MlaReport read_mla_report(const std::filesystem::path& file);                      // InputError
// What `attain mla` prints.
std::string mla_report_text(const MlaReport& r);

}  // namespace attain
