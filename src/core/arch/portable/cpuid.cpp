// Architectures without CPUID: no vector ISA is reported, so the scalar kernels run.
#include "core/arch/arch.hpp"

namespace attain::arch {

void detect_isa(CpuFeatures&) {}

std::string brand_string() {
  return "";
}

}  // namespace attain::arch
