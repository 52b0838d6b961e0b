// The expert MLP of a rank's local experts on the grouped GEMM of an attain backend:
// gate+up (one grouped GEMM, n = 2*inter), SiLU(gate)*up, down (grouped GEMM, n = hidden).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attain/backend.hpp"
#include "attain/moe.hpp"
#include "attain/tensor.hpp"
#include "attain/verify.hpp"
#include "core/util.hpp"

namespace attain::moe {

namespace {
Op grouped(const ExpertConfig& c, std::int64_t m, std::int64_t n, std::int64_t k) {
  Op op;
  op.kind = OpKind::grouped_gemm;
  op.dtype = c.dtype == Payload::fp8 ? DType::fp8 : DType::bf16;
  op.groups = c.local_experts;
  op.m = m;
  op.n = n;
  op.k = k;
  op.layout = c.layout;
  op.validate();
  return op;
}
}  // namespace

struct ExpertMLP::Impl {
  ExpertConfig cfg;
  std::int64_t m = 0;  // rows per group of the ops (contiguous: capacity / groups, rounded up)
  std::unique_ptr<Backend> backend;
  std::unique_ptr<TensorSet> gu, dn;
  std::unique_ptr<Kernel> k_gu, k_dn;

  // Valid rows of group g as [begin, end) in the row indexing of the tensors.
  std::pair<std::int64_t, std::int64_t> group(const TensorSet& s, int g) const {
    if (cfg.layout == GroupedLayout::contiguous) {
      const auto* off = s["offsets"].as<std::int32_t>();
      return {off[g], off[g + 1]};
    }
    return {g * m, g * m + s["counts"].as<std::int32_t>()[g]};
  }
};

ExpertMLP::ExpertMLP(const ExpertConfig& cfg) : impl_(std::make_unique<Impl>()) {
  auto& s = *impl_;
  s.cfg = cfg;
  if (cfg.local_experts <= 0 || cfg.hidden <= 0 || cfg.inter <= 0 || cfg.capacity <= 0)
    throw InputError(
        fmt::format("expert MLP: experts {}, hidden {}, inter {}, capacity {} must be positive",
                    cfg.local_experts, cfg.hidden, cfg.inter, cfg.capacity));
  s.m = cfg.layout == GroupedLayout::contiguous
            ? (cfg.capacity + cfg.local_experts - 1) / cfg.local_experts
            : cfg.capacity;
  const Op gu = grouped(cfg, s.m, 2 * cfg.inter, cfg.hidden);
  const Op dn = grouped(cfg, s.m, cfg.hidden, cfg.inter);
  s.backend = make_backend(cfg.backend);
  for (const Op* op : {&gu, &dn}) {
    const Support sup = s.backend->supports(*op);
    if (!sup.ok)
      throw InputError(
          fmt::format("backend {} cannot run {}: {}", cfg.backend, op->spec(), sup.reason));
  }
  s.gu = std::make_unique<TensorSet>(gu);
  s.dn = std::make_unique<TensorSet>(dn);
  fill_inputs(*s.gu, cfg.seed);
  fill_inputs(*s.dn, cfg.seed + 1);
  // No rows until a dispatch says otherwise.
  if (cfg.layout == GroupedLayout::contiguous)
    std::fill_n((*s.gu)["offsets"].as<std::int32_t>(), cfg.local_experts + 1, 0);
  else
    std::fill_n((*s.gu)["counts"].as<std::int32_t>(), cfg.local_experts, 0);
  RunOptions ro;
  ro.threads = cfg.threads;
  s.k_gu = s.backend->prepare(*s.gu, ro);
  s.k_dn = s.backend->prepare(*s.dn, ro);
}

ExpertMLP::~ExpertMLP() = default;

const ExpertConfig& ExpertMLP::config() const {
  return impl_->cfg;
}
std::string ExpertMLP::backend_version() const {
  return impl_->backend->version();
}

ExpertRows ExpertMLP::input() {
  auto& s = *impl_;
  ExpertRows r;
  r.layout = s.cfg.layout;
  r.dtype = s.cfg.dtype;
  r.local_experts = s.cfg.local_experts;
  r.hidden = s.cfg.hidden;
  r.capacity = s.cfg.layout == GroupedLayout::contiguous ? s.cfg.local_experts * s.m : s.m;
  r.data = (*s.gu)["a"].as<std::uint8_t>();
  r.scales = s.cfg.dtype == Payload::fp8 ? (*s.gu)["a_scale"].as<float>() : nullptr;
  if (s.cfg.layout == GroupedLayout::contiguous)
    r.offsets = (*s.gu)["offsets"].as<std::int32_t>();
  else
    r.counts = (*s.gu)["counts"].as<std::int32_t>();
  return r;
}

void ExpertMLP::run() {
  auto& s = *impl_;
  TensorSet& gu = *s.gu;
  TensorSet& dn = *s.dn;
  const int L = s.cfg.local_experts;
  const char* index = s.cfg.layout == GroupedLayout::contiguous ? "offsets" : "counts";
  std::copy_n(gu[index].as<std::int32_t>(), dn[index].numel(), dn[index].as<std::int32_t>());
  s.k_gu->run();
  // h = SiLU(gate) * up: gate is the first `inter` columns of gate+up, up the second.
  const std::int64_t I = s.cfg.inter;
  const auto* c = gu["c"].as<std::uint16_t>();
  const bool fp8 = s.cfg.dtype == Payload::fp8;
  const std::int64_t kb = (I + kFp8Block - 1) / kFp8Block;
  std::vector<float> h(idx(I));
  for (int g = 0; g < L; ++g) {
    const auto [r0, r1] = s.group(gu, g);
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::uint16_t* row = c + idx(r * 2 * I);
      for (std::int64_t j = 0; j < I; ++j) {
        const float gt = bf16_to_f32(row[idx(j)]), up = bf16_to_f32(row[idx(I + j)]);
        h[idx(j)] = gt / (1.0f + std::exp(-gt)) * up;
      }
      if (!fp8) {
        auto* a = dn["a"].as<std::uint16_t>() + idx(r * I);
        for (std::int64_t j = 0; j < I; ++j) a[idx(j)] = f32_to_bf16(h[idx(j)]);
        continue;
      }
      auto* a = dn["a"].as<std::uint8_t>() + idx(r * I);
      float* sc = dn["a_scale"].as<float>() + idx(r * kb);
      for (std::int64_t b = 0; b < kb; ++b) {
        const std::int64_t j0 = b * kFp8Block, j1 = std::min(I, j0 + kFp8Block);
        float amax = 0;
        for (std::int64_t j = j0; j < j1; ++j) amax = std::max(amax, std::fabs(h[idx(j)]));
        const float scale = amax > 0 ? amax / kFp8Max : 1.0f;
        sc[b] = scale;
        for (std::int64_t j = j0; j < j1; ++j) a[idx(j)] = f32_to_e4m3(h[idx(j)] / scale);
      }
    }
  }
  s.k_dn->run();
}

const std::uint16_t* ExpertMLP::output() const {
  return (*impl_->dn)["c"].as<std::uint16_t>();
}

double ExpertMLP::flops() const {
  const auto& s = *impl_;
  std::int64_t rows = 0;
  for (int g = 0; g < s.cfg.local_experts; ++g) {
    const auto [r0, r1] = s.group(*s.gu, g);
    rows += r1 - r0;
  }
  return 2.0 * static_cast<double>(rows) * static_cast<double>(s.cfg.hidden) * 3.0 *
         static_cast<double>(s.cfg.inter);
}

}  // namespace attain::moe
