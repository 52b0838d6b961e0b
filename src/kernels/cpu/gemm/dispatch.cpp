// The kernel families in order, and the predicates that say which route each path's kernels take
// for a product on this CPU (bf16 pairs, fp8 pairs, converted W, k pairs, swapped operands).
#include "kernels/cpu/gemm/dispatch.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attain/op.hpp"
#include "core/util.hpp"

namespace attain::gemm::detail {

namespace {

// Kernel families, best first: the default is the first that cpu_features() runs. Off x86 only
// the portable family is built.
const KernelFamily* const kFamilies[] = {
#if defined(__x86_64__)
    &avx512_family, &avx2_family,
#endif
    &scalar_family};

const KernelFamily* find_family(Isa isa) {
  for (const KernelFamily* f : kFamilies)
    if (f->isa == isa) return f;
  return nullptr;
}

}  // namespace

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
  return f.direct_k2 != nullptr && p.m <= f.direct_lanes && !direct_pairs(p, f);
}

std::int64_t direct_block_rows(std::int64_t m, int threads_m, const KernelFamily& f) {
  return round_up(ceil_div(m, threads_m), f.direct_panel);
}

bool direct_converts(const Params& p, const KernelFamily& f) {
  return p.b_type != DType::f32 && !direct_pairs(p, f);
}

const KernelFamily& family(Isa isa) {
  if (const KernelFamily* f = find_family(isa)) return *f;
  throw std::invalid_argument("gemm: no kernel family for this ISA in this build");
}

}  // namespace attain::gemm::detail

namespace attain::gemm {

bool isa_supported(Isa isa) {
  if (isa == Isa::automatic) return true;
  const detail::KernelFamily* f = detail::find_family(isa);
  return f != nullptr && isa_level(cpu_features()) >= f->needs;
}

Isa detected_isa() {
  static const Isa isa = [] {
    for (const detail::KernelFamily* f : detail::kFamilies)
      if (isa_supported(f->isa)) return f->isa;
    return Isa::scalar;
  }();
  return isa;
}

}  // namespace attain::gemm
