// Device database (data/devices/*.json) and this host's measured ceilings.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attain/cpu_features.hpp"
#include "attain/op.hpp"

namespace attain {

struct DeviceSpec {
  std::string id, name, vendor, kind;         // kind: "gpu", "npu", "cpu"
  std::map<std::string, double> peak_tflops;  // dense, by dtype name: bf16, fp8, fp4, fp32
  // Dtype name -> kPeakNotPublished or kPeakNotSupported: a gap the device file states on
  // purpose (with its source), where a blank would leave the reader guessing.
  std::map<std::string, std::string> peak_absent;
  std::vector<std::string> assumptions;  // peaks filled by assume_peak, as it labels them
  double mem_bandwidth_gbps = 0;         // HBM / DRAM
  double mem_capacity_gb = 0;
  double interconnect_gbps = 0;  // per chip, one direction, scale-up link
  std::string interconnect;      // e.g. "NVLink 4"
  double tdp_w = 0;
  // The fraction of its roofline the chip's matrix ops sustain inside a training step, where a
  // published training run sizes it (0: none): `attain cluster`'s default efficiency for it.
  double training_efficiency = 0;
  std::map<std::string, std::string> sources;  // field -> where the number comes from
  double peak(DType dt) const;                 // 0 if the device does not list it
  // Why peak(dt) is 0, for an error or a skipped row: "not published (<source>)", "not
  // supported (<source>)" or "not listed in the device file".
  std::string peak_gap(DType dt) const;
};

inline constexpr const char* kPeakNotPublished = "not published";
inline constexpr const char* kPeakNotSupported = "not supported";

// Fills a peak the vendor does not publish with an explicit assumption, as `--assume-peak`
// gives it: "bf16=fp8/2" (another of the device's peaks divided by a number), "bf16=fp8*0.5",
// or "bf16=500" (TFLOP/s). The peak's source then says it is assumed, from what; so does every
// roofline and results file built from it. A published peak is never replaced, and a dtype the
// device does not support gets none (InputError).
void assume_peak(DeviceSpec& d, std::string_view rule);
// load_device(id) with each assume_peak() rule applied in order: what a `--device` with
// `--assume-peak` reads.
DeviceSpec load_device(std::string_view id, const std::vector<std::string>& assume_peaks);

std::vector<DeviceSpec> load_devices();  // every file in data/devices
// A listed id, "host", or the path of a device file (containing '/' or ending in .json).
// Throws InputError (listing the known ids, or naming the file's bad field).
DeviceSpec load_device(std::string_view id);
DeviceSpec parse_device(std::string_view json_text, std::string_view origin);
// The database as `attain devices` lists it: one JSON object per device, and a table of the
// dense peaks, bandwidth, capacity and link.
nlohmann::json devices_json(const std::vector<DeviceSpec>& devs);
std::string devices_table(const std::vector<DeviceSpec>& devs);

struct HostCeilings {
  std::string cpu_model;
  int cores = 1;  // logical CPUs available to this process
  CpuFeatures isa;
  std::int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
  double fma_gflops_1t = 0, fma_gflops_all = 0;    // fp32 FMA peak
  double bf16_gflops_1t = 0, bf16_gflops_all = 0;  // native bf16 dot peak (AVX512_BF16); 0: none
  double read_gbps_1t = 0, read_gbps_all = 0;      // streaming read
  double copy_gbps_1t = 0, copy_gbps_all = 0;      // read + write counted
  std::string fma_isa;                             // the FMA loop measured: avx512f, avx2, sse2
  std::string read_kernel;          // the read loop that was fastest: plain, streams4, prefetch, nt
  std::int64_t bw_array_bytes = 0;  // array size of the bandwidth runs
  // The smallest array (a power of two from 8 MiB) whose second read in a row runs at memory
  // speed: the cache this process really reaches, measured (a VM may be told the socket's
  // whole L3 and own a slice of it, or own more than it is told). 0: not measured.
  std::int64_t cold_bytes = 0;
  std::string measured_at;  // ISO date
  // Figure name (as in the JSON: "read_gbps_all", ...) -> (best - worst) / best over the trials
  // of the loop that gave it: how steady the machine was while it was measured.
  std::map<std::string, double> spread;
  // Figure name -> when and by what it was raised above the probe's own measurement: a
  // ceiling is the best this machine has been measured to do, so a later probe, a benchmark's
  // re-check or an op that ran faster than the ceiling allowed raises it (never lowers it).
  std::map<std::string, std::string> raised;
};

// The ceilings of HostCeilings by their JSON names, for code that treats them alike.
struct CeilingFigure {
  const char* name;
  double HostCeilings::*value;
};
inline constexpr CeilingFigure kCeilingFigures[] = {
    {"fma_gflops_1t", &HostCeilings::fma_gflops_1t},
    {"fma_gflops_all", &HostCeilings::fma_gflops_all},
    {"bf16_gflops_1t", &HostCeilings::bf16_gflops_1t},
    {"bf16_gflops_all", &HostCeilings::bf16_gflops_all},
    {"read_gbps_1t", &HostCeilings::read_gbps_1t},
    {"read_gbps_all", &HostCeilings::read_gbps_all},
    {"copy_gbps_1t", &HostCeilings::copy_gbps_1t},
    {"copy_gbps_all", &HostCeilings::copy_gbps_all}};

// Raises figure `name` of c to `value` when that is higher (a figure c lacks, 0, stays 0: a
// bf16 ceiling exists only where the probe found the instruction), noting `by` with the time.
// Returns whether it rose.
bool raise_ceiling(HostCeilings& c, std::string_view name, double value, const std::string& by);

// The ceilings measured again while a benchmark runs, with the run's threads: on a shared
// machine the memory bandwidth drifts by up to 2x between phases, and the cached probe is from
// one of them. A results file keeps them beside the probe; efficiencies stay against the probe.
struct CeilingsCheck {
  std::string when;  // "start", "end", "sample"
  std::string at;    // ISO time
  int threads = 0;
  double fma_gflops = 0, bf16_gflops = 0, read_gbps = 0;  // bf16: 0 where there is no bf16 dot
  std::string read_kernel;                                // the read loop that gave read_gbps
  double t_unix = 0;  // seconds since the epoch (when ops near it are found)
};

// Measured ceilings, cached in $XDG_CACHE_HOME/attain/probe.json (keyed by CPU model and
// core count); refresh re-measures. `progress` prints what is being measured to stderr.
HostCeilings probe_host(bool refresh = false, bool progress = false);

// The roofline an op is judged against.
struct Roofline {
  double peak_tflops = 0;       // compute ceiling (fp32 FMA on a CPU; the dtype's peak on a device)
  double bf16_peak_tflops = 0;  // where bf16 has a ceiling of its own (AVX512_BF16); 0: peak_tflops
  double bw_gbps = 0;           // memory ceiling
  std::string source;           // "probe (2 threads)", "device h200 datasheet", ...
  double attainable_tflops(const Op& op) const;
  // The compute ceiling for operands stored as dt: for bf16 and fp8 the higher of the bf16
  // dot peak and peak_tflops (e4m3 values are exact in bf16, and both are exact in fp32, so
  // either instruction can multiply them), else peak_tflops.
  double compute_peak(DType dt) const;
};
// Host roofline for `threads` threads: compute in fp32 FMA, bf16 and fp8 at the native bf16
// dot peak where the CPU has one (fp16 has no native product on x86 CPUs: fp32 FMA),
// bandwidth = streaming read, interpolated between 1 and all threads.
Roofline host_roofline(const HostCeilings& c, int threads);
Roofline device_roofline(const DeviceSpec& d, DType dt);

}  // namespace attain
