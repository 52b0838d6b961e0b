// The combine's row arithmetic compiled for AVX-512 (selected at run time by row_ops()).
#include "moe/reduce_kernels.hpp"

namespace attain::moe::detail {

const RowOps& row_ops_avx512() {
  static const RowOps ops{"avx512", kernels::weighted_sum};
  return ops;
}

}  // namespace attain::moe::detail
