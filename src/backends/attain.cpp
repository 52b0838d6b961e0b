// The attain backend: the harness's ops mapped onto attain::gemm (src/kernels/cpu/gemm/).
#include <fmt/format.h>

#include "attain/gemm.hpp"
#include "attain/gemm_plan.hpp"
#include "attain/mla.hpp"
#include "attain/tune.hpp"
#include "backends/backends.hpp"
#include "core/util.hpp"

namespace attain::backends {

namespace {

// Binds pointers and shapes only: the inputs are neither read nor packed here.
class AttainKernel final : public Kernel {
 public:
  explicit AttainKernel(gemm::Call c) : c_(c) {}
  void run() override { gemm::run(c_); }

 private:
  gemm::Call c_;
};

class AttainBackend final : public Backend {
 public:
  std::string_view name() const override { return name_; }
  std::string_view interleave_group() const override { return "attain"; }
  bool set_variant(std::string_view v, std::string* why) override {
    if (v != "default" && v != "auto") {
      *why = "attain variants: default, auto (the schedule)";
      return false;
    }
    schedule_ = std::string(v);
    name_ = "attain:" + schedule_;
    return true;
  }
  std::string version() const override {
    // The table row carries the blocks and path crossovers: results from other CPUs (or a row
    // forced by ATTAIN_GEMM_TABLE) say which ran.
    const gemm::Isa isa = gemm::detected_isa();
    return fmt::format("attain {} ({} kernels, {} table)", ATTAIN_VERSION, gemm::isa_name(isa),
                       gemm::family_of(isa).row);
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
    gemm::Call c = gemm_call(set, opt);
    const std::string& sched = schedule_.empty() ? opt.schedule : schedule_;
    if (sched == "auto") {
      c.p.schedule =
          tune::Scheduler::instance().choose(c, tune::host_machine(c.p.threads)).schedule;
    } else if (sched != "default") {
      throw InputError("attain backend: schedule must be default or auto, not '" + sched + "'");
    }
    return std::make_unique<AttainKernel>(c);
  }

 private:
  std::string name_ = "attain";
  std::string schedule_;  // from the variant ("attain:auto"); empty: RunOptions decides
};

}  // namespace

gemm::Call gemm_shape(const Op& op, const RunOptions& opt) {
  gemm::Call c;
  gemm::Params& p = c.p;
  p.a_type = p.b_type = op.dtype;
  p.c_type = op.out_dtype();
  p.trans_a = gemm::Trans::N;
  p.trans_b = gemm::Trans::T;
  p.m = op.m;
  p.n = op.n;
  p.k = op.k;
  p.threads = std::max(1, opt.threads);
  p.stages = opt.stages;
  switch (op.kind) {
    case OpKind::gemm:
      break;
    case OpKind::batched_gemm: {
      const std::int64_t kb = ceil_div(op.k, kFp8Block);
      c.form = gemm::Form::batched;
      c.items = op.batch;
      c.strides = {op.m * op.k, op.n * op.k, op.m * op.n, op.m * kb,
                   ceil_div(op.n, kFp8Block) * kb};
      break;
    }
    case OpKind::grouped_gemm:
      c.items = op.groups;
      if (op.layout == GroupedLayout::contiguous) {
        c.form = gemm::Form::grouped_contiguous;
        p.m = op.total_rows();
      } else {
        c.form = gemm::Form::grouped_masked;
        p.m = op.max_group_rows();
      }
      break;
    case OpKind::mla_decode:
      throw std::logic_error("gemm_shape: mla_decode is not a GEMM");
  }
  return c;
}

gemm::Call gemm_call(TensorSet& set, const RunOptions& opt) {
  const Op& op = set.op();
  gemm::Call c = gemm_shape(op, opt);
  c.p.a = set["a"].data;
  c.p.b = set["w"].data;
  c.p.c = set["c"].data;
  if (op.dtype == DType::fp8) {
    c.p.a_scale = set["a_scale"].as<float>();
    c.p.b_scale = set["w_scale"].as<float>();
  }
  if (c.form == gemm::Form::grouped_contiguous) c.index = set["offsets"].as<std::int32_t>();
  if (c.form == gemm::Form::grouped_masked) c.index = set["counts"].as<std::int32_t>();
  return c;
}

std::unique_ptr<Backend> make_attain(std::string*) {
  return std::make_unique<AttainBackend>();
}

}  // namespace attain::backends
