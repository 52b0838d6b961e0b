// The reference backend: fp64 loops over the stored inputs, rounded once to the output dtype.
#include <cmath>

#include "attain/verify.hpp"
#include "backends/backends.hpp"

namespace attain::backends {

namespace {

void store_output(const Tensor& t, const std::vector<double>& v) {
  for (std::int64_t i = 0, n = t.numel(); i < n; ++i) {
    const auto x = static_cast<float>(v[static_cast<std::size_t>(i)]);
    switch (t.desc.dtype) {
      case DType::f32:
        t.as<float>()[i] = x;
        break;
      case DType::bf16:
        t.as<std::uint16_t>()[i] = f32_to_bf16(x);
        break;
      case DType::f16:
        t.as<std::uint16_t>()[i] = f32_to_f16(x);
        break;
      default:
        break;
    }
  }
}

class ReferenceKernel final : public Kernel {
 public:
  explicit ReferenceKernel(TensorSet& set) : set_(set) {}
  void run() override {
    const auto outs = reference_outputs(set_);
    std::size_t i = 0;
    for (auto& t : set_.all())
      if (t.desc.output) store_output(t, outs[i++]);
  }

 private:
  TensorSet& set_;
};

class ReferenceBackend final : public Backend {
 public:
  std::string_view name() const override { return "reference"; }
  std::string version() const override { return "attain reference (fp64 loops)"; }
  Support supports(const Op& op) const override {
    // fp64 loops run at well under 1 GFLOP/s: refuse what would take minutes.
    if (op.flops() > 2e9)
      return Support::no("op too large for the fp64 reference loops (> 2 GFLOP)");
    return Support::yes();
  }
  std::unique_ptr<Kernel> prepare(TensorSet& set, const RunOptions&) override {
    return std::make_unique<ReferenceKernel>(set);
  }
};

}  // namespace

std::unique_ptr<Backend> make_reference(std::string*) {
  return std::make_unique<ReferenceBackend>();
}

}  // namespace attain::backends
