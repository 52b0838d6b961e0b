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
// for the kernel family wins, so generic rows come last. Figures from bench_gemm sweeps
// (docs/gemm.md).
struct TableRow {
  const char* name;
  std::string_view vendor;
  int family;
  Isa isa;
  Blocking blocks;
};
constexpr std::int64_t kMiB = 1 << 20;
// zen5 rows: bench_gemm / CPU-time sweeps on 2026-11-30 (docs/gemm.md). KC 512 and NC 512:
// the B micro-panel (KC x 32) streams from L2 as fast as from L1 on Zen 5, and fewer KC
// passes over C plus a KC x NC block of B that stays in L2 beat an L1-sized micro-panel
// (2048^3 fp32, 1 thread: 176 -> 190-198 GFLOP/s; 128x32768x512, 2 threads: 209 -> 267);
// decode beats packing up to M 32 (fp32) and M 64 (bf16, fp8), and where the packed path
// multiplies bf16 pairs up to M 32 for bf16 A and B, which the decode path multiplies as bf16
// pairs too (2026-12-01, 2 threads, cold, min of 3: N x K = 24576 x 1536 decode faster at M=16
// / 24 / 32 / 40 by 28 / 6 / 17 / 11%; 16384 x 4096, 7168 x 2048, 2112 x 7168, 4096 x 4096
// within 10% either way at 24-32, packed faster at 48-64 by 10-20%; before that decode: M 16)
// and M 32 for fp8 without VBMI (N=7168 K=2048: decode faster at 32 by 14%, even at 40,
// packed faster at 48 by 20%). fp32 takes the direct path for M 12..160, N >= 256, K >= 256
// (2026-12-01, 2 threads, cold, min of 3, against the decode path below M 32 and the packed
// path above: N x K = 7168 x 2048 M=8 0.87x, 12 1.05x, 16 1.39x, 32 1.74x, 48 1.33x, 64 1.43x,
// 96 1.17x, 128 1.13x, 160 1.08x, 192 0.99x, 256 0.95x; 16384 x 4096, 24576 x 1536 and
// 2112 x 7168 alike, M=192 0.95-1.13x; 128 x N x 2048: N=128 0.91x, 256 1.03x, 1024 1.13x;
// with two accumulator sets at M <= 32, fp32 M=8 1.05x (7168 x 2048), 1.21x (16384 x 4096) in
// the scratch program but 0.70-0.92x in attain bench (8 x 24576 x 1536, batched 8 x 2048 x 128),
// so M=8 stays on the decode path; K=128 fp32, N=2048: direct 1.2-1.5x slower than the decode
// path at M 8-32 and than packed at 64, K=256-1024 1.0-1.5x faster).
// bf16 pairs from M 12 with the two sets (against the pairs decode: M=8 0.99-1.10x, 12
// 1.29-1.65x on 4096 x 4096, 7168 x 2048, 2048 x 768).
// bf16 A and W as bf16 pairs for M 12..128 (16..128 before the two sets) (same runs, bf16 C,
// against the bf16 pairs decode and packed paths: 4096 x 4096 M=8 0.80x, 16 1.28x, 32 1.60x,
// 64 1.41x, 128 1.12x, 192 0.97x; 7168 x 2048, 4096 x 14336, 32768 x 512, 2112 x 7168: M=12
// 0.89-1.34x, 16 1.04-1.37x, 32 1.60-1.99x, 128 1.01-1.28x, 160 0.97-1.20x). The AVX2 family on Zen
// 5 (forced; what an AVX2-only CPU runs): direct for fp32 M 12..192 (7168 x 2048 M=8 0.94x,
// 12 1.14x, 16 1.43x, 32-64 1.31x, 128 1.10x, 192 1.09x, 256 1.04x; 4096 x 14336 M=16 1.46x; 4096 x
// 4096 M=128 1.11x, 192 1.11x). The generic rows (other CPUs) leave the direct path to the tuner
// until measured there. W converted a tile at a time (fp16 x fp16, fp32 A with bf16 or fp8 W) for
// M 32..160 (4096 x 4096 against the default: fp16 M=16 1.05x, 32 1.23x, 64 1.27x, 128 1.19x,
// 192 1.05x; fp32 x bf16 16 0.85x, 32 1.10x, 64 1.31x, 128 1.21x; fp32 x fp8 16 1.09x, 32 1.35x,
// 64 1.52x, 128 1.13x; the AVX2 family fp16 M=32 1.05x, 128 1.13x). Columns: mc, kc, B panel bytes,
// nc, decode max M (fp32, 16/8-bit, bf16 pairs, fp8 pairs), direct min / max M, direct min N,
// direct min / max M on bf16 pairs, on converted W, direct min K (fp32 and converted W), direct
// max KC, direct A^T block bytes, swap min M, direct split-M max N, swap max N, km B block bytes,
// direct min M and min K on k pairs.
// The direct path's threads split M (whole 64-row panels, as many per thread) for N <= 512, and
// the default takes the direct path there from half of direct min N (2026-12-01, 2 threads, cold,
// best of 15, against the default before: fp32 M x N x K = 128x128x2048 1.16x, 128x128x512
// 1.24x, 128x64x2048 1.19x, 128x128x7168 1.12x, 128x192x2048 1.38x, 128x256x2048 (direct split
// N before) 1.08x, 128x256x512 1.12x, 128x512x1024 1.13x, 128x4096x4096 level (not split);
// bf16 pairs 1.25x, 1.10x, 1.17x, 1.13x, 1.49x, 1.23x, 0.96x, 1.04x; with panels that do not
// divide evenly the split loses: 160x128x7168 0.68-0.86x, 192x128x2048 0.88-0.96x; N = 64 with
// a long K too: 128x64x7168 fp32 0.89-0.94x, bf16 0.93-1.0x, hence N >= 128). Since
// 2026-12-02 (Zen 4) from half of direct min N whether M splits or not (threads on N where the
// panels do not divide evenly, or the last thread would get under 7/8 of the others' rows), on 1
// thread too (resolve_with's few_cols has the figures).
// The swapped direct path (Schedule::swap: A's rows read in place, W^T packed, C written as
// rows) from M = 512 where N is from the direct path's minimum M for the swapped operands' route
// up to 256 (2026-12-01,
// 2 threads, cold, best of 25, against the packed path: fp32 M x N x K = 256x128x128 1.13x,
// 512x128x128 1.18x, 1024x128x128 1.19x, 2048x128x512 1.28x, 512x128x2048 1.15x, 2048x64x512
// 1.39x, 4096x32x4096 1.51x, 128x128x2048 0.93x; bf16 pairs 256x128x128 1.04x, 512x128x128
// 1.13x, 1024x128x128 1.09-1.21x, 2048x128x512 1.28x, 512x128x2048 1.27x, 4096x32x4096 1.50x;
// fp16 256x128x128 0.95x, 512x128x128 1.0x, 1024x128x128 1.27x, 2048x128x512 1.14x; N = 192
// and 256: fp32 2048x256x128 1.11x, 2048x256x512 1.11x, 1024x192x1024 1.17x, 4096x256x128
// 1.13x, bf16 1.12-1.24x; N = 512: fp32 1.0x, bf16 1.07x). The AVX2 family from M = 256 (fp32
// 256x128x512 1.25x, 512x128x128 1.14x, 2048x128x512 1.48x, 2048x64x512 2.03x, 2048x256x512
// 1.24x, 2048x256x128 1.14x, 1024x192x1024 0.98x; fp16 1.08-1.47x).
// zen4 row (family 0x19 with AVX-512: Genoa / Raphael; Zen 3 has no AVX-512 and keeps the generic
// AVX2 row): 2026-12-02, an EPYC guest with 32 KiB L1d, 1 MiB L2, 512-bit FMAs at half Zen 5's
// rate (117 GFLOP/s a core). The zen5 row against the generic one there, the quick suite, 2
// threads, 2 rounds in both orders, min: 1.09x geomean over 60 ops (direct path M
// 32-128 1.17-1.50x; 128x128x2048 1.19-1.24x; nothing below 0.98x in a rerun). The zen5 blocks stay
// (2048^3 fp32: KC 256 0.93x, 384 0.96x, MC 96 1.03x, 192 0.99x). The direct path up to M = 256 on
// every route (against zen5's 160 / 128: 4 rounds, both orders; fp32 256x4096x4096 1.00x,
// 256x7168x2048 1.02x, 224x2048x2048 1.04x; bf16 192x4096x4096 1.07x, 160x7168x2048 1.14x,
// 256x2112x7168 1.14x, 256x4096x4096 1.09x; fp16 192x4096x4096 1.21x, 256x7168x2048 1.11x; fp32
// 384x7168x2048 0.95x in a scratch program). fp32 at M = 8 on the direct path: 1.14-1.17x on N x K
// = 24576 x 1536 and 16384 x 4096 but 0.84-0.89x on 7168 x 2048 and 4096 x 14336, so it starts at
// 12 as on Zen 5; bf16 pairs at M = 12 were split (0.88x and 1.12x), so 12 too. fp32 M = 5..8 on
// the direct path's k-pairs kernel (direct_k2) from K = 1536 (2026-12-02, attain bench, 2 threads,
// cold, against the decode path, 3-6 rounds in both orders, min: 8 x 24576 x 1536 1.16-1.35x,
// 8 x 7168 x 2048 1.13-1.39x, 8 x 4096 x 14336 1.12-1.15x, 7 x 16384 x 2048 1.16x, 8 x 4096 x
// 4096 1.13x, 8 x 2112 x 7168 1.10x, 5 x 24576 x 1536 1.20x, 6 x 4096 x 4096 1.01x, 5 x 2112 x
// 7168 1.03x; shorter K mixed: K = 1024 1.00x, 768 1.22x, 512 0.87-0.91x, batched K = 128
// 0.86-0.88x, 256 1.10x). The kernel's 64-bit broadcasts cost Zen 4 a vector-pipe slot each:
// it runs 1.4 W values a cycle in L1 where the decode panel's plain loads run 2, so the panel
// keeps the shorter rows it streams well. The swapped direct path from M = 192 (not 512), where
// the direct path ran too (2026-12-02; resolve_with has the figures). bf16 pairs at M <= 32 stay
// on the decode path for K = 512-2047 (2 threads, cold, the decode path against the direct
// path: 16x4096x512 1.19x, 16x4096x1024 1.22x, 24x2048x768 1.33x, 24x4096x1536 1.12x,
// 28x4096x1024 1.09x, 32x512x512 1.12x, 32x4096x1024 1.00x; the direct path from K = 2048:
// 16x4096x2048 1.24x, 32x4096x2048 1.46x, 12x4096x2048 1.02x; and up to K = 384: 16x8192x128
// 1.48x, 16x8192x256 1.25x, 32x8192x256 1.47x, 16x4096x384 1.18x). The swapped operands for N up
// to 512 where M >= 2 N (resolve_with has the figures; at M = N with a long K they lost: bf16
// 512x512x7168 0.87x). The direct path up to M = 1024 on every route, its K blocks up to 4096
// deep (an 8 MiB budget for the A^T block: M = 256 takes K = 4096 whole, 1024 takes 2048):
// oneDNN's brgemm runs the same structure on large products (6 rows broadcast in place against
// a packed operand 64 wide, K unblocked: ONEDNN_JIT_DUMP). 2026-12-03, attain bench, 2 rounds in
// both orders, against M <= 256 with the A^T block in 512 KiB (KC 256-1024), min of each, 2 / 1
// threads: fp32 512x14336x4096 1.07x / 1.08x, 512x4096x4096 1.07x / 1.06x, 384x7168x2048 1.08x /
// 1.08x, 512x1024x4096 1.09x / 1.06x, 1024x2112x7168 1.01x / 1.02x, 256x4096x4096 (KC 1024 ->
// 4096) 1.10x / 1.10x; bf16 pairs 1024x4096x4096 1.05x / 1.05x; fp16 512x4096x4096 1.07x / 1.08x.
// From M = 2048 the packed path stays (fp32 2048^3 0.99x / 0.98x, bf16 2048x4096x1024 0.97x /
// 0.99x). The packed A^T stays within 32 MiB (resolve_with: 1024 rows up to K = 8192).
// fp8 x fp8 on the direct path (bf16 pairs, block scales in the kernel) from M = 32, the decode
// path below (2026-12-03, 2 threads, cold, a scratch program, direct against decode, min of 5-6:
// M = 32 x N x K = 32 x 4096 x 7168 1.27x, 32 x 2112 x 7168 1.34x, 32 x 7168 x 2048 1.30x, 32 x
// 24576 x 1536 1.30x, 32 x 4096 x 512 / 1024 / 1536 1.23x / 1.28x / 1.30x, 1 thread 1.11-1.19x;
// M = 48-64 1.31-1.42x; M = 28 0.91-1.16x, 24 level, 16 0.93-1.02x, 8 0.59-0.63x), up to M =
// 2048 (against the packed path, which converts and packs all of W: 2048 x 2112 x 7168 1.15x,
// 2048 x 7168 x 2048 1.10x, 2048 x 4096 x 4096 1.15x, 1536 x 4096 x 4096 1.07x; 4096 x 4096 x
// 4096 0.93-1.03x).

// zen4 row for the AVX2 kernels (family 0x19 without AVX-512: Zen 3; and Zen 4 run with
// ATTAIN_ISA=avx2, where it was measured, 2026-12-04, its AVX2 FMA rate being its AVX-512 one):
// the generic AVX2 row's blocks, with the direct path on the 6 x 16 asm kernel for fp32 M
// 12..384 and converted W M 32..384 (A^T blocks up to 8 MiB, KC up to 4096, as the AVX-512 row),
// split M from N = 128, swapped from M = 256 for N <= 256 (N <= 512 where M >= 2 N) and from
// M = 128 for K <= 512. Against the generic row, attain bench, 2 threads, cold, alternated: fp32
// 32x24576x1536 2.2x, 12x7168x2048 1.18x, 16x4096x4096 1.22-1.34x, 64x2048x256 1.24x,
// 128x4096x4096 1.2-1.35x, 128x32768x512 1.26-1.49x, batched 8 x (2048x128x512) 1.2x, 4 x
// (1024x128x128) 1.2x, fp16 32x4096x4096 1.28-1.34x, bf16 128x4096x4096 1.38x; 192 x N x K
// level (0.98x); the split M 128x128x2048 1.17-1.22x, 128x128x7168 1.15-1.18x, 64x128x2048 1.36x
// (128x64, 128x256, 128x512 level); M 256-512 on the direct path against packed 0.99-1.07x at 1
// and 2 threads in one phase, but in a slower one (the A^T block streams from L3, which the
// neighbours share) 512x4096x4096 0.87-0.94x and 512x14336x4096 0.87-0.91x, while 384x7168x2048
// stayed level (0.94-1.04x) and 256x4096x4096 gained 0.98-1.16x: so to M = 384 (1024x2112x7168
// 0.98x at 1 thread); the swap fields level to 1.1x (192x128x256 1.11x, 1024x512x4096 1.06x).
// fp32 operands on the packed path take MC 72 and KC 768 (the km order's NC from its 2 MiB
// budget: 672), where 144 x 256 stays for the converting routes (a thirty-second session's
// bf16 512x4096x4096 lost 0.95x at KC 768): 2026-12-04, a scratch program over the public API
// alternating schedules in one process, min of 4-10, 1 thread: 2048^3 0.930 against 0.906-0.920
// of the FMA peak, 512x4096x4096 0.873-0.900 against 0.818-0.881, 1024x2112x7168 0.912-0.916
// against 0.909-0.910, 512x14336x4096 0.876 against 0.839 (MC 96 / KC 512 between them, MC 48 /
// KC 1024 level with 72 / 768, KC 768 with NC 2048 lower: 0.85); attain bench alternated,
// cold: 1 thread 1.03x geomean over those four (1.00-1.08x), 2 threads 1.02x (0.99-1.10x).
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
