// Decode path, AVX2: W rows streamed once and converted in registers (4 W rows x 2 A rows of
// ymm accumulators); see simd_stream.hpp.
#include "kernels/cpu/gemm/ukernels/avx2/simd_avx2.hpp"
#include "kernels/cpu/gemm/ukernels/simd_stream.hpp"

namespace attain::gemm::detail {

void decode_avx2(const DecodeArgs& args) {
  Stream<Avx2Load>::decode(args);
}

}  // namespace attain::gemm::detail
