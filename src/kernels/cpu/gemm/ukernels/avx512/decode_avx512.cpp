// Decode path, AVX-512: W rows streamed once and converted in registers (4 W rows x 4 A rows
// of zmm accumulators); see simd_stream.hpp.
#include "kernels/cpu/gemm/ukernels/avx512/simd_avx512.hpp"
#include "kernels/cpu/gemm/ukernels/simd_stream.hpp"

namespace attain::gemm::detail {

void decode_avx512(const DecodeArgs& args) {
  Stream<Avx512Load>::decode(args);
}

}  // namespace attain::gemm::detail
