// The attain-cuda backend: attain's own GPU kernels (src/kernels/cuda). Decode GEMM (bf16, and
// fp8 e4m3 with 128x128 weight / 1x128 activation block scales) for m <= 128, also batched and
// in the MoE masked layout; MLA decode over the paged latent cache (bf16 and the 656-byte fp8
// rows) with split-KV and a combine kernel.
#ifdef ATTAIN_HAVE_CUDA

#include <fmt/format.h>

#include "attain/verify.hpp"
#include "backends/backends.hpp"
#include "backends/cuda_kernel.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/plan.hpp"

namespace attain::backends {

namespace {

constexpr std::int64_t kMaxDecodeRows = 128;

class DecodeGemmKernel final : public CudaKernel {
 public:
  DecodeGemmKernel(TensorSet& set, const RunOptions& opt) : CudaKernel(set, opt) {
    const Op& op = set.op();
    a_.m = op.kind == OpKind::grouped_gemm ? op.max_group_rows() : op.m;
    a_.n = op.n, a_.k = op.k;
    a_.batches = op.kind == OpKind::batched_gemm   ? op.batch
                 : op.kind == OpKind::grouped_gemm ? op.groups
                                                   : 1;
    a_.fp8 = op.dtype == DType::fp8;
    a_.a = dev_["a"], a_.w = dev_["w"], a_.c = dev_["c"];
    if (a_.fp8) a_.a_scale = dev_.as<float>("a_scale"), a_.w_scale = dev_.as<float>("w_scale");
    if (op.kind == OpKind::grouped_gemm) a_.counts = dev_.as<std::int32_t>("counts");
    plan_ = cuda::plan_decode_gemm(a_.m, a_.n, a_.k, a_.batches, a_.fp8 ? 1 : 2,
                                   cuda::device_info().sm_count);
    if (plan_.workspace_floats > 0) {
      workspace_.reserve(sizeof(float) * static_cast<std::size_t>(plan_.workspace_floats));
      a_.workspace = workspace_.as<float>();
    }
  }

 private:
  void launch(cudaStream_t s) override { cuda::launch_decode_gemm(a_, plan_, s); }

  cuda::DecodeGemmArgs a_;
  cuda::DecodeGemmPlan plan_;
  cuda::DeviceBuffer workspace_;
};

class MlaKernel final : public CudaKernel {
 public:
  MlaKernel(TensorSet& set, const RunOptions& opt) : CudaKernel(set, opt) {
    const Op& op = set.op();
    a_.q = dev_["q"], a_.kcache = dev_["kcache"];
    a_.block_table = dev_.as<std::int32_t>("block_table");
    a_.seqlens = dev_.as<std::int32_t>("seqlens");
    a_.o = dev_["o"], a_.lse = dev_.as<float>("lse");
    a_.b = op.b, a_.s_q = op.s_q, a_.h = op.h;
    a_.max_blocks = set["block_table"].desc.shape[1];
    a_.fp8 = op.dtype == DType::fp8;
    a_.softmax_scale = static_cast<float>(kMlaSoftmaxScale);
    per_request_.reserve(sizeof(std::int32_t) * 2 * static_cast<std::size_t>(op.b));
  }

 private:
  // The split-KV schedule from the host's seqlens, as FlashMLA's get_mla_metadata runs once
  // per decode step ahead of the layers' attention kernels: planned and uploaded untimed.
  void prepare_run(cudaStream_t s) override {
    const auto* sl = set_["seqlens"].as<std::int32_t>();
    plan_ = cuda::plan_mla(sl, a_.b, a_.s_q * a_.h, cuda::device_info().sm_count);
    units_.reserve(sizeof(cuda::MlaUnit) * plan_.units.size());
    units_.upload(plan_.units.data(), sizeof(cuda::MlaUnit) * plan_.units.size(), s);
    host_req_.assign(plan_.num_splits.begin(), plan_.num_splits.end());
    host_req_.insert(host_req_.end(), plan_.split_begin.begin(), plan_.split_begin.end());
    per_request_.upload(host_req_.data(), sizeof(std::int32_t) * host_req_.size(), s);
    const auto rows = static_cast<std::size_t>(a_.s_q * a_.h);
    const auto parts = static_cast<std::size_t>(plan_.num_partials);
    part_o_.reserve(sizeof(float) * parts * rows * kMlaDv);
    part_lse_.reserve(sizeof(float) * parts * rows);
    a_.units = units_.as<cuda::MlaUnit>();
    a_.num_splits = per_request_.as<std::int32_t>();
    a_.split_begin = a_.num_splits + a_.b;
    a_.part_o = part_o_.as<float>(), a_.part_lse = part_lse_.as<float>();
    a_.num_units = static_cast<std::int64_t>(plan_.units.size());
    a_.row_tiles = plan_.row_tiles;
    a_.any_split = plan_.num_partials > 0;
  }
  void launch(cudaStream_t s) override { cuda::launch_mla_decode(a_, s); }

  cuda::MlaArgs a_;
  cuda::MlaPlan plan_;
  std::vector<std::int32_t> host_req_;
  cuda::DeviceBuffer units_, per_request_, part_o_, part_lse_;
};

class AttainCudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "attain-cuda"; }
  std::string version() const override {
    return fmt::format("attain {} CUDA kernels on {}", ATTAIN_VERSION,
                       cuda::describe(cuda::device_info()));
  }
  Support supports(const Op& op) const override {
    if (op.kind == OpKind::mla_decode) {
      if (op.dtype != DType::bf16 && op.dtype != DType::fp8)
        return Support::no("mla_decode: bf16 and fp8 caches only");
      return Support::yes();
    }
    if (op.dtype != DType::bf16 && op.dtype != DType::fp8)
      return Support::no("GEMMs in bf16 and fp8 only");
    if (op.kind == OpKind::grouped_gemm && op.layout == GroupedLayout::contiguous)
      return Support::no("grouped GEMM: masked layout only");
    const std::int64_t rows = op.kind == OpKind::grouped_gemm ? op.max_group_rows() : op.m;
    if (rows > kMaxDecodeRows)
      return Support::no(
          fmt::format("decode GEMM is for m <= {} (this op has {} rows per matrix; use cublaslt)",
                      kMaxDecodeRows, rows));
    return Support::yes();
  }
  std::unique_ptr<Kernel> prepare(TensorSet& set, const RunOptions& opt) override {
    const Support s = supports(set.op());
    if (!s.ok) throw InputError("attain-cuda backend: " + s.reason);
    if (set.op().kind == OpKind::mla_decode) return std::make_unique<MlaKernel>(set, opt);
    return std::make_unique<DecodeGemmKernel>(set, opt);
  }
};

}  // namespace

std::unique_ptr<Backend> make_attain_cuda(std::string* why) {
  if (auto r = cuda_unavailable_reason(); !r.empty()) {
    *why = r;
    return nullptr;
  }
  return std::make_unique<AttainCudaBackend>();
}

}  // namespace attain::backends

#endif  // ATTAIN_HAVE_CUDA
