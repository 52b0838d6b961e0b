// The fp32 GEMM-like ops expressed as calls of one plain GEMM, for libraries whose API is a
// single sgemm: C[m,n] = A[m,k] . W[n,k]^T with A, W, C row-major and dense (lda = ldw = k,
// ldc = n). Batched ops loop over the batch, grouped ops over the groups (rows of a group
// from the offsets/counts tensors, read at run time as an inference engine would).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "attain/backend.hpp"

namespace attain::backends {

// What a library that offers only fp32 GEMM can run.
inline Support fp32_gemm_support(const Op& op, std::string_view lib) {
  if (op.kind == OpKind::mla_decode)
    return Support::no(fmt::format("{} has no MLA decode attention", lib));
  if (op.dtype != DType::f32)
    return Support::no(fmt::format("{} has no {} GEMM (fp32 only; inputs are not converted)", lib,
                                   dtype_name(op.dtype)));
  return Support::yes();
}

// The sub-GEMMs of an op, bound to its tensor set. Call gemm(m, a, w, c) for each with
// n = op.n and k = op.k; groups with no rows are skipped.
struct GemmPlan {
  const Op* op = nullptr;
  const float* a = nullptr;
  const float* w = nullptr;
  float* c = nullptr;
  const std::int32_t* offsets = nullptr;  // grouped, contiguous layout
  const std::int32_t* counts = nullptr;   // grouped, masked layout

  explicit GemmPlan(TensorSet& set) : op(&set.op()) {
    a = set["a"].as<float>();
    w = set["w"].as<float>();
    c = set["c"].as<float>();
    if (op->kind == OpKind::grouped_gemm) {
      if (op->layout == GroupedLayout::contiguous)
        offsets = set["offsets"].as<std::int32_t>();
      else
        counts = set["counts"].as<std::int32_t>();
    }
  }

  template <class Gemm>
  void for_each(Gemm&& gemm) const {
    const std::int64_t n = op->n, k = op->k;
    switch (op->kind) {
      case OpKind::gemm:
        gemm(op->m, a, w, c);
        break;
      case OpKind::batched_gemm:
        for (std::int64_t b = 0; b < op->batch; ++b)
          gemm(op->m, a + b * op->m * k, w + b * n * k, c + b * op->m * n);
        break;
      case OpKind::grouped_gemm:
        if (offsets) {
          const std::int64_t rows = op->total_rows();
          for (std::int64_t g = 0; g < op->groups; ++g) {
            const std::int64_t lo = offsets[g], hi = offsets[g + 1];
            if (lo < 0 || hi < lo || hi > rows)
              throw std::runtime_error(
                  fmt::format("group {} has invalid offsets [{}, {})", g, lo, hi));
            if (hi > lo) gemm(hi - lo, a + lo * k, w + g * n * k, c + lo * n);
          }
        } else {
          const std::int64_t max_m = op->max_group_rows();
          for (std::int64_t g = 0; g < op->groups; ++g) {
            const std::int64_t cnt = counts[g];
            if (cnt < 0 || cnt > max_m)
              throw std::runtime_error(fmt::format("group {} has invalid count {}", g, cnt));
            if (cnt > 0) gemm(cnt, a + g * max_m * k, w + g * n * k, c + g * max_m * n);
          }
        }
        break;
      case OpKind::mla_decode:
        throw std::logic_error("mla_decode is not a GEMM");
    }
  }
};

}  // namespace attain::backends
