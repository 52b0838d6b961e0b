// The rows in matching order, and the one the engine takes for a kernel family on this CPU.
#include <cstdlib>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>

#include "kernels/cpu/gemm/config/config.hpp"

namespace attain::gemm::detail {

namespace {

using config::CpuRow;

#define ATTAIN_GEMM_ROW_ADDRESS(row) &config::row,
const CpuRow* const kRows[] = {ATTAIN_GEMM_CPU_ROWS(ATTAIN_GEMM_ROW_ADDRESS)};
#undef ATTAIN_GEMM_ROW_ADDRESS

// ATTAIN_GEMM_TABLE=<row name> ("zen5", "zen4", "generic") takes that row's blocks and crossovers
// on any CPU (to compare rows side by side on one machine; the kernels still need their ISA).
const std::string& forced_row() {
  static const std::string name = [] {
    const char* env = std::getenv("ATTAIN_GEMM_TABLE");
    if (env == nullptr || *env == '\0') return std::string();
    for (const CpuRow* r : kRows)
      if (std::string_view(r->name) == env) return std::string(env);
    std::string known;
    for (const CpuRow* r : kRows)
      if (known.find(r->name) == std::string::npos)
        known += (known.empty() ? "" : ", ") + std::string(r->name);
    throw std::runtime_error("ATTAIN_GEMM_TABLE=" + std::string(env) + ": expected one of " +
                             known);
  }();
  return name;
}

const CpuRow& find_row(Isa isa) {
  const CpuInfo& c = cpu_info();
  const std::string& forced = forced_row();
  if (!forced.empty())
    for (const CpuRow* r : kRows)
      if (r->isa == isa && r->name == forced) return *r;
  // The CPU's own row (also where a forced row has none for this kernel family).
  for (const CpuRow* r : kRows)
    if (r->isa == isa && (r->vendor.empty() || r->vendor == c.vendor) &&
        (r->family == 0 || r->family == c.family))
      return *r;
  throw std::logic_error("gemm: no block-size table row for this kernel family");
}

// The row of each kernel family, found once (every call asks).
const CpuRow& table_row(Isa isa) {
  static const CpuRow* const rows[] = {&find_row(Isa::scalar), &find_row(Isa::avx2),
                                       &find_row(Isa::avx512)};
  switch (isa) {
    case Isa::scalar:
      return *rows[0];
    case Isa::avx2:
      return *rows[1];
    case Isa::avx512:
      return *rows[2];
    case Isa::automatic:
      break;
  }
  throw std::logic_error("gemm: no block-size table row for an unresolved kernel family");
}

}  // namespace

const Blocking& blocking(Isa isa) {
  return table_row(isa).blocks;
}

std::string cpu_table_row_name(Isa isa) {
  return table_row(isa).name;
}

}  // namespace attain::gemm::detail
