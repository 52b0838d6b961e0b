#include "kernels/cuda/lt_gemm.hpp"

#include <cublasLt.h>
#include <fmt/format.h>

#include <stdexcept>

#include "kernels/cuda/runtime.hpp"

namespace attain::cuda {

namespace {

void lt_check(cublasStatus_t st, const char* what, int line) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(fmt::format("{} failed at {}:{}: cuBLAS status {}", what, __FILE__, line,
                                       static_cast<int>(st)));
}
#define LT_CHECK(expr) lt_check((expr), #expr, __LINE__)

cublasLtHandle_t handle() {
  static cublasLtHandle_t h = [] {
    cublasLtHandle_t x = nullptr;
    LT_CHECK(cublasLtCreate(&x));
    return x;
  }();
  return h;
}

cudaDataType_t in_type(DType t) {
  switch (t) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::fp8:
      return CUDA_R_8F_E4M3;
    default:
      throw std::invalid_argument("cuBLASLt: unsupported dtype");
  }
}

cudaDataType_t out_type(DType t) {
  return t == DType::fp8 ? CUDA_R_16BF : in_type(t);
}

constexpr std::size_t kWorkspace = 32u << 20;

}  // namespace

struct LtGemm::Impl {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t algo{};
  DeviceBuffer workspace{kWorkspace};
  ~Impl() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

LtGemm::LtGemm(const LtGemmShape& sh) : impl_(std::make_unique<Impl>()), shape_(sh) {
  auto& d = *impl_;
  const bool fp8 = sh.dtype == DType::fp8;
  LT_CHECK(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  LT_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  LT_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (fp8 && sh.block_scales) {
    const std::int32_t wmode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    const std::int32_t amode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    LT_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &wmode,
                                            sizeof wmode));
    LT_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &amode,
                                            sizeof amode));
  }
  const auto it = in_type(sh.dtype), ot = out_type(sh.dtype);
  // Column-major: W is k x n (ld k), A is k x m (ld k), C is n x m (ld n).
  LT_CHECK(cublasLtMatrixLayoutCreate(&d.la, it, static_cast<std::uint64_t>(sh.k),
                                      static_cast<std::uint64_t>(sh.n), sh.k));
  LT_CHECK(cublasLtMatrixLayoutCreate(&d.lb, it, static_cast<std::uint64_t>(sh.k),
                                      static_cast<std::uint64_t>(sh.m), sh.k));
  LT_CHECK(cublasLtMatrixLayoutCreate(&d.lc, ot, static_cast<std::uint64_t>(sh.n),
                                      static_cast<std::uint64_t>(sh.m), sh.n));
  if (sh.batch > 1) {
    const auto count = static_cast<std::int32_t>(sh.batch);
    const std::int64_t sa = sh.n * sh.k, sb = sh.m * sh.k, sc = sh.m * sh.n;
    for (auto [l, stride] : {std::pair{d.la, sa}, std::pair{d.lb, sb}, std::pair{d.lc, sc}}) {
      LT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                sizeof count));
      LT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &stride, sizeof stride));
    }
  }
  LT_CHECK(cublasLtMatmulPreferenceCreate(&d.pref));
  const std::size_t ws = kWorkspace;
  LT_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &ws, sizeof ws));
  int found = 0;
  LT_CHECK(cublasLtMatmulAlgoGetHeuristic(handle(), d.op, d.la, d.lb, d.lc, d.lc, d.pref, 1,
                                          &d.algo, &found));
  if (found == 0)
    throw std::runtime_error(fmt::format("cuBLASLt has no algorithm for m={} n={} k={} {}{}", sh.m,
                                         sh.n, sh.k, dtype_name(sh.dtype),
                                         fp8 ? " (block scales)" : ""));
}

LtGemm::~LtGemm() = default;

void LtGemm::run(const void* a, const void* w, void* c, const float* a_scale, const float* w_scale,
                 cudaStream_t s) {
  auto& d = *impl_;
  if (shape_.dtype == DType::fp8) {
    // Our W is cuBLASLt's A, our A its B.
    LT_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale,
                                            sizeof w_scale));
    LT_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &a_scale,
                                            sizeof a_scale));
  }
  const float alpha = 1.0f, beta = 0.0f;
  LT_CHECK(cublasLtMatmul(handle(), d.op, &alpha, w, d.la, a, d.lb, &beta, c, d.lc, c, d.lc,
                          &d.algo.algo, d.workspace.get(), d.workspace.bytes(), s));
}

std::string cublaslt_version() {
  const std::size_t v = cublasLtGetVersion();
  return fmt::format("cuBLASLt {}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

}  // namespace attain::cuda
