// BLIS through its typed API (bli_sgemm), loaded at run time: BLIS also exports cblas_sgemm
// and sgemm_, which would clash with OpenBLAS's if both were linked (see dynlib.hpp).
#include <blis.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "attain/cpu_features.hpp"
#include "backends/backends.hpp"
#include "backends/dynlib.hpp"
#include "backends/gemm_loops.hpp"

namespace attain::backends {

namespace {

// BLIS's thread count is process-wide; remember what we last set to skip redundant calls.
std::atomic<int> g_blis_threads{0};

// BLIS 0.9 picks its sub-configuration (kernels, block sizes) from CPUID and knows AMD CPUs
// up to family 0x19 (Zen 3/4): on a newer family (Zen 5 is 0x1a) it falls back to 'generic',
// portable C kernels at a fraction of the machine's speed. Unless the user has chosen one
// (BLIS_ARCH_TYPE), we request the configuration whose kernels match the ISA, before BLIS
// initializes: 'skx' (AVX-512, two FMA units, as later BLIS releases use on Zen 4/5) where
// AVX-512 F/BW/DQ/VL are present, else 'zen3' (AVX2 + FMA). Returns why, or "" if untouched.
std::string choose_blis_arch(const char* version, decltype(&bli_arch_string) arch_string) {
  if (const char* user = std::getenv("BLIS_ARCH_TYPE"))
    return fmt::format("BLIS_ARCH_TYPE={} set by the user", user);
  const CpuFeatures& cpu = detected_cpu_features();  // the CPU BLIS sees, not ATTAIN_ISA's cap
  const bool avx2_fma = cpu.avx2 && cpu.fma;
  if (cpu.vendor == "AuthenticAMD" && cpu.family > 0x19 && avx2_fma &&
      std::strncmp(version, "0.", 2) == 0) {
    const bool avx512 = cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl;
    const char* want = avx512 ? "skx" : "zen3";
    // BLIS 0.9 reads BLIS_ARCH_TYPE as a number (its arch_t id); the names come from a table
    // that can be read before BLIS initializes.
    for (int id = 0; id < BLIS_NUM_ARCHS; ++id)
      if (std::strcmp(arch_string(static_cast<arch_t>(id)), want) == 0)
        setenv("BLIS_ARCH_TYPE", std::to_string(id).c_str(), 0);
    if (!std::getenv("BLIS_ARCH_TYPE")) return "";
    return fmt::format(
        "{} requested via BLIS_ARCH_TYPE: BLIS {} does not know AMD family {:#x} "
        "and would run its generic C kernels",
        want, version, cpu.family);
  }
  return "";
}

struct BlisApi {
  decltype(&bli_sgemm) sgemm = nullptr;
  decltype(&bli_info_get_version_str) version_str = nullptr;
  decltype(&bli_thread_set_num_threads) set_num_threads = nullptr;
  decltype(&bli_arch_query_id) arch_id = nullptr;
  decltype(&bli_arch_string) arch_string = nullptr;
  std::string path;
  std::string arch_note;  // why the sub-configuration is not BLIS's own choice, if it is not

  // Threading choice: BLIS's own factorization of `t` threads over its loops (it splits the
  // m and n dimensions by their sizes), via bli_thread_set_num_threads.
  void use_threads(int t) const {
    if (g_blis_threads.exchange(t) != t) set_num_threads(t);
  }
};

class BlisKernel final : public Kernel {
 public:
  BlisKernel(BlisApi api, TensorSet& set, int threads)
      : api_(std::move(api)), plan_(set), threads_(threads) {}
  void run() override {
    api_.use_threads(threads_);
    const dim_t n = plan_.op->n, k = plan_.op->k;
    float one = 1.0f, zero = 0.0f;
    plan_.for_each([&](std::int64_t m, const float* a, const float* w, float* c) {
      // A (m,k) row-major: rs = k, cs = 1. W (n,k) row-major, used transposed. C (m,n).
      api_.sgemm(BLIS_NO_TRANSPOSE, BLIS_TRANSPOSE, m, n, k, &one, const_cast<float*>(a), k, 1,
                 const_cast<float*>(w), k, 1, &zero, c, n, 1);
    });
  }

 private:
  BlisApi api_;
  GemmPlan plan_;
  int threads_;
};

class BlisBackend final : public Backend {
 public:
  explicit BlisBackend(BlisApi api) : api_(std::move(api)) {}
  std::string_view name() const override { return "blis"; }
  std::string version() const override {
    return fmt::format(
        "BLIS {} ({}, {}; sub-configuration {}{}; threads via bli_thread_set_num_threads, "
        "BLIS's own jc/ic split)",
        api_.version_str(), api_.path, DynLib::isolation(), api_.arch_string(api_.arch_id()),
        api_.arch_note.empty() ? "" : " (" + api_.arch_note + ")");
  }
  Support supports(const Op& op) const override { return fp32_gemm_support(op, "BLIS"); }
  std::unique_ptr<Kernel> prepare(TensorSet& set, const RunOptions& opt) override {
    const Support s = supports(set.op());
    if (!s.ok) throw std::invalid_argument("blis: " + s.reason);
    const int t = std::max(1, opt.threads);
    api_.use_threads(t);
    return std::make_unique<BlisKernel>(api_, set, t);
  }

 private:
  BlisApi api_;
};

}  // namespace

std::unique_ptr<Backend> make_blis(std::string* why) {
  std::string err;
  // Debian's libblis-dev installs the OpenMP variant; libblis.so.4 is whichever variant the
  // alternatives system selects.
  const DynLib* lib =
      DynLib::open({"/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4", "libblis.so.4"}, &err);
  if (!lib) {
    if (why) *why = "BLIS is not installed (" + err + ")";
    return nullptr;
  }
  BlisApi api;
  api.path = lib->path();
  if (!lib->resolve(api.sgemm, "bli_sgemm", &err) ||
      !lib->resolve(api.version_str, "bli_info_get_version_str", &err) ||
      !lib->resolve(api.set_num_threads, "bli_thread_set_num_threads", &err) ||
      !lib->resolve(api.arch_id, "bli_arch_query_id", &err) ||
      !lib->resolve(api.arch_string, "bli_arch_string", &err)) {
    if (why) *why = err;
    return nullptr;
  }
  // bli_info_get_version_str reads a constant and does not initialize BLIS; the arch choice
  // must be made before the first call that does (set_num_threads below).
  static const std::string arch_note = choose_blis_arch(api.version_str(), api.arch_string);
  api.arch_note = arch_note;
  api.use_threads(1);
  return std::make_unique<BlisBackend>(std::move(api));
}

}  // namespace attain::backends
