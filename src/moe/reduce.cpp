#include "moe/reduce_kernels.hpp"

namespace attain::moe::detail {

const RowOps& row_ops_avx2();

namespace {
void axpy_generic(float* acc, const std::uint16_t* y, float w, std::int64_t n) {
  kernels::axpy(acc, y, w, n);
}
void store_generic(std::uint16_t* dst, const float* acc, std::int64_t n) {
  kernels::store(dst, acc, n);
}
}  // namespace

const RowOps& row_ops() {
  static const RowOps generic{axpy_generic, store_generic};
  static const RowOps& best =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? row_ops_avx2() : generic;
  return best;
}

}  // namespace attain::moe::detail
