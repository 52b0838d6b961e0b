// The combine's row arithmetic compiled for AVX2 + FMA (selected at run time by row_ops()).
#include "moe/reduce_kernels.hpp"

namespace attain::moe::detail {

namespace {
void axpy_avx2(float* acc, const std::uint16_t* y, float w, std::int64_t n) {
  kernels::axpy(acc, y, w, n);
}
void store_avx2(std::uint16_t* dst, const float* acc, std::int64_t n) {
  kernels::store(dst, acc, n);
}
}  // namespace

const RowOps& row_ops_avx2() {
  static const RowOps ops{axpy_avx2, store_avx2};
  return ops;
}

}  // namespace attain::moe::detail
