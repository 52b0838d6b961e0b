// Measured ceilings of this host: fp32 FMA peak, streaming read and copy bandwidth, each for
// one thread and for all; cached per CPU model and core count.
#include "device/probe.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "attain/files.hpp"
#include "device/probe_kernels.hpp"

namespace attain {

namespace probe {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::int64_t kMiB = std::int64_t{1} << 20;
// A read faster than this many times the memory's rate is served (in part) by a cache.
constexpr double kCachedFactor = 1.25;

volatile float g_sink = 0;  // results of the timed loops land here so none is dropped

Kernels best_kernels(const CpuFeatures& f) {
#if defined(__x86_64__)
  if (f.avx512f) return kernels_avx512();
  if (f.avx2 && f.fma) return kernels_avx2();
#else
  (void)f;
#endif
  return kernels_sse2();
}

std::vector<int> allowed_cpu_list() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) cpus.push_back(i);
  return cpus;
}

// Runs body(i) on n threads (pinned to distinct allowed CPUs where there are enough) that
// start together; returns the seconds from the first start to the last finish.
template <class Body>
double run_parallel(int n, Body&& body) {
  const auto cpus = allowed_cpu_list();
  std::vector<Clock::time_point> start(static_cast<std::size_t>(n)), end(start);
  std::barrier sync(n);
  std::vector<std::thread> pool;
  for (int i = 0; i < n; ++i) {
    pool.emplace_back([&, i] {
      if (static_cast<int>(cpus.size()) >= n) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[static_cast<std::size_t>(i)], &one);
        pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      }
      sync.arrive_and_wait();
      start[static_cast<std::size_t>(i)] = Clock::now();
      body(i);
      end[static_cast<std::size_t>(i)] = Clock::now();
    });
  }
  for (auto& t : pool) t.join();
  return std::chrono::duration<double>(*std::max_element(end.begin(), end.end()) -
                                       *std::min_element(start.begin(), start.end()))
      .count();
}

// A buffer on 2 MiB boundaries with transparent huge pages requested: touching 4 KiB pages
// one fault at a time costs seconds per GiB in a VM, 2 MiB pages make it 512x fewer faults.
class Buffer {
 public:
  explicit Buffer(std::size_t bytes) : len_(bytes + kHuge) {
    void* m = mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    map_ = m;
    const auto addr = reinterpret_cast<std::uintptr_t>(m);
    p = reinterpret_cast<float*>((addr + kHuge - 1) / kHuge * kHuge);
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without THP the probe is just slower
#endif
  }
  ~Buffer() {
    munmap(map_, len_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  float* p = nullptr;

 private:
  static constexpr std::size_t kHuge = std::size_t{2} << 20;
  void* map_ = nullptr;
  std::size_t len_;
};

// The best of several trials, with the worst beside it (their gap is the machine's noise).
struct Trials {
  double best = 0, worst = 0;
  void add(double x) {
    worst = best > 0 ? std::min(worst, x) : x;
    best = std::max(best, x);
  }
  double spread() const { return best > 0 ? (best - worst) / best : 0; }
};

// GFLOP/s of `threads` threads each running the FMA loop `iters` times; best of `trials`.
// Each thread's rate is taken over its own CPU time (CLOCK_THREAD_CPUTIME_ID), so time the
// scheduler gives to other processes does not lower a ceiling of the cores themselves; the
// threads are pinned to distinct CPUs and start together, so their rates add up. (With SMT
// siblings on a busy machine the threads may not overlap and the sum can overstate the
// all-thread peak: probe an idle machine.)
Trials loop_gflops(FmaLoop loop, double flops_per_iter, std::int64_t iters, int threads,
                   int trials) {
  const double flops = static_cast<double>(iters) * flops_per_iter;
  Trials best;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> cpu_s(static_cast<std::size_t>(threads));
    run_parallel(threads, [&](int i) {
      timespec a{}, b{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
      g_sink = g_sink + loop(iters);
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
      cpu_s[static_cast<std::size_t>(i)] = static_cast<double>(b.tv_sec - a.tv_sec) +
                                           1e-9 * static_cast<double>(b.tv_nsec - a.tv_nsec);
    });
    double gflops = 0;
    for (double s : cpu_s) gflops += flops / std::max(s, 1e-9) / 1e9;
    best.add(gflops);
  }
  return best;
}

// GB/s of a read (with `read`) or a copy (dst set) over n floats split across `threads`; best
// of `trials`.
Trials stream_gbps(const Kernels& k, ReadLoop read, const float* src, float* dst, std::size_t n,
                   int threads, int trials) {
  const std::size_t per = n / static_cast<std::size_t>(threads) / 64 * 64;
  const double bytes =
      static_cast<double>(per * static_cast<std::size_t>(threads) * sizeof(float)) *
      (dst ? 2.0 : 1.0);  // copy: read + write counted
  Trials best;
  for (int t = 0; t < trials; ++t) {
    const double s = run_parallel(threads, [&](int i) {
      const std::size_t off = per * static_cast<std::size_t>(i);
      if (dst)
        k.copy(dst + off, src + off, per);
      else
        g_sink = g_sink + read(src + off, per);
    });
    best.add(bytes / s / 1e9);
  }
  return best;
}

// The fastest of the read loops (or only the one named `only`, when it exists): its trials
// and its name.
struct BestRead {
  Trials trials;
  std::string kernel;
};
BestRead best_read(const Kernels& k, const float* src, std::size_t n, int threads, int trials,
                   const std::string& only = "") {
  BestRead out;
  const ReadKernel* one = only.empty() ? nullptr : find_read(k, only);
  for (const ReadKernel& r : k.reads) {
    if (one != nullptr && &r != one) continue;
    const Trials t = stream_gbps(k, r.fn, src, nullptr, n, threads, trials);
    if (t.best > out.trials.best) out = {t, r.name};
  }
  return out;
}

// Iterations of the FMA loop that take about `seconds`, from short calibration runs.
std::int64_t fma_iters(const Kernels& k, double seconds) {
  std::int64_t iters = 1 << 14;
  for (;;) {
    const auto t0 = Clock::now();
    g_sink = g_sink + k.fma(iters);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s >= seconds / 8 || iters >= (std::int64_t{1} << 40))
      return std::max<std::int64_t>(1 << 10,
                                    static_cast<std::int64_t>(iters * seconds / std::max(s, 1e-9)));
    iters *= 4;
  }
}

// The bandwidth array: floats for about `bytes`, a whole number of chunks per thread.
std::size_t array_floats(std::int64_t bytes, int threads) {
  const std::size_t chunk = 2 * 64 * sizeof(float) * static_cast<std::size_t>(threads);
  const std::size_t n = static_cast<std::size_t>(bytes) / chunk * chunk / sizeof(float);
  return std::max<std::size_t>(n, chunk / sizeof(float));
}

// Written by the threads first: untouched pages read as the shared zero page and would fake
// bandwidth.
void write_array(float* p, std::size_t n, int threads) {
  const std::size_t per = n / static_cast<std::size_t>(threads);
  run_parallel(threads, [&](int i) {
    const std::size_t off = per * static_cast<std::size_t>(i);
    for (std::size_t j = off; j < off + per; ++j) p[j] = static_cast<float>(j & 1023) * 1e-3f;
  });
}

}  // namespace

CacheSizes cache_sizes() {
  const CpuFeatures& f = detected_cpu_features();
  return {f.l1d_bytes, f.l2_bytes, f.l3_bytes};
}

int available_cpus() {
  const auto n = static_cast<int>(allowed_cpu_list().size());
  if (n > 0) return n;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::int64_t default_bw_array_bytes(const CacheSizes& c) {
  std::int64_t bytes = std::clamp<std::int64_t>(8 * c.l3, 256 * kMiB, 1024 * kMiB);
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) bytes = std::min<std::int64_t>(bytes, std::int64_t{pages} * page / 8);
  return std::max<std::int64_t>(bytes, 4 * kMiB);
}

HostCeilings measure_host(const ProbeConfig& cfg, bool progress) {
  HostCeilings c;
  c.cpu_model = cpu_model_name();
  c.cores = available_cpus();
  c.isa = detected_cpu_features();
  const CacheSizes caches = cache_sizes();
  c.l1d_bytes = caches.l1d, c.l2_bytes = caches.l2, c.l3_bytes = caches.l3;
  const int all = cfg.threads > 0 ? cfg.threads : c.cores;
  const int trials = std::max(1, cfg.trials);
  const Kernels k = best_kernels(c.isa);
  c.fma_isa = k.isa;
  const auto t_start = Clock::now();
  auto say = [&](const std::string& s) {
    if (progress)
      std::fprintf(stderr, "probe: [%5.1f s] %s\n",
                   std::chrono::duration<double>(Clock::now() - t_start).count(), s.c_str());
  };

  const std::int64_t iters = fma_iters(k, cfg.fma_seconds);
  // FMA trials are short (fma_seconds each): take twice as many as for bandwidth.
  // Each figure: its value and its trials' spread, under its JSON name.
  auto keep = [&](const char* name, double HostCeilings::*field, const Trials& t) {
    c.*field = t.best;
    c.spread[name] = t.spread();
  };
  const double fpi = fma_flops_per_iter(k);
  const Trials fma1 = loop_gflops(k.fma, fpi, iters, 1, 2 * trials);
  keep("fma_gflops_1t", &HostCeilings::fma_gflops_1t, fma1);
  say(fmt::format("fp32 FMA peak ({}), 1 thread: {:.1f} GFLOP/s", k.isa, c.fma_gflops_1t));
  keep("fma_gflops_all", &HostCeilings::fma_gflops_all,
       all > 1 ? loop_gflops(k.fma, fpi, iters, all, 2 * trials) : fma1);
  say(fmt::format("fp32 FMA peak ({}), {} threads: {:.1f} GFLOP/s", k.isa, all, c.fma_gflops_all));
#if defined(__x86_64__)
  // CPUs with a native bf16 dot product have a bf16 ceiling of their own (twice fp32's).
  if (c.isa.avx512_bf16) {
    const Trials b1 = loop_gflops(bf16_dot_avx512, kBf16FlopsPerIter, iters, 1, 2 * trials);
    keep("bf16_gflops_1t", &HostCeilings::bf16_gflops_1t, b1);
    say(fmt::format("bf16 dot peak (avx512_bf16), 1 thread: {:.1f} GFLOP/s", c.bf16_gflops_1t));
    keep("bf16_gflops_all", &HostCeilings::bf16_gflops_all,
         all > 1 ? loop_gflops(bf16_dot_avx512, kBf16FlopsPerIter, iters, all, 2 * trials) : b1);
    say(fmt::format("bf16 dot peak (avx512_bf16), {} threads: {:.1f} GFLOP/s", all,
                    c.bf16_gflops_all));
  }
#endif

  // Bandwidth: arrays far larger than the LLC, written first (untouched pages read as the
  // shared zero page and would fake bandwidth).
  const std::size_t n = array_floats(
      cfg.bw_array_bytes > 0 ? cfg.bw_array_bytes : default_bw_array_bytes(caches), all);
  Buffer buf(n * sizeof(float));
  write_array(buf.p, n, all);
  c.bw_array_bytes = static_cast<std::int64_t>(n * sizeof(float));
  const double mib = static_cast<double>(c.bw_array_bytes) / static_cast<double>(kMiB);
  say(fmt::format("wrote {:.0f} MiB", mib));
  // Every read loop, `trials` times each; the fastest loop's best trial is the ceiling.
  const BestRead r1 = best_read(k, buf.p, n, 1, trials);
  keep("read_gbps_1t", &HostCeilings::read_gbps_1t, r1.trials);
  say(fmt::format("read {:.0f} MiB, 1 thread: {:.1f} GB/s ({})", mib, c.read_gbps_1t, r1.kernel));
  const BestRead ra = all > 1 ? best_read(k, buf.p, n, all, trials) : r1;
  keep("read_gbps_all", &HostCeilings::read_gbps_all, ra.trials);
  c.read_kernel = ra.kernel;
  say(fmt::format("read {:.0f} MiB, {} threads: {:.1f} GB/s ({})", mib, all, c.read_gbps_all,
                  ra.kernel));
  // The cache's real reach: arrays from 8 MiB up, each read twice in a row, the second read
  // timed; the first size that reads at memory speed (within kCachedFactor of the whole
  // array's rate) is past what the caches hold.
  const ReadKernel* best1 = find_read(k, r1.kernel);
  const ReadLoop fastest = best1 != nullptr ? best1->fn : k.reads[0].fn;
  c.cold_bytes = c.bw_array_bytes;
  for (std::int64_t bytes = 8 * kMiB; bytes < c.bw_array_bytes; bytes *= 2) {
    const std::size_t m = array_floats(bytes, 1);
    g_sink = g_sink + fastest(buf.p, m);
    const double gbps = stream_gbps(k, fastest, buf.p, nullptr, m, 1, 2).best;
    if (gbps < kCachedFactor * c.read_gbps_1t) {
      c.cold_bytes = bytes;
      break;
    }
  }
  say(fmt::format("reads of {} MiB or more run at memory speed", c.cold_bytes / kMiB));
  // Copy the first half of the array onto the second (each half is still far past the LLC).
  const std::size_t half = n / 2;
  const Trials c1 = stream_gbps(k, nullptr, buf.p, buf.p + half, half, 1, trials);
  keep("copy_gbps_1t", &HostCeilings::copy_gbps_1t, c1);
  say(fmt::format("copy {:.0f} -> {:.0f} MiB (read + write counted), 1 thread: {:.1f} GB/s",
                  mib / 2, mib / 2, c.copy_gbps_1t));
  keep("copy_gbps_all", &HostCeilings::copy_gbps_all,
       all > 1 ? stream_gbps(k, nullptr, buf.p, buf.p + half, half, all, trials) : c1);
  say(fmt::format("copy {:.0f} -> {:.0f} MiB (read + write counted), {} threads: {:.1f} GB/s",
                  mib / 2, mib / 2, all, c.copy_gbps_all));
  c.measured_at = now_iso();
  return c;
}

struct CeilingSampler::Impl {
  int threads;
  ProbeConfig cfg;
  Kernels k;
  bool bf16;
  std::int64_t iters;
  std::size_t n;
  Buffer buf;
  Impl(int t, const ProbeConfig& c, const Kernels& kk, bool b, std::size_t floats)
      : threads(t),
        cfg(c),
        k(kk),
        bf16(b),
        iters(fma_iters(kk, c.fma_seconds)),
        n(floats),
        buf(floats * sizeof(float)) {
    write_array(buf.p, n, threads);
  }
};

CeilingSampler::CeilingSampler(int threads, const ProbeConfig& cfg) {
  const int t = std::max(1, threads);
  const CpuFeatures isa = detected_cpu_features();
  const std::size_t n = array_floats(
      cfg.bw_array_bytes > 0 ? cfg.bw_array_bytes : default_bw_array_bytes(cache_sizes()), t);
  impl_ = std::make_unique<Impl>(t, cfg, best_kernels(isa), isa.avx512_bf16, n);
}

CeilingSampler::~CeilingSampler() = default;

CeilingsCheck CeilingSampler::sample(std::string when) {
  Impl& s = *impl_;
  CeilingsCheck c;
  c.when = std::move(when);
  c.threads = s.threads;
  const int trials = std::max(1, s.cfg.trials);
  c.fma_gflops = loop_gflops(s.k.fma, fma_flops_per_iter(s.k), s.iters, c.threads, trials).best;
#if defined(__x86_64__)
  if (s.bf16)
    c.bf16_gflops =
        loop_gflops(bf16_dot_avx512, kBf16FlopsPerIter, s.iters, c.threads, trials).best;
#endif
  const BestRead r = best_read(s.k, s.buf.p, s.n, c.threads, trials, s.cfg.read_kernel);
  c.read_gbps = r.trials.best;
  c.read_kernel = r.kernel;
  c.at = now_iso();
  c.t_unix = unix_now();
  return c;
}

CeilingsCheck check_ceilings(int threads, std::string when, const ProbeConfig& cfg) {
  return CeilingSampler(threads, cfg).sample(std::move(when));
}

// ---- JSON and the cache --------------------------------------------------------------

nlohmann::json to_json(const HostCeilings& c) {
  return {{"cpu_model", c.cpu_model},
          {"cores", c.cores},
          {"isa",
           {{"avx2", c.isa.avx2},
            {"fma", c.isa.fma},
            {"f16c", c.isa.f16c},
            {"avx512f", c.isa.avx512f},
            {"avx512bw", c.isa.avx512bw},
            {"avx512_bf16", c.isa.avx512_bf16},
            {"amx", c.isa.amx}}},
          {"l1d_bytes", c.l1d_bytes},
          {"l2_bytes", c.l2_bytes},
          {"l3_bytes", c.l3_bytes},
          {"fma_isa", c.fma_isa},
          {"fma_gflops_1t", c.fma_gflops_1t},
          {"fma_gflops_all", c.fma_gflops_all},
          {"bf16_gflops_1t", c.bf16_gflops_1t},
          {"bf16_gflops_all", c.bf16_gflops_all},
          {"read_kernel", c.read_kernel},
          {"bw_array_bytes", c.bw_array_bytes},
          {"cold_bytes", c.cold_bytes},
          {"read_gbps_1t", c.read_gbps_1t},
          {"read_gbps_all", c.read_gbps_all},
          {"copy_gbps_1t", c.copy_gbps_1t},
          {"copy_gbps_all", c.copy_gbps_all},
          {"measured_at", c.measured_at},
          {"spread", c.spread},
          {"raised", c.raised}};
}

namespace {

template <class T>
void get(const nlohmann::json& j, const char* key, T& out) {
  if (!j.is_object() || !j.contains(key)) throw InputError(fmt::format("missing field '{}'", key));
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {  // 1e52 to int: undefined
    out = json_integer_as<T>(j.at(key), fmt::format("field '{}'", key));
    return;
  }
  try {
    out = j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(fmt::format("field '{}' has the wrong type ({})", key, j.at(key).type_name()));
  }
}

void positive(const char* key, double v) {
  if (!(v > 0)) throw InputError(fmt::format("field '{}' must be positive (got {})", key, v));
}

}  // namespace

HostCeilings ceilings_from_json(const nlohmann::json& j) {
  HostCeilings c;
  get(j, "cpu_model", c.cpu_model);
  get(j, "cores", c.cores);
  nlohmann::json isa;
  get(j, "isa", isa);
  get(isa, "avx2", c.isa.avx2), get(isa, "fma", c.isa.fma), get(isa, "f16c", c.isa.f16c);
  get(isa, "avx512f", c.isa.avx512f), get(isa, "avx512bw", c.isa.avx512bw);
  get(isa, "avx512_bf16", c.isa.avx512_bf16), get(isa, "amx", c.isa.amx);
  get(j, "l1d_bytes", c.l1d_bytes), get(j, "l2_bytes", c.l2_bytes), get(j, "l3_bytes", c.l3_bytes);
  get(j, "fma_isa", c.fma_isa);
  get(j, "fma_gflops_1t", c.fma_gflops_1t), get(j, "fma_gflops_all", c.fma_gflops_all);
  get(j, "bw_array_bytes", c.bw_array_bytes);
  get(j, "bf16_gflops_1t", c.bf16_gflops_1t), get(j, "bf16_gflops_all", c.bf16_gflops_all);
  get(j, "read_gbps_1t", c.read_gbps_1t), get(j, "read_gbps_all", c.read_gbps_all);
  get(j, "copy_gbps_1t", c.copy_gbps_1t), get(j, "copy_gbps_all", c.copy_gbps_all);
  get(j, "measured_at", c.measured_at);
  // Added later than the rest: a cache or results file without them is still read.
  if (j.contains("read_kernel")) get(j, "read_kernel", c.read_kernel);
  if (j.contains("cold_bytes")) get(j, "cold_bytes", c.cold_bytes);
  if (j.contains("spread")) get(j, "spread", c.spread);
  if (j.contains("raised")) get(j, "raised", c.raised);
  if (c.cores < 1)
    throw InputError(fmt::format("field 'cores' must be positive (got {})", c.cores));
  positive("fma_gflops_1t", c.fma_gflops_1t), positive("fma_gflops_all", c.fma_gflops_all);
  positive("read_gbps_1t", c.read_gbps_1t), positive("read_gbps_all", c.read_gbps_all);
  positive("copy_gbps_1t", c.copy_gbps_1t), positive("copy_gbps_all", c.copy_gbps_all);
  return c;
}

std::filesystem::path cache_path() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "attain" / "probe.json";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::filesystem::path(h) / ".cache" / "attain" / "probe.json";
  return {};
}

std::string cache_key(const std::string& cpu_model, int cores) {
  return fmt::format("{} | {} cpus", cpu_model, cores);
}

namespace {

constexpr const char* kCacheSchema = "attain.probe/1";

void warn(const std::string& msg) {
  std::fprintf(stderr, "attain: warning: %s\n", msg.c_str());
}

// The cache file's entries; empty (with a warning) when it is unreadable or corrupt.
nlohmann::json read_entries(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nlohmann::json::object();
  try {
    auto j = nlohmann::json::parse(read_input_file(path, kMaxConfigBytes, "probe cache"));
    if (!j.is_object() || j.value("schema", "") != kCacheSchema || !j.contains("entries") ||
        !j["entries"].is_object())
      throw InputError(fmt::format("not an {} file", kCacheSchema));
    return j["entries"];
  } catch (const std::exception& e) {
    warn(fmt::format("probe cache {} is corrupt ({}); re-measuring", path.string(), e.what()));
    return nlohmann::json::object();
  }
}

void write_entries(const std::filesystem::path& path, const nlohmann::json& entries) {
  try {
    write_file_atomic(
        path, nlohmann::json{{"schema", kCacheSchema}, {"entries", entries}}.dump(2) + "\n");
  } catch (const InputError& e) {
    warn(fmt::format("probe cache not saved: {}", e.what()));
  }
}

}  // namespace

namespace {

// This machine's entry in `entries`; nullopt (with a warning when it is damaged) when absent.
std::optional<HostCeilings> cached_entry(const nlohmann::json& entries, const std::string& key,
                                         const std::filesystem::path& path) {
  if (!entries.contains(key)) return std::nullopt;
  try {
    return ceilings_from_json(entries[key]);
  } catch (const InputError& e) {
    warn(fmt::format("probe cache {} entry '{}' is corrupt ({}); re-measuring", path.string(), key,
                     e.what()));
    return std::nullopt;
  }
}

}  // namespace

HostCeilings probe_cached(bool refresh, const std::function<HostCeilings()>& measure) {
  const std::string key = cache_key(cpu_model_name(), available_cpus());
  const auto path = cache_path();
  nlohmann::json entries = path.empty() ? nlohmann::json::object() : read_entries(path);
  const std::optional<HostCeilings> old = cached_entry(entries, key, path);
  if (!refresh && old) return *old;
  HostCeilings c = measure();
  // A new probe keeps the higher of each figure: a busy minute's probe cannot lower a ceiling
  // the machine has been measured to reach (forget_cached() starts over).
  if (old)
    for (const CeilingFigure& f : kCeilingFigures)
      if ((*old).*f.value > c.*f.value && c.*f.value > 0) {
        const auto note = old->raised.find(f.name);
        c.*f.value = (*old).*f.value;
        c.raised[f.name] = note != old->raised.end()
                               ? note->second
                               : fmt::format("{} by an earlier probe", old->measured_at);
      }
  if (!path.empty()) {
    entries[key] = to_json(c);
    write_entries(path, entries);
  }
  return c;
}

std::optional<HostCeilings> raise_cached(const std::function<bool(HostCeilings&)>& raise) {
  const auto path = cache_path();
  if (path.empty()) return std::nullopt;
  const std::string key = cache_key(cpu_model_name(), available_cpus());
  nlohmann::json entries = read_entries(path);
  std::optional<HostCeilings> c = cached_entry(entries, key, path);
  if (!c) return std::nullopt;
  if (raise(*c)) {
    entries[key] = to_json(*c);
    write_entries(path, entries);
  }
  return c;
}

bool forget_cached() {
  const auto path = cache_path();
  if (path.empty()) return false;
  nlohmann::json entries = read_entries(path);
  if (entries.erase(cache_key(cpu_model_name(), available_cpus())) == 0) return false;
  write_entries(path, entries);
  return true;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace probe

bool raise_ceiling(HostCeilings& c, std::string_view name, double value, const std::string& by) {
  for (const CeilingFigure& f : kCeilingFigures) {
    if (name != f.name) continue;
    if (!(c.*f.value > 0) || !(value > c.*f.value) || !std::isfinite(value)) return false;
    c.*f.value = value;
    c.raised[f.name] = fmt::format("{} by {}", now_iso(), by);
    return true;
  }
  throw std::invalid_argument(fmt::format("raise_ceiling: no figure '{}'", name));
}

HostCeilings probe_host(bool refresh, bool progress) {
  return probe::probe_cached(refresh,
                             [&] { return probe::measure_host(probe::ProbeConfig{}, progress); });
}

}  // namespace attain
