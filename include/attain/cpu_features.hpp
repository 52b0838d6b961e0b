// What this CPU can run, detected once for the whole process: the one place that reads CPUID.
// The GEMM engine, the MLA kernels, the MoE reduction, the probe, the tuning cache and the BLIS
// backend all ask here. On x86 the features come from CPUID with the OS's register-state support
// checked (XGETBV); elsewhere none are reported and the scalar kernels run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace attain {

struct CpuFeatures {
  std::string vendor;         // "AuthenticAMD", "GenuineIntel"; "" where there is no CPUID
  int family = 0, model = 0;  // display family and model (Intel SDM / AMD APM)
  bool avx2 = false, fma = false, f16c = false, avx512f = false, avx512bw = false,
       avx512_bf16 = false, amx = false;
  bool avx512vl = false, avx512dq = false, avx512vbmi = false;
  // Cache sizes per core (L3: per instance) as the kernel reports them (sysfs), else glibc's
  // sysconf (from CPUID); 0 where neither knows.
  std::int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
};

// The instruction-set levels attain's kernels are built for, each holding the ones before it:
// avx2 is AVX2 + FMA + F16C, avx512 adds AVX-512 F/BW/VL/DQ, avx512_bf16 adds AVX512_BF16.
enum class IsaLevel { scalar, avx2, avx512, avx512_bf16 };
std::string_view isa_level_name(IsaLevel level);
IsaLevel isa_level(const CpuFeatures& f);  // the highest level f has
// f without what lies above `level` (f itself where it has no more than that).
CpuFeatures capped(const CpuFeatures& f, IsaLevel level);

// The CPU as detected.
const CpuFeatures& detected_cpu_features();
// What attain's own kernels use: the detected features, capped by the environment variable
// ATTAIN_ISA=scalar|avx2|avx512|avx512_bf16 where it is set (to compare kernel families on one
// machine). Throws InputError for another value or for a level this CPU does not have. The
// probe, which measures the machine, and the other libraries' backends use the detected set.
const CpuFeatures& cpu_features();

std::string cpu_model_name();  // "/proc/cpuinfo"'s model name, else the CPUID brand string

}  // namespace attain
