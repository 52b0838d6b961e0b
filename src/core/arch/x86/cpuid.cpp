// CPUID and XGETBV: the x86 half of core/cpu_features.
#include <cpuid.h>

#include <cstdint>
#include <cstring>

#include "core/arch/arch.hpp"

namespace attain::arch {

namespace {

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

}  // namespace

void detect_isa(CpuFeatures& f) {
  const Regs l0 = cpuid(0);
  const unsigned max_leaf = l0.a;
  if (max_leaf == 0) return;
  char vendor[13] = {};
  std::memcpy(vendor, &l0.b, 4);
  std::memcpy(vendor + 4, &l0.d, 4);
  std::memcpy(vendor + 8, &l0.c, 4);
  f.vendor = vendor;
  const Regs l1 = cpuid(1);
  // Display family and model: the extended fields count for family 0xF (and, for the model,
  // family 6).
  const unsigned base_family = (l1.a >> 8) & 0xf, base_model = (l1.a >> 4) & 0xf;
  f.family =
      static_cast<int>(base_family == 0xf ? base_family + ((l1.a >> 20) & 0xff) : base_family);
  f.model = static_cast<int>(base_family == 0xf || base_family == 0x6
                                 ? base_model | (((l1.a >> 16) & 0xf) << 4)
                                 : base_model);
  const bool osxsave = bit(l1.c, 27);
  const std::uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm = (xcr0 & 0x6) == 0x6;            // SSE + AVX state saved by the OS
  const bool zmm = (xcr0 & 0xe6) == 0xe6;          // + opmask, ZMM_Hi256, Hi16_ZMM
  const bool tiles = (xcr0 & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA
  const Regs l7 = max_leaf >= 7 ? cpuid(7, 0) : Regs{};
  const Regs l7s1 = (max_leaf >= 7 && l7.a >= 1) ? cpuid(7, 1) : Regs{};
  f.fma = ymm && bit(l1.c, 12);
  f.f16c = ymm && bit(l1.c, 29);
  f.avx2 = ymm && bit(l7.b, 5);
  f.avx512f = zmm && bit(l7.b, 16);
  f.avx512dq = zmm && bit(l7.b, 17);
  f.avx512bw = zmm && bit(l7.b, 30);
  f.avx512vl = zmm && bit(l7.b, 31);
  f.avx512vbmi = zmm && bit(l7.c, 1);
  f.avx512_bf16 = zmm && bit(l7s1.a, 5);
  f.amx = tiles && bit(l7.d, 24);  // AMX-TILE (AMX-BF16 is bit 22)
}

std::string brand_string() {
  if (cpuid(0x80000000).a < 0x80000004) return "";
  char brand[49] = {};
  for (unsigned i = 0; i < 3; ++i) {
    const Regs r = cpuid(0x80000002 + i);
    std::memcpy(brand + 16 * i, &r, 16);
  }
  return brand;
}

}  // namespace attain::arch
