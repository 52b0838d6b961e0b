// Seeded inputs and verification against an fp64 reference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attain/tensor.hpp"

namespace attain {

// Random inputs in [-1, 1) (fp8: per-block scaled to use the e4m3 range), and the
// structural tensors made valid: group offsets/counts from the op, MLA block tables
// shuffled, cache slots past each sequence poisoned with NaN, seqlens = s. Large tensors are
// filled in ranges of about `grain` values (0: 2^20) on every CPU the process may use; the
// data depend on the seed alone, not on the grain or the thread count.
void fill_inputs(TensorSet& set, std::uint64_t seed, std::int64_t grain = 0);
// MLA: fills the cache rows that block_table/seqlens make live (so tests can set ragged
// seqlens and their own tables first) and poisons every other slot with NaN.
void fill_mla_cache(TensorSet& set, std::uint64_t seed);
// Outputs set to NaN, so a backend that skips writing is caught.
void poison_outputs(TensorSet& set);

// Element i of a tensor as double (no block scales applied; reference paths only).
double load_value(const Tensor& t, std::int64_t i);
// MLA cache row (token slot `slot` of block `block`) dequantized to 576 doubles.
void load_mla_row(const Tensor& kcache, std::int64_t block, std::int64_t slot, double* out);
// Softmax scale of the MLA decode op: 1/sqrt(qk_nope + qk_rope) = 1/sqrt(192) (DeepSeek-V3).
inline constexpr double kMlaSoftmaxScale = 0.07216878364870323;

struct Verification {
  bool ok = false;
  double error = 0;  // normwise relative error ||C - ref|| / ||ref||
  double tolerance = 0;
  std::string detail;  // why it failed (NaN at..., guard overwritten, error above tolerance)
};

// Relative-error tolerance for an op's dtype and reduction length.
double tolerance(const Op& op);
// Full fp64 reference where the op is small enough (flops <= full_limit), else a
// random-vector residual check (C.t vs A.(W^T.t)). NaN/Inf in outputs fail hard.
Verification verify(const TensorSet& set, double full_limit = 3e8, std::uint64_t seed = 7);

// fp64 reference outputs, one vector per output tensor (op_tensors order).
std::vector<std::vector<double>> reference_outputs(const TensorSet& set);

}  // namespace attain
