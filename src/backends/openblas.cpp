// OpenBLAS through cblas_sgemm, loaded at run time (see dynlib.hpp for why it is not linked).
#include <fmt/format.h>

#include "attain/device.hpp"
#include "backends/backends.hpp"
#include "backends/dynlib.hpp"
#include "backends/gemm_loops.hpp"

namespace attain::backends {

namespace {

// CBLAS enum values (cblas.h); the header is not included so that nothing binds to a
// linked cblas_sgemm by accident.
constexpr int kCblasRowMajor = 101, kCblasNoTrans = 111, kCblasTrans = 112;

struct OpenBlasApi {
  void (*sgemm)(int order, int transa, int transb, int m, int n, int k, float alpha, const float* a,
                int lda, const float* b, int ldb, float beta, float* c, int ldc) = nullptr;
  void (*set_num_threads)(int) = nullptr;
  int (*get_num_threads)() = nullptr;
  char* (*get_config)() = nullptr;
  std::string path;

  void use_threads(int t) const {
    if (get_num_threads() != t) set_num_threads(t);
  }
};

class OpenBlasKernel final : public Kernel {
 public:
  OpenBlasKernel(const OpenBlasApi& api, TensorSet& set, int threads)
      : api_(api), plan_(set), threads_(threads) {}
  void run() override {
    api_.use_threads(threads_);
    const int n = static_cast<int>(plan_.op->n), k = static_cast<int>(plan_.op->k);
    plan_.for_each([&](std::int64_t m, const float* a, const float* w, float* c) {
      api_.sgemm(kCblasRowMajor, kCblasNoTrans, kCblasTrans, static_cast<int>(m), n, k, 1.0f, a, k,
                 w, k, 0.0f, c, n);
    });
  }

 private:
  OpenBlasApi api_;
  GemmPlan plan_;
  int threads_;
};

class OpenBlasBackend final : public Backend {
 public:
  explicit OpenBlasBackend(OpenBlasApi api) : api_(std::move(api)) {}
  std::string_view name() const override { return "openblas"; }
  std::string version() const override {
    return fmt::format("{} ({}, {})", api_.get_config(), api_.path, DynLib::isolation());
  }
  Support supports(const Op& op) const override { return fp32_gemm_support(op, "OpenBLAS"); }
  std::unique_ptr<Kernel> prepare(TensorSet& set, const RunOptions& opt) override {
    const Support s = supports(set.op());
    if (!s.ok) throw std::invalid_argument("openblas: " + s.reason);
    api_.use_threads(std::max(1, opt.threads));
    return std::make_unique<OpenBlasKernel>(api_, set, std::max(1, opt.threads));
  }

 private:
  OpenBlasApi api_;
};

// OpenBLAS's DYNAMIC_ARCH picks its kernels from the CPU model, and a release older than the
// CPU falls back to generic SSE kernels (0.3.21 runs "Prescott" on an Emerald Rapids Xeon, at
// a quarter of its Cooperlake kernels' speed there). Its figures are then not the library's
// best: said once, with the setting that gives it its vector kernels.
void warn_if_old_kernels(const std::string& config) {
  static bool said = false;
  const CpuFeatures f = detected_cpu_features();
  if (said || !f.avx2) return;
  for (const char* core : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom",
                           "Sandybridge", "Katmai", "Coppermine", "Northwood"})
    if (config.find(fmt::format(" {} ", core)) != std::string::npos) {
      said = true;
      fmt::print(stderr,
                 "attain: warning: OpenBLAS runs its {} kernels on this {} CPU (it does not know "
                 "the model); its figures are not its best. OPENBLAS_CORETYPE={} gives it its "
                 "vector kernels.\n",
                 core, f.avx512f ? "AVX-512" : "AVX2",
                 f.avx512_bf16 ? "Cooperlake"
                 : f.avx512f   ? "SkylakeX"
                               : "Haswell");
      return;
    }
}

}  // namespace

std::unique_ptr<Backend> make_openblas(std::string* why) {
  std::string err;
  const DynLib* lib = DynLib::open({"libopenblas.so.0", "libopenblas.so"}, &err);
  if (!lib) {
    if (why) *why = "OpenBLAS is not installed (" + err + ")";
    return nullptr;
  }
  OpenBlasApi api;
  api.path = lib->path();
  if (!lib->resolve(api.sgemm, "cblas_sgemm", &err) ||
      !lib->resolve(api.set_num_threads, "openblas_set_num_threads", &err) ||
      !lib->resolve(api.get_num_threads, "openblas_get_num_threads", &err) ||
      !lib->resolve(api.get_config, "openblas_get_config", &err)) {
    if (why) *why = err;
    return nullptr;
  }
  warn_if_old_kernels(api.get_config());
  return std::make_unique<OpenBlasBackend>(std::move(api));
}

}  // namespace attain::backends
