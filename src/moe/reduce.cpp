#include "attain/cpu_features.hpp"
#include "moe/reduce_kernels.hpp"

namespace attain::moe::detail {

const RowOps& row_ops_generic() {
  static const RowOps ops{"generic", kernels::weighted_sum};
  return ops;
}

const RowOps& row_ops() {
  // The level of cpu_features(): ATTAIN_ISA caps it as it caps every kernel family.
  static const IsaLevel level = isa_level(cpu_features());
  static const RowOps& best = level >= IsaLevel::avx512 ? row_ops_avx512()
                              : level >= IsaLevel::avx2 ? row_ops_avx2()
                                                        : row_ops_generic();
  return best;
}

}  // namespace attain::moe::detail
