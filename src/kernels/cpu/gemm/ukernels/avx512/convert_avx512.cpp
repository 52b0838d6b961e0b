// Packing helper, AVX-512: dtype conversion of contiguous runs (16 values per step).
#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/simd_stream.hpp"

namespace attain::gemm::detail {

void convert_avx512(const void* src, DType t, std::int64_t n, float scale, const float* e4m3,
                    float* dst) {
  Stream<Avx512Load>::convert(src, t, n, scale, e4m3, dst);
}

}  // namespace attain::gemm::detail
