// Per-CPU configuration as data: one file per row in this folder, each a CpuRow with named fields
// (Blocking in dispatch.hpp says what each one means), and the list below that orders them.
// Adding a CPU is a new file here and one line in the list (docs/gemm.md, "Add a CPU row").
#pragma once

#include <cstdint>
#include <string_view>

#include "kernels/cpu/gemm/dispatch.hpp"

namespace attain::gemm::detail::config {

// A row matches a CPU by vendor and family (empty / 0: any) for one kernel family.
struct CpuRow {
  const char* name;         // what results files and ATTAIN_GEMM_TABLE call it: "zen5"
  std::string_view vendor;  // "AuthenticAMD"
  int family;               // CPUID display family (0x1a: Zen 5)
  Isa isa;                  // the kernel family the blocks are for
  Blocking blocks;
};

inline constexpr std::int64_t kKiB = 1 << 10, kMiB = 1 << 20;

// The rows, in the order they are matched: for each kernel family the first row whose vendor and
// family match wins, so the generic rows come last.
#define ATTAIN_GEMM_CPU_ROWS(ROW) \
  ROW(zen5_avx512)                \
  ROW(zen4_avx512)                \
  ROW(zen5_avx2)                  \
  ROW(zen4_avx2)                  \
  ROW(generic_avx512)             \
  ROW(generic_avx2)               \
  ROW(generic_scalar)

#define ATTAIN_GEMM_DECLARE_ROW(row) extern const CpuRow row;
ATTAIN_GEMM_CPU_ROWS(ATTAIN_GEMM_DECLARE_ROW)
#undef ATTAIN_GEMM_DECLARE_ROW

}  // namespace attain::gemm::detail::config
