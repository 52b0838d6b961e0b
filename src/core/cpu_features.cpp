// The portable half of the CPU's description: instruction-set levels, the ATTAIN_ISA cap, cache
// sizes and the model name. CPUID itself is in arch/x86/.
#include "attain/cpu_features.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "attain/op.hpp"
#include "core/arch/arch.hpp"

namespace attain {

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return trim(line);
}

// "32K", "1024K", "32M" (sysfs cache size) -> bytes.
std::int64_t parse_size(const std::string& s) {
  std::size_t pos = 0;
  std::int64_t v = 0;
  try {
    v = std::stoll(s, &pos);
  } catch (...) {
    return 0;
  }
  const char unit = pos < s.size() ? s[pos] : ' ';
  if (unit == 'K') v <<= 10;
  if (unit == 'M') v <<= 20;
  if (unit == 'G') v <<= 30;
  return v;
}

// The kernel's view first (sysfs); glibc's sysconf (from CPUID) where sysfs has none.
void detect_caches(CpuFeatures& f) {
  const std::string base = "/sys/devices/system/cpu/cpu0/cache/index";
  for (int i = 0; i < 8; ++i) {
    const std::string dir = base + std::to_string(i) + "/";
    const std::string level = read_line(dir + "level");
    if (level.empty()) break;
    const std::string type = read_line(dir + "type");
    const std::int64_t size = parse_size(read_line(dir + "size"));
    if (level == "1" && type == "Data") f.l1d_bytes = size;
    if (level == "2" && type != "Instruction") f.l2_bytes = size;
    if (level == "3") f.l3_bytes = size;
  }
#if defined(_SC_LEVEL1_DCACHE_SIZE)
  if (f.l1d_bytes <= 0) f.l1d_bytes = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  if (f.l2_bytes <= 0) f.l2_bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (f.l3_bytes <= 0) f.l3_bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  for (std::int64_t* b : {&f.l1d_bytes, &f.l2_bytes, &f.l3_bytes})
    if (*b < 0) *b = 0;
}

constexpr IsaLevel kLevels[] = {IsaLevel::scalar, IsaLevel::avx2, IsaLevel::avx512,
                                IsaLevel::avx512_bf16};

}  // namespace

std::string_view isa_level_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::scalar:
      return "scalar";
    case IsaLevel::avx2:
      return "avx2";
    case IsaLevel::avx512:
      return "avx512";
    case IsaLevel::avx512_bf16:
      return "avx512_bf16";
  }
  return "?";
}

IsaLevel isa_level(const CpuFeatures& f) {
  if (!(f.avx2 && f.fma && f.f16c)) return IsaLevel::scalar;
  if (!(f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq)) return IsaLevel::avx2;
  return f.avx512_bf16 ? IsaLevel::avx512_bf16 : IsaLevel::avx512;
}

CpuFeatures capped(const CpuFeatures& f, IsaLevel level) {
  CpuFeatures c = f;
  if (level < IsaLevel::avx512_bf16) c.avx512_bf16 = c.avx512vbmi = c.amx = false;
  if (level < IsaLevel::avx512) c.avx512f = c.avx512bw = c.avx512vl = c.avx512dq = false;
  if (level < IsaLevel::avx2) c.avx2 = c.fma = c.f16c = false;
  return c;
}

const CpuFeatures& detected_cpu_features() {
  static const CpuFeatures f = [] {
    CpuFeatures d;
    arch::detect_isa(d);
    detect_caches(d);
    return d;
  }();
  return f;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = [] {
    const CpuFeatures& d = detected_cpu_features();
    const char* env = std::getenv("ATTAIN_ISA");
    if (env == nullptr || *env == '\0') return d;
    const std::string_view want(env);
    for (IsaLevel level : kLevels) {
      if (want != isa_level_name(level)) continue;
      if (level > isa_level(d))
        throw InputError("ATTAIN_ISA=" + std::string(want) +
                         ": not supported by this CPU (it has " +
                         std::string(isa_level_name(isa_level(d))) + ")");
      return capped(d, level);
    }
    throw InputError("ATTAIN_ISA=" + std::string(want.substr(0, 80)) +
                     ": expected scalar, avx2, avx512 or avx512_bf16");
  }();
  return f;
}

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto name = trim(line.substr(colon + 1));
        if (!name.empty()) return name;
      }
    }
  }
  // The CPUID brand string, where /proc is not available.
  const std::string brand = trim(arch::brand_string());
  return brand.empty() ? "unknown CPU" : brand;
}

}  // namespace attain
