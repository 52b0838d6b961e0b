// The cublaslt backend: the vendor reference on NVIDIA GPUs. GEMM, batched GEMM and the MoE
// masked layout (as a strided batch over max_m rows: cuBLASLt also multiplies the padding
// rows, whose outputs nobody reads) in fp32, fp16 and bf16; fp8 e4m3 GEMM with DeepSeek block
// scales through cuBLASLt's 1x128 / 128x128 scale modes (Hopper, cuBLAS >= 12.9).
#ifdef ATTAIN_HAVE_CUDA

#include <fmt/format.h>

#include <optional>

#include "backends/backends.hpp"
#include "backends/cuda_kernel.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/lt_gemm.hpp"

namespace attain::backends {

namespace {

cuda::LtGemmShape lt_shape(const Op& op) {
  cuda::LtGemmShape s;
  s.dtype = op.dtype;
  s.n = op.n, s.k = op.k;
  switch (op.kind) {
    case OpKind::gemm:
      s.m = op.m;
      break;
    case OpKind::batched_gemm:
      s.m = op.m, s.batch = op.batch;
      break;
    case OpKind::grouped_gemm:
      s.m = op.max_group_rows(), s.batch = op.groups;
      break;
    case OpKind::mla_decode:
      break;
  }
  return s;
}

class LtKernel final : public CudaKernel {
 public:
  LtKernel(TensorSet& set, const RunOptions& opt)
      : CudaKernel(set, opt), gemm_(lt_shape(set.op())) {
    const auto& sh = gemm_.shape();
    if (sh.dtype == DType::fp8) {
      const std::int64_t kb = (sh.k + 127) / 128, nb = (sh.n + 127) / 128;
      a_scale_.reserve(sizeof(float) * static_cast<std::size_t>(kb * sh.a_scale_ld(sh.m)));
      if (sh.w_scale_ld(sh.k) != kb)
        w_scale_.reserve(sizeof(float) * static_cast<std::size_t>(nb * sh.w_scale_ld(sh.k)));
    }
  }

 private:
  void launch(cudaStream_t s) override {
    const auto& sh = gemm_.shape();
    const float* as = nullptr;
    const float* ws = nullptr;
    if (sh.dtype == DType::fp8) {
      // The harness stores scales row-major (k blocks fastest); cuBLASLt wants the
      // activations' scales outer-dimension-major and the weights' k blocks padded to 4.
      // Re-laid out on every run, inside the timed region: a library call pays for it too.
      const std::int64_t kb = (sh.k + 127) / 128, nb = (sh.n + 127) / 128;
      cuda::launch_transpose_scales(dev_.as<float>("a_scale"), sh.m, kb, a_scale_.as<float>(),
                                    sh.a_scale_ld(sh.m), s);
      as = a_scale_.as<float>();
      ws = dev_.as<float>("w_scale");
      if (w_scale_.get()) {
        cuda::launch_pad_scales(ws, nb, kb, w_scale_.as<float>(), sh.w_scale_ld(sh.k), s);
        ws = w_scale_.as<float>();
      }
    }
    gemm_.run(dev_["a"], dev_["w"], dev_["c"], as, ws, s);
  }

  cuda::LtGemm gemm_;
  cuda::DeviceBuffer a_scale_, w_scale_;
};

class CublasLtBackend final : public Backend {
 public:
  std::string_view name() const override { return "cublaslt"; }
  std::string version() const override {
    return fmt::format("{} on {}", cuda::cublaslt_version(), cuda::describe(cuda::device_info()));
  }
  Support supports(const Op& op) const override {
    if (op.kind == OpKind::mla_decode) return Support::no("cuBLASLt has no MLA decode");
    if (op.kind == OpKind::grouped_gemm && op.layout == GroupedLayout::contiguous)
      return Support::no("contiguous grouped layout not mapped onto cuBLASLt (masked is)");
    if (op.dtype == DType::fp8) {
      if (op.kind != OpKind::gemm)
        return Support::no("fp8 with block scales: plain gemm only (no batched scale layouts)");
      if (op.k % 16 != 0) return Support::no("cuBLASLt fp8 needs k % 16 == 0");
    }
    return Support::yes();
  }
  std::unique_ptr<Kernel> prepare(TensorSet& set, const RunOptions& opt) override {
    const Support s = supports(set.op());
    if (!s.ok) throw InputError("cublaslt backend: " + s.reason);
    return std::make_unique<LtKernel>(set, opt);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cublaslt(std::string* why) {
  if (auto r = cuda_unavailable_reason(); !r.empty()) {
    *why = r;
    return nullptr;
  }
  return std::make_unique<CublasLtBackend>();
}

}  // namespace attain::backends

#endif  // ATTAIN_HAVE_CUDA
