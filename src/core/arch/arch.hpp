// The architecture-specific half of core/cpu_features: arch/x86/ on x86-64, arch/portable/
// elsewhere (CMakeLists.txt compiles one of them).
#pragma once

#include <string>

#include "attain/cpu_features.hpp"

namespace attain::arch {

// Fills f's vendor, family, model and ISA flags (leaves the cache sizes alone).
void detect_isa(CpuFeatures& f);
// The CPU's own name for itself (CPUID's brand string); "" where it has none.
std::string brand_string();

}  // namespace attain::arch
