#include "kernels/cpu/gemm/dispatch.hpp"

#include <cpuid.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attain/op.hpp"

namespace attain::gemm::detail {

namespace {

std::uint64_t xgetbv0() {
  std::uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

CpuInfo probe_cpu() {
  CpuInfo c;
  unsigned a, b, cx, d;
  if (!__get_cpuid(0, &a, &b, &cx, &d)) return c;
  const unsigned max_leaf = a;
  char v[13] = {};
  __builtin_memcpy(v, &b, 4);
  __builtin_memcpy(v + 4, &d, 4);
  __builtin_memcpy(v + 8, &cx, 4);
  c.vendor = v;
  __get_cpuid(1, &a, &b, &cx, &d);
  const unsigned base_family = (a >> 8) & 0xf, base_model = (a >> 4) & 0xf;
  c.family = static_cast<int>(base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family);
  c.model =
      static_cast<int>(base_family >= 0x6 ? base_model | (((a >> 16) & 0xf) << 4) : base_model);
  const bool osxsave = (cx >> 27) & 1;
  const std::uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm_os = (xcr0 & 0x6) == 0x6, zmm_os = (xcr0 & 0xe6) == 0xe6;
  c.fma = ((cx >> 12) & 1) && ymm_os;
  c.f16c = ((cx >> 29) & 1) && ymm_os;
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, cx, d);
    c.avx2 = ((b >> 5) & 1) && ymm_os;
    c.avx512f = ((b >> 16) & 1) && zmm_os;
    c.avx512dq = ((b >> 17) & 1) && zmm_os;
    c.avx512bw = ((b >> 30) & 1) && zmm_os;
    c.avx512vl = ((b >> 31) & 1) && zmm_os;
    c.avx512vbmi = ((cx >> 1) & 1) && zmm_os;
    const unsigned subleaves = a;
    if (subleaves >= 1) {
      __cpuid_count(7, 1, a, b, cx, d);
      c.avx512_bf16 = ((a >> 5) & 1) && zmm_os;
    }
  }
  const long l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);  // glibc reads it from CPUID; 0 if unknown
  c.l1d_bytes = l1d > 0 ? l1d : 0;
  return c;
}

// Kernel families, best first (the per-ISA pieces live in ukernels/<isa>/).
// clang-format off
const std::array<KernelFamily, 3> kFamilies = {{
    {Isa::avx512, "avx512_12x32", 12, 32, sgemm_avx512_12x32, convert_avx512, interleave_avx512,
     decode_avx512, 16, bgemm_avx512bf16_12x32, round16_avx512, decode_fp8_pairs_avx512vbmi,
     decode_bf16_pairs_avx512bf16, sgemm_direct_avx512_6x64, 6, 64, 16,
     sgemm_direct_avx512bf16_6x64, sgemm_direct_avx512_6x8k2, true,
     sgemm_direct_avx512bf16_6x64_fp8},
    {Isa::avx2, "avx2_6x16", 6, 16, sgemm_avx2_6x16, convert_avx2, interleave_avx2, decode_avx2, 8,
     nullptr, round16_avx2, nullptr, nullptr, sgemm_direct_avx2_6x16, 6, 16, 8},
    {Isa::scalar, "scalar_4x8", 4, 8, sgemm_scalar_4x8, convert_scalar, interleave_scalar,
     decode_scalar, 1, nullptr, nullptr, nullptr, nullptr, sgemm_direct_scalar_4x8, 4, 8, 8},
}};
// clang-format on

// The per-CPU block-size table. A row matches a vendor and family (0 = any); the first match
// for the kernel family wins, so generic rows come last. The sweeps behind each row:
// docs/history/gemm.md.
struct TableRow {
  const char* name;
  std::string_view vendor;
  int family;
  Isa isa;
  Blocking blocks;
};
constexpr std::int64_t kMiB = 1 << 20;
// Columns: mc, kc, B panel bytes, nc, decode max M (fp32, 16/8-bit, bf16 pairs, fp8 pairs), direct
// min / max M, direct min N, direct min / max M on bf16 pairs, on converted W, direct min K (fp32
// and converted W), direct max KC, direct A^T block bytes, swap min M, direct split-M max N, swap
// max N, km B block bytes, direct min M and min K on k pairs, then the remaining Blocking fields in
// order (dispatch.hpp). Each crossover is where the path on its side of it was faster on that CPU;
// the runs that chose them are in docs/history/code-comments.md.
//
// zen5 (AVX-512): KC 512 and NC 512: the B micro-panel (KC x 32) streams from L2 as fast as from L1
// on Zen 5, so fewer KC passes over C with a KC x NC block of B in L2 beat an L1-sized micro-panel.
// The decode path up to M 32 (fp32, bf16 and fp8 pairs) and M 64 (16/8-bit W, whose conversion is
// free in the decode kernel). The direct path for fp32 M 12..160 with N, K >= 256 (M 8 stays on the
// decode path), bf16 pairs M 12..128 (two accumulator sets make M 12 pay), converted W M 32..160.
// Its threads split M (whole 64-row panels) for N <= 512, and it runs from half of direct min N (N
// >= 128: N = 64 with a long K loses). The swapped direct path (Schedule::swap: A's rows read in
// place, W^T packed, C written as rows) from M = 512 for N up to 256. The AVX2 family's zen5 row is
// what an AVX2-only CPU runs (direct fp32 M 12..192). The generic rows leave the direct path to the
// tuner.
//
// zen4 (family 0x19 with AVX-512: Genoa / Raphael; Zen 3 has no AVX-512 and keeps the generic AVX2
// row; 32 KiB L1d, 1 MiB L2, 512-bit FMAs at half Zen 5's rate): zen5's blocks. The direct path
// starts at M 12 (at M 8 it loses on half the shapes) and reaches M 1024 on every route, with K
// blocks up to 4096 deep in an 8 MiB A^T block (M = 256 takes K = 4096 whole, 1024 takes 2048): Zen
// 4 streams that block from L3 as fast and gains from fewer passes over C. oneDNN's brgemm runs the
// same structure on large products (6 rows broadcast in place against a packed operand 64 wide, K
// unblocked: ONEDNN_JIT_DUMP). From M = 2048 the packed path stays; the packed A^T stays within 32
// MiB (resolve_with: 1024 rows up to K = 8192). fp32 M = 5..8 runs the k-pairs kernel (direct_k2)
// from K = 1536; below that K its 64-bit broadcasts, a vector-pipe slot each on Zen 4 (1.4 W values
// a cycle in L1 where the decode panel's plain loads run 2), lose to the decode panel. The swapped
// direct path from M = 192; for N up to 512 where M >= 2 N (at M = N with a long K it loses). bf16
// pairs at M <= 32 stay on the decode path for K = 512-2047, where it streams W faster than the
// direct path packs A^T and writes C. fp8 x fp8 on the direct path (bf16 pairs, block scales in the
// kernel) for M 32..2048, the decode path below; above, the packed path converts and packs all of
// W.
//
// zen4 row for the AVX2 kernels (family 0x19 without AVX-512: Zen 3; and Zen 4 run with
// ATTAIN_ISA=avx2, its AVX2 FMA rate being its AVX-512 one): the generic AVX2 row's blocks, with
// the direct path on the 6 x 16 asm kernel for fp32 M 12..384 and converted W M 32..384 (A^T blocks
// up to 8 MiB, KC up to 4096, as the AVX-512 row), split M from N = 128, swapped from M = 256 for N
// <= 256 (N <= 512 where M >= 2 N) and from M = 128 for K <= 512. The direct path stops at M = 384:
// above it the A^T block streams from L3, which the neighbours share, and loses when they are busy.
// fp32 operands on the packed path take MC 72 and KC 768 (the km order's NC from its 2 MiB budget:
// 672): their packing only transposes, so deeper blocks mean fewer passes over C (0.930 of the FMA
// peak on 2048^3, 1 thread, against 0.906-0.920 at 144 x 256); the converting routes keep 144 x 256
// (bf16 512x4096x4096 loses at KC 768).
// clang-format off
const std::array<TableRow, 7> kTable = {{
    {"zen5", "AuthenticAMD", 0x1a, Isa::avx512, {144, 512, 24 * kMiB, 512, 32, 64, 32, 32, 12, 160, 256, 12, 128, 32, 160, 256, 2048, 512 * 1024, 512, 512, 256}},
    {"zen4", "AuthenticAMD", 0x19, Isa::avx512, {144, 512, 24 * kMiB, 512, 32, 64, 32, 32, 12, 1024, 256, 12, 1024, 32, 1024, 256, 4096, 8 * kMiB, 192, 512, 256, 2 << 20, 5, 1536, 512, 2048, 512, 1025, 4096, 128, 512, 32, 2048}},
    {"zen5", "AuthenticAMD", 0x1a, Isa::avx2, {144, 512, 24 * kMiB, 512, 32, 64, 64, 64, 12, 192, 256, 0, 0, 32, 160, 256, 2048, 512 * 1024, 256, 0, 256}},
    {"zen4", "AuthenticAMD", 0x19, Isa::avx2, {144, 256, 16 * kMiB, 0, 16, 32, 32, 32, 12, 384, 256, 0, 0, 32, 384, 256, 4096, 8 * kMiB, 256, 512, 256, 2 << 20, 0, 0, 0, 0, 512, 0, 0, 128, 512, 0, 0, 72, 768}},
    {"generic", "", 0, Isa::avx512, {144, 256, 16 * kMiB, 0, 32, 64, 32, 32}},
    {"generic", "", 0, Isa::avx2, {144, 256, 16 * kMiB, 0, 16, 32, 32, 32}},
    {"generic", "", 0, Isa::scalar, {64, 256, 4 * kMiB, 0, 16, 16, 16, 16}},
}};
// clang-format on

// ATTAIN_GEMM_TABLE=<row name> ("zen5", "zen4", "generic") takes that row's blocks and crossovers
// on any CPU (to compare rows side by side on one machine; the kernels still need their ISA).
const std::string& forced_row() {
  static const std::string name = [] {
    const char* env = std::getenv("ATTAIN_GEMM_TABLE");
    if (env == nullptr || *env == '\0') return std::string();
    for (const auto& r : kTable)
      if (std::string_view(r.name) == env) return std::string(env);
    std::string known;
    for (const auto& r : kTable)
      if (known.find(r.name) == std::string::npos)
        known += (known.empty() ? "" : ", ") + std::string(r.name);
    throw std::runtime_error("ATTAIN_GEMM_TABLE=" + std::string(env) + ": expected one of " +
                             known);
  }();
  return name;
}

const TableRow& table_row(Isa isa) {
  const CpuInfo& c = cpu_info();
  const std::string& forced = forced_row();
  if (!forced.empty())
    for (const auto& r : kTable)
      if (r.isa == isa && r.name == forced) return r;
  // The CPU's own row (also where a forced row has none for this kernel family).
  for (const auto& r : kTable)
    if (r.isa == isa && (r.vendor.empty() || r.vendor == c.vendor) &&
        (r.family == 0 || r.family == c.family))
      return r;
  throw std::logic_error("gemm: no block-size table row for this kernel family");
}

}  // namespace

const CpuInfo& cpu_info() {
  static const CpuInfo info = probe_cpu();
  return info;
}

bool multiplies_bf16_pairs(const Params& p, const KernelFamily& f) {
  const bool dtypes = (p.a_type == DType::bf16 && p.b_type == DType::bf16) ||
                      (p.a_type == DType::fp8 && p.b_type == DType::fp8);
  return f.ukernel_bf16 != nullptr && cpu_info().avx512_bf16 && dtypes && p.trans_a == Trans::N &&
         p.trans_b == Trans::T && p.k % 2 == 0;
}

bool decodes_fp8_pairs(const Params& p, const KernelFamily& f) {
  const CpuInfo& c = cpu_info();
  return f.decode_fp8_pairs != nullptr && c.avx512_bf16 && c.avx512vbmi && p.a_type == DType::fp8 &&
         p.b_type == DType::fp8 && p.trans_a == Trans::N && p.trans_b == Trans::T &&
         p.m <= kDecodeMaxM && p.k % 64 == 0;
}

bool decodes_bf16_pairs(const Params& p, const KernelFamily& f) {
  return f.decode_bf16_pairs != nullptr && cpu_info().avx512_bf16 && p.a_type == DType::bf16 &&
         p.b_type == DType::bf16 && p.trans_a == Trans::N && p.trans_b == Trans::T &&
         p.m <= kDecodeMaxM;
}

double rough_ns(DType b_type, std::int64_t m, std::int64_t n, std::int64_t k) {
  const double mn = static_cast<double>(m), nn = static_cast<double>(n),
               kk = static_cast<double>(k);
  return nn * kk * static_cast<double>(dtype_size(b_type)) / 20.0 + 2.0 * mn * nn * kk / 150.0;
}

std::int64_t piece_cols(std::int64_t cols, int unit, double cell_ns) {
  const auto pieces = static_cast<std::int64_t>(
      std::clamp(cell_ns / kMinPieceNs, 1.0, static_cast<double>(kPiecesPerThread)));
  const std::int64_t width = (cols + pieces - 1) / pieces;
  return (width + unit - 1) / unit * unit;
}

std::int64_t decode_panel_bytes() {
  static const std::int64_t bytes = [] {  // once: every decode block asks
    const std::int64_t l1d = cpu_info().l1d_bytes;
    const std::int64_t quarter = (l1d > 0 ? l1d : 32 * 1024) / 4 / 4096 * 4096;
    return std::clamp<std::int64_t>(quarter, 8 * 1024, kDecodePanelChunkBytes);
  }();
  return bytes;
}

bool decodes_panel(const Params& p, const KernelFamily& f) {
  if (f.isa == Isa::avx2)
    return panel_shape(p.b_type, p.m, p.k, kDecodePanelMinMAvx2, kDecodePanelMinK16Avx2);
  return f.isa == Isa::avx512 && panel_shape(p.b_type, p.m, p.k);
}

bool decode_uses_k_tile(const Params& p, const KernelFamily& f) {
  if (decodes_bf16_pairs(p, f) || decodes_panel(p, f)) return false;
  return !decodes_fp8_pairs(p, f) || p.m > kDecodeRows;
}

bool decode_uses_scratch(const Params& p, const KernelFamily& f) {
  return (decode_uses_k_tile(p, f) && !decodes_fp8_pairs(p, f)) || decodes_panel(p, f);
}

bool direct_fp8_pairs(const Params& p, const KernelFamily& f) {
  const CpuInfo& c = cpu_info();
  return f.direct_fp8 != nullptr && c.avx512_bf16 && c.avx512vbmi && p.a_type == DType::fp8 &&
         p.b_type == DType::fp8 && p.trans_a == Trans::N && p.trans_b == Trans::T && p.k % 2 == 0 &&
         p.lda % 2 == 0 && p.ldb % 2 == 0;
}

bool direct_pairs(const Params& p, const KernelFamily& f) {
  if (direct_fp8_pairs(p, f)) return true;
  const auto aligned4 = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 4 == 0; };
  return f.direct_bf16 != nullptr && cpu_info().avx512_bf16 && p.a_type == DType::bf16 &&
         p.b_type == DType::bf16 && p.trans_a == Trans::N && p.trans_b == Trans::T &&
         p.k % 2 == 0 && p.lda % 2 == 0 && p.ldb % 2 == 0 && aligned4(p.a) && aligned4(p.b);
}

bool decode_ok(const Params& p, bool swap) {
  if (swap) return p.n <= kDecodeMaxM;
  return p.trans_b == Trans::T && p.m <= kDecodeMaxM;
}

bool direct_ok(const Params& p, const KernelFamily& f) {
  if (p.trans_b != Trans::T) return false;
  return direct_pairs(p, f) || p.a_type == DType::f32 || p.trans_a == Trans::N;
}

Params swapped(const Params& p) {
  Params q = p;
  q.a = p.b;
  q.a_type = p.b_type;
  q.trans_a = Trans::N;
  q.lda = p.ldb;
  q.a_scale = nullptr;
  q.lda_scale = 0;
  q.b = p.a;
  q.b_type = p.a_type;
  q.trans_b = Trans::T;
  q.ldb = p.lda;
  q.b_scale = nullptr;
  q.ldb_scale = 0;
  q.m = p.n;
  q.n = p.m;
  q.ldc = p.ldc != 0 ? p.ldc : p.n;
  q.schedule.swap = false;
  return q;
}

bool swap_ok(const Params& p, const KernelFamily& f) {
  return p.trans_a == Trans::N && p.trans_b == Trans::T && p.a_type != DType::fp8 &&
         p.b_type != DType::fp8 && direct_ok(swapped(p), f);
}

bool direct_on_k_pairs(const Params& p, const KernelFamily& f) {
  return f.direct_k2 != nullptr && 2 * p.m <= f.direct_lanes && !direct_pairs(p, f);
}

bool direct_converts(const Params& p, const KernelFamily& f) {
  return p.b_type != DType::f32 && !direct_pairs(p, f);
}

const KernelFamily& family(Isa isa) {
  for (const auto& f : kFamilies)
    if (f.isa == isa) return f;
  throw std::invalid_argument("gemm: no kernel family for this ISA");
}

const Blocking& blocking(Isa isa) {
  return table_row(isa).blocks;
}
std::string cpu_table_row_name(Isa isa) {
  return table_row(isa).name;
}

}  // namespace attain::gemm::detail

namespace attain::gemm {

bool isa_supported(Isa isa) {
  const auto& c = detail::cpu_info();
  switch (isa) {
    case Isa::scalar:
      return true;
    case Isa::avx2:
      return c.avx2 && c.fma && c.f16c;
    case Isa::avx512:
      return c.avx512f && c.avx512bw && c.avx512vl && c.avx512dq && c.avx2 && c.fma && c.f16c;
    case Isa::automatic:
      return true;
  }
  return false;
}

Isa detected_isa() {
  static const Isa isa = [] {
    if (const char* env = std::getenv("ATTAIN_ISA")) {
      const std::string_view s(env);
      for (Isa i : {Isa::scalar, Isa::avx2, Isa::avx512})
        if (s == isa_name(i)) {
          if (!isa_supported(i))
            throw InputError("ATTAIN_ISA=" + std::string(s) + ": not supported by this CPU");
          return i;
        }
      throw InputError("ATTAIN_ISA=" + std::string(s.substr(0, 80)) +
                       ": expected scalar, avx2 or avx512");
    }
    for (const auto& f : detail::kFamilies)
      if (isa_supported(f.isa)) return f.isa;
    return Isa::scalar;
  }();
  return isa;
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::automatic:
      return "auto";
    case Isa::scalar:
      return "scalar";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
  }
  return "?";
}

std::string_view path_name(Path p) {
  switch (p) {
    case Path::automatic:
      return "auto";
    case Path::packed:
      return "packed";
    case Path::decode:
      return "decode";
    case Path::direct:
      return "direct";
  }
  return "?";
}

std::string_view fuse_name(Fuse f) {
  switch (f) {
    case Fuse::automatic:
      return "auto";
    case Fuse::on:
      return "1";
    case Fuse::off:
      return "0";
  }
  return "?";
}

std::string_view order_name(Order o) {
  switch (o) {
    case Order::automatic:
      return "auto";
    case Order::mk:
      return "mk";
    case Order::km:
      return "km";
  }
  return "?";
}

}  // namespace attain::gemm
