#include "moe/reduce_kernels.hpp"

namespace attain::moe::detail {

const RowOps& row_ops_generic() {
  static const RowOps ops{"generic", kernels::weighted_sum};
  return ops;
}

const RowOps& row_ops() {
  static const RowOps& best =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") ? row_ops_avx512()
      : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")       ? row_ops_avx2()
                                                                              : row_ops_generic();
  return best;
}

}  // namespace attain::moe::detail
