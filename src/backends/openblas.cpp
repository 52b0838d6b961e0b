// OpenBLAS through cblas_sgemm, loaded at run time (see dynlib.hpp for why it is not linked).
#include <fmt/format.h>

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
  return std::make_unique<OpenBlasBackend>(std::move(api));
}

}  // namespace attain::backends
