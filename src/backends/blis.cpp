// BLIS through its typed API (bli_sgemm), loaded at run time: BLIS also exports cblas_sgemm
// and sgemm_, which would clash with OpenBLAS's if both were linked (see dynlib.hpp).
#include <blis.h>
#include <fmt/format.h>

#include <atomic>

#include "backends/backends.hpp"
#include "backends/dynlib.hpp"
#include "backends/gemm_loops.hpp"

namespace attain::backends {

namespace {

// BLIS's thread count is process-wide; remember what we last set to skip redundant calls.
std::atomic<int> g_blis_threads{0};

struct BlisApi {
  decltype(&bli_sgemm) sgemm = nullptr;
  decltype(&bli_info_get_version_str) version_str = nullptr;
  decltype(&bli_thread_set_num_threads) set_num_threads = nullptr;
  std::string path;

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
        "BLIS {} ({}, {}; threads via bli_thread_set_num_threads, BLIS's own "
        "jc/ic split)",
        api_.version_str(), api_.path, DynLib::isolation());
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
      !lib->resolve(api.set_num_threads, "bli_thread_set_num_threads", &err)) {
    if (why) *why = err;
    return nullptr;
  }
  return std::make_unique<BlisBackend>(std::move(api));
}

}  // namespace attain::backends
