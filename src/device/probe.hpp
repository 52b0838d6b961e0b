// The host probe's parts, for the CLI and the tests: the measurement with its sizes exposed
// (tests run a tiny one), the cache with its measurement replaceable, and the JSON form.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "attain/device.hpp"

namespace attain::probe {

struct CacheSizes {
  std::int64_t l1d = 0, l2 = 0, l3 = 0;
};
CacheSizes cache_sizes();
int available_cpus();  // CPUs this process may run on (its affinity mask)

struct ProbeConfig {
  // The bandwidth array: 0 = 8x the last-level cache, at least 256 MiB and at most 1 GiB
  // (and 1/8 of RAM). Reads sweep all of it; the copy copies its first half onto the second.
  std::int64_t bw_array_bytes = 0;
  double fma_seconds = 0.1;  // length of one FMA trial
  int trials = 3;            // every figure is the best of this many trials
  int threads = 0;           // "all threads": 0 = available_cpus()
  // check_ceilings: the read loop to time (a name from probe_kernels.hpp, e.g. the one the probe
  // found fastest); empty = every loop, the fastest kept.
  std::string read_kernel;
};

// Bytes of one bandwidth array for these cache sizes (the rule above).
std::int64_t default_bw_array_bytes(const CacheSizes& c);

// Measures every ceiling now (no cache); prints each step to stderr when `progress`.
HostCeilings measure_host(const ProbeConfig& cfg, bool progress);

// The ceilings a benchmark run reaches with its own thread count, measured now: the fp32 FMA
// and bf16 dot peaks and the streaming read (the probe's loops and array; a second or two).
// `when` names the moment ("start", "end").
CeilingsCheck check_ceilings(int threads, std::string when, const ProbeConfig& cfg);

// check_ceilings() again and again with one bandwidth array, written once and kept (a long run
// samples the machine between ops: writing a 1 GiB array each time would cost more than the
// sample).
class CeilingSampler {
 public:
  CeilingSampler(int threads, const ProbeConfig& cfg);
  ~CeilingSampler();
  CeilingSampler(const CeilingSampler&) = delete;
  CeilingSampler& operator=(const CeilingSampler&) = delete;
  CeilingsCheck sample(std::string when);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// $XDG_CACHE_HOME/attain/probe.json, else ~/.cache/attain/probe.json; empty when neither
// variable is set.
std::filesystem::path cache_path();
std::string cache_key(const std::string& cpu_model, int cores);

// probe_host() with the measurement passed in: returns the cached entry for this CPU model
// and core count unless `refresh`; otherwise (or when absent) calls `measure` and stores the
// result, each figure the higher of the new and the cached one (`raised` says which were
// kept). A corrupt cache file is reported on stderr and replaced.
HostCeilings probe_cached(bool refresh, const std::function<HostCeilings()>& measure);

// Reads this machine's cached entry, lets `raise` raise figures in it (raise_ceiling), and
// writes it back when `raise` returns true. nullopt when there is no cache or no entry.
std::optional<HostCeilings> raise_cached(const std::function<bool(HostCeilings&)>& raise);

// Drops this machine's cached entry (the next probe_host() measures afresh, nothing kept);
// false when there was none.
bool forget_cached();

double unix_now();  // seconds since the epoch

// The `host` device: this machine as the probe measured it (fp32 peak, streaming read).
DeviceSpec host_device(const HostCeilings& c);

nlohmann::json to_json(const HostCeilings& c);
// Throws InputError naming the missing or malformed field.
HostCeilings ceilings_from_json(const nlohmann::json& j);

// The CUDA device's ceilings, measured on every call (no cache): {"present", "device", ...};
// null in builds without CUDA. `progress`: a line on stderr before it measures.
nlohmann::json probe_gpu_json(bool progress);
// What `attain probe --json` prints: to_json(c) with the GPU's under "gpu" (unless null).
nlohmann::json probe_json(const HostCeilings& c, const nlohmann::json& gpu);
// What `attain probe` prints: the host's ceilings, then the GPU's (`gpu` null: none).
std::string probe_text(const HostCeilings& c, const nlohmann::json& gpu);

}  // namespace attain::probe
