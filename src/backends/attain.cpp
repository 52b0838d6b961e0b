// The attain backend: the harness's ops mapped onto attain::gemm (src/kernels/cpu/gemm/).
#include <fmt/format.h>

#include "attain/gemm.hpp"
#include "attain/mla.hpp"
#include "backends/backends.hpp"

namespace attain::backends {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

class AttainKernel final : public Kernel {
 public:
  // Binds pointers and shapes only: the inputs are neither read nor packed here.
  AttainKernel(TensorSet& set, const RunOptions& opt) : set_(set) {
    const Op& op = set.op();
    const bool fp8 = op.dtype == DType::fp8;
    p_.a = set["a"].data;
    p_.b = set["w"].data;
    p_.c = set["c"].data;
    p_.a_type = p_.b_type = op.dtype;
    p_.c_type = op.out_dtype();
    p_.trans_a = gemm::Trans::N;
    p_.trans_b = gemm::Trans::T;
    p_.n = op.n;
    p_.k = op.k;
    p_.m = op.m;
    if (fp8) {
      p_.a_scale = set["a_scale"].as<float>();
      p_.b_scale = set["w_scale"].as<float>();
    }
    p_.threads = std::max(1, opt.threads);
    p_.stages = opt.stages;
    if (op.kind == OpKind::grouped_gemm) {
      if (op.layout == GroupedLayout::contiguous) {
        p_.m = op.total_rows();
        index_ = set["offsets"].as<std::int32_t>();
      } else {
        p_.m = op.max_group_rows();
        index_ = set["counts"].as<std::int32_t>();
      }
    }
  }

  void run() override {
    const Op& op = set_.op();
    switch (op.kind) {
      case OpKind::gemm:
        return gemm::gemm(p_);
      case OpKind::batched_gemm: {
        const std::int64_t kb = ceil_div(op.k, kFp8Block);
        const gemm::BatchStrides st{op.m * op.k, op.n * op.k, op.m * op.n, op.m * kb,
                                    ceil_div(op.n, kFp8Block) * kb};
        return gemm::batched_gemm(p_, op.batch, st);
      }
      case OpKind::grouped_gemm:
        if (op.layout == GroupedLayout::contiguous)
          return gemm::grouped_gemm_contiguous(p_, op.groups, index_);
        return gemm::grouped_gemm_masked(p_, op.groups, index_);
      case OpKind::mla_decode:
        break;
    }
    throw std::logic_error("attain backend: op kind not supported");
  }

 private:
  TensorSet& set_;
  gemm::Params p_;
  const std::int32_t* index_ = nullptr;
};

class AttainBackend final : public Backend {
 public:
  std::string_view name() const override { return "attain"; }
  std::string version() const override {
    return fmt::format("attain {} ({} kernels)", ATTAIN_VERSION,
                       gemm::isa_name(gemm::detected_isa()));
  }
  Support supports(const Op& op) const override {
    if (!is_op_dtype(op.dtype)) return Support::no("dtype not supported");
    if (op.kind == OpKind::mla_decode && op.dtype == DType::f16)
      return Support::no("mla_decode has bf16, fp8 and fp32 caches");
    return Support::yes();
  }
  std::unique_ptr<Kernel> prepare(TensorSet& set, const RunOptions& opt) override {
    const Support s = supports(set.op());
    if (!s.ok) throw InputError("attain backend: " + s.reason);
    if (opt.stages < 1 || opt.stages > 8) throw InputError("attain backend: --stages must be 1..8");
    // MLA decode runs the FlashMLA-style kernel (src/kernels/cpu/attention), GEMMs the engine.
    if (set.op().kind == OpKind::mla_decode) return make_mla_kernel(set, opt);
    return std::make_unique<AttainKernel>(set, opt);
  }
};

}  // namespace

std::unique_ptr<Backend> make_attain(std::string*) {
  return std::make_unique<AttainBackend>();
}

}  // namespace attain::backends
