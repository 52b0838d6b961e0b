// What this CPU is: ISA features (CPUID, with the OS's register-state support checked),
// model name and cache sizes.
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "attain/device.hpp"
#include "device/probe.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace attain {

namespace {

#if defined(__x86_64__) || defined(__i386__)
struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub = 0) {
  Regs r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) return {};
  return r;
}

std::uint64_t xgetbv0() {
  std::uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

bool bit(unsigned reg, int b) {
  return (reg >> b) & 1u;
}
#endif

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
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

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return trim(line);
}

}  // namespace

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  const Regs l1 = cpuid(1);
  const bool osxsave = bit(l1.c, 27);
  const std::uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm = (xcr0 & 0x6) == 0x6;            // SSE + AVX state saved by the OS
  const bool zmm = (xcr0 & 0xe6) == 0xe6;          // + opmask, ZMM_Hi256, Hi16_ZMM
  const bool tiles = (xcr0 & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA
  const unsigned max_leaf = cpuid(0).a;
  const Regs l7 = max_leaf >= 7 ? cpuid(7, 0) : Regs{};
  const Regs l7s1 = (max_leaf >= 7 && l7.a >= 1) ? cpuid(7, 1) : Regs{};
  f.fma = ymm && bit(l1.c, 12);
  f.f16c = ymm && bit(l1.c, 29);
  f.avx2 = ymm && bit(l7.b, 5);
  f.avx512f = zmm && bit(l7.b, 16);
  f.avx512bw = zmm && bit(l7.b, 30);
  f.avx512_bf16 = zmm && bit(l7s1.a, 5);
  f.amx = tiles && bit(l7.d, 24);  // AMX-TILE (AMX-BF16 is bit 22)
#endif
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
#if defined(__x86_64__) || defined(__i386__)
  // The CPUID brand string, where /proc is not available.
  if (cpuid(0x80000000).a >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      const Regs r = cpuid(0x80000002 + i);
      std::memcpy(brand + 16 * i, &r, 16);
    }
    auto name = trim(brand);
    if (!name.empty()) return name;
  }
#endif
  return "unknown CPU";
}

namespace probe {

CacheSizes cache_sizes() {
  CacheSizes c;
  // The kernel's view first (sysfs); glibc's sysconf (from CPUID) where sysfs has none.
  const std::string base = "/sys/devices/system/cpu/cpu0/cache/index";
  for (int i = 0; i < 8; ++i) {
    const std::string dir = base + std::to_string(i) + "/";
    const std::string level = read_line(dir + "level");
    if (level.empty()) break;
    const std::string type = read_line(dir + "type");
    const std::int64_t size = parse_size(read_line(dir + "size"));
    if (level == "1" && type == "Data") c.l1d = size;
    if (level == "2" && type != "Instruction") c.l2 = size;
    if (level == "3") c.l3 = size;
  }
#if defined(_SC_LEVEL1_DCACHE_SIZE)
  if (c.l1d <= 0) c.l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  if (c.l2 <= 0) c.l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (c.l3 <= 0) c.l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  if (c.l1d < 0) c.l1d = 0;
  if (c.l2 < 0) c.l2 = 0;
  if (c.l3 < 0) c.l3 = 0;
  return c;
}

}  // namespace probe

}  // namespace attain
