// The combine's row arithmetic compiled for AVX2 + FMA (selected at run time by row_ops()).
#include "moe/reduce_kernels.hpp"

namespace attain::moe::detail {

const RowOps& row_ops_avx2() {
  static const RowOps ops{"avx2", kernels::weighted_sum};
  return ops;
}

}  // namespace attain::moe::detail
