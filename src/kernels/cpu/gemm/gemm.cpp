// The portable GEMM framework: argument checks, the schedule heuristic, the BLIS loop nest
// with packing, the decode path and the threading. Everything ISA-specific is behind the
// KernelFamily of dispatch.hpp.
//
// Packed path, per thread (each thread owns a block of C of the thread grid), order mk:
//   jc (NC cols)  pack B[K, nc] -> kc-blocks of NR-wide panels          (L3 / memory)
//    ic (MC rows)
//     pc (KC)      pipeline: pack A[mc, kc] into stage slot (pc+S-1) % S  (L2)
//      jr (NR)      B micro-panel kc x NR                                 (L1)
//       ir (MR)      micro-kernel: MR x NR of C in registers
// B is packed for the whole K of a column block, so C can be accumulated over all kc blocks
// of one MC x NC tile before it is written: fp32 C is updated in place; bf16/fp16 C goes
// through an fp32 tile and is rounded once (f32_to_bf16 / f32_to_f16).
// Order km (BLIS's; fp32 C): jc (NC) > pc (KC): pack B[kc, nc] (L3) > ic (MC): pipeline over
// the MC blocks, pack A[mc, kc] (L2) > jr > ir, C updated once per kc block.
#include "attain/gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "attain/threadpool.hpp"
#include "attain/tile.hpp"
#include "kernels/cpu/gemm/dispatch.hpp"
#include "kernels/cpu/gemm/kernels.hpp"

namespace attain::gemm {

namespace {

using detail::Blocking;
using detail::KernelFamily;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}
std::int64_t round_up(std::int64_t a, std::int64_t b) {
  return ceil_div(a, b) * b;
}

// Grow-only, 64-byte-aligned scratch: after the first calls of a shape, no allocation.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { std::free(p_); }
  float* get(std::int64_t floats) {
    const auto need = static_cast<std::size_t>(std::max<std::int64_t>(floats, 16));
    if (need > n_) {
      std::free(p_);
      const std::size_t bytes = round_up(static_cast<std::int64_t>(need * sizeof(float)), 64);
      p_ = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (p_ == nullptr) throw std::bad_alloc();
      n_ = need;
    }
    return p_;
  }

 private:
  float* p_ = nullptr;
  std::size_t n_ = 0;
};

// Per-thread workspaces (pool threads are persistent, so these live across calls).
struct Workspace {
  Buffer b_pack, c_tile, tmp, out, a_conv;
  Buffer a_pack[tile::kMaxStages];
};
Workspace& workspace() {
  thread_local Workspace ws;
  return ws;
}

// A spin-wait hint for the core (x86 `pause`), nothing elsewhere.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// ---- resolved problem ----
struct Problem {
  const Params* p;
  const KernelFamily* fam;
  Blocking blk;
  Schedule s;  // resolved: every field set
  std::int64_t lda, ldb, ldc, lda_s, ldb_s;
  const float* e4m3;
  // The decode path: A as fp32 rows with scales applied (p->a itself when it already is).
  const float* a32 = nullptr;
  std::int64_t lda32 = 0;
  // ...or, where the decode path multiplies bf16 pairs (`pairs_decode`: decodes_bf16_pairs,
  // decodes_fp8_pairs), A as bf16 rows: bf16 A itself, fp8 A unscaled in the kernel's order
  // (permute_a_fp8_pairs, K values per row).
  detail::Decode pairs_decode = nullptr;
  const std::uint16_t* a16 = nullptr;
  std::int64_t lda16 = 0;
  // The direct path: A^T in panels of the family's direct_panel rows P, all of K each (panel q
  // at at + q * P * K values, K / 2 words on bf16 pairs), packed before the blocks run (or by
  // them: at_in_block below).
  float* at = nullptr;
  // ...and its kernel (on bf16 pairs - `pairs` below, set for the direct path by direct_pairs -
  // the one for 32-bit words).
  detail::DirectKernel direct = nullptr;
  // ...on k pairs (direct_k2: two consecutive k of a row in each pair of lanes, A^T laid out for
  // it by pack_at) where the one panel has at most direct_lanes / 2 rows of A.
  bool k2 = false;
  // ...or fp8 A and W as bf16 pairs (direct_fp8_pairs: the kernel direct_fp8), with A's scales
  // per panel beside A^T: panel q's at as + q * P * ceil(K / 128), K block b's P (the panel's
  // width) values at + b * P (DirectScales::a).
  bool scaled = false;
  float* as = nullptr;
  // ...packed by the blocks themselves, each its own panels a KC block at a time, where the blocks
  // split M into whole panels (threads_n 1): no block waits for the others' pieces, and none reads
  // A^T another core wrote.
  bool at_in_block = false;
  // The packed path multiplies bf16 A and B as bf16 pairs (the family's ukernel_bf16 on a CPU
  // with AVX512-BF16): panels of 32-bit words, two bf16 of consecutive k each, so every K
  // offset into a packed panel is halved (kw = 2).
  bool pairs = false;
  int kw = 1;
  // Schedule::swap: this problem is the caller's with the operands swapped (detail::swapped),
  // its C the caller's C transposed: element (i, j) at c + j * ldc + i.
  bool ct = false;
  // Split-K: slices of kslice K elements, partial sums in `partial` (slices x m x n).
  int slices = 1;
  std::int64_t kslice = 0;
  float* partial = nullptr;
};

// op(A)(i, p) and op(B)(p, j) storage addresses.
const std::byte* a_at(const Problem& pr, std::int64_t i, std::int64_t p) {
  const auto es = static_cast<std::int64_t>(dtype_size(pr.p->a_type));
  const std::int64_t off = pr.p->trans_a == Trans::N ? i * pr.lda + p : p * pr.lda + i;
  return static_cast<const std::byte*>(pr.p->a) + off * es;
}
const std::byte* b_at(const Problem& pr, std::int64_t p, std::int64_t j) {
  const auto es = static_cast<std::int64_t>(dtype_size(pr.p->b_type));
  const std::int64_t off = pr.p->trans_b == Trans::T ? j * pr.ldb + p : p * pr.ldb + j;
  return static_cast<const std::byte*>(pr.p->b) + off * es;
}
float a_scale(const Problem& pr, std::int64_t i, std::int64_t p) {
  return pr.p->a_type == DType::fp8 ? pr.p->a_scale[i * pr.lda_s + p / kFp8Block] : 1.0f;
}
float b_scale(const Problem& pr, std::int64_t p, std::int64_t j) {
  return pr.p->b_type == DType::fp8 ? pr.p->b_scale[(j / kFp8Block) * pr.ldb_s + p / kFp8Block]
                                    : 1.0f;
}

// Converts `len` elements of a K-contiguous row starting at K index p0 (scales per 128 block).
template <class At, class Scale>
void convert_k_run(const Problem& pr, DType t, At at, Scale scale, std::int64_t p0,
                   std::int64_t len, float* dst) {
  for (std::int64_t b0 = p0; b0 < p0 + len;) {
    const std::int64_t b1 =
        t == DType::fp8 ? std::min(p0 + len, (b0 / kFp8Block + 1) * kFp8Block) : p0 + len;
    pr.fam->convert(at(b0), t, b1 - b0, scale(b0), pr.e4m3, dst + (b0 - p0));
    b0 = b1;
  }
}

// Rows [i0, i0 + rows) of A stored (M, K), K [p0, p0 + len), as fp32 rows `ld` apart at dst.
void convert_a_rows(const Problem& pr, std::int64_t i0, int rows, std::int64_t p0, std::int64_t len,
                    float* dst, std::int64_t ld) {
  for (int r = 0; r < rows; ++r)
    convert_k_run(
        pr, pr.p->a_type, [&](std::int64_t q) { return a_at(pr, i0 + r, q); },
        [&](std::int64_t q) { return a_scale(pr, i0 + r, q); }, p0, len, dst + r * ld);
}

// Rows [j0, j0 + rows) of W stored (N, K) (B with trans_b = T), likewise.
void convert_w_rows(const Problem& pr, std::int64_t j0, int rows, std::int64_t p0, std::int64_t len,
                    float* dst, std::int64_t ld) {
  for (int r = 0; r < rows; ++r)
    convert_k_run(
        pr, pr.p->b_type, [&](std::int64_t q) { return b_at(pr, q, j0 + r); },
        [&](std::int64_t q) { return b_scale(pr, q, j0 + r); }, p0, len, dst + r * ld);
}

// fp8 as bf16 pairs: `rows` rows of kc e4m3 values (row r at at(r)) as 32-bit words of two
// bf16 each, row after row in tmp (kc / 2 words a row), then transposed into a panel of R rows.
// The values are unscaled (the scales go on the sums) and exact: e4m3 fits bf16.
// With AVX512-VBMI each row goes to bf16 in one pass of byte lookups (e4m3_to_bf16_avx512vbmi).
template <class At>
void pack_fp8_pairs(const Problem& pr, int rows, std::int64_t kc, int R, At at, float* tmp,
                    float* dst) {
  const bool vbmi = detail::cpu_info().avx512vbmi;  // pairs run only in the AVX-512 family
  // The rows are short runs (kc bytes, 8 lines at KC 512) at a stride of K: the lookups wait on
  // each row's first lines. Fetching the row four on while this one converts halves the
  // conversion's share of an fp8 product.
  constexpr int kAheadRows = 4;
  for (int r = 0; r < rows; ++r) {
    float* f = tmp + r * kc;
    if (r + kAheadRows < rows) {
      const auto* nx = reinterpret_cast<const char*>(at(r + kAheadRows));
      for (std::int64_t b = 0; b < kc; b += 64) __builtin_prefetch(nx + b, 0, 3);
    }
    if (vbmi) {
      detail::e4m3_to_bf16_avx512vbmi(reinterpret_cast<const std::uint8_t*>(at(r)), kc, pr.e4m3,
                                      reinterpret_cast<std::uint16_t*>(f));
      continue;
    }
    pr.fam->convert(at(r), DType::fp8, kc, 1.0f, pr.e4m3, f);
    auto* w = reinterpret_cast<std::uint32_t*>(f);
    for (std::int64_t q = 0; q < kc / 2; ++q) {  // w[q] lands at or before f[2q]: in place
      const std::uint32_t lo = std::bit_cast<std::uint32_t>(f[2 * q]) >> 16;
      const std::uint32_t hi = std::bit_cast<std::uint32_t>(f[2 * q + 1]) & 0xffff0000u;
      w[q] = lo | hi;
    }
  }
  pr.fam->interleave(tmp, kc, rows, kc / 2, R, dst);
}

// Packs rows [i0, i0+rows) x K [p0, p0+kc) of op(A) into an MR-panel (kc x MR; rows past
// `rows` zero): the packed path's A panels (MR = the family's mr) and the direct path's A^T
// panels (MR = the panel's width). tmp: rows x kc floats.
void pack_a_panel(const Problem& pr, std::int64_t i0, int rows, std::int64_t p0, std::int64_t kc,
                  int MR, float* dst, float* tmp) {
  const Params& p = *pr.p;
  if (pr.pairs && p.a_type == DType::fp8) {
    pack_fp8_pairs(
        pr, rows, kc, MR, [&](int r) { return a_at(pr, i0 + r, p0); }, tmp, dst);
    return;
  }
  if (pr.pairs) {  // bf16 pairs: the same transpose, on 32-bit words
    pr.fam->interleave(reinterpret_cast<const float*>(a_at(pr, i0, p0)), pr.lda / 2, rows, kc / 2,
                       MR, dst);
    return;
  }
  if (p.trans_a == Trans::N && p.a_type == DType::f32) {  // no conversion: interleave in place
    pr.fam->interleave(reinterpret_cast<const float*>(a_at(pr, i0, p0)), pr.lda, rows, kc, MR, dst);
    return;
  }
  if (p.trans_a == Trans::N) {
    convert_a_rows(pr, i0, rows, p0, kc, tmp, kc);
    pr.fam->interleave(tmp, kc, rows, kc, MR, dst);
    return;
  }
  // A stored (K, M): each k gives MR contiguous values (fp8 scales differ per row: scalar).
  for (std::int64_t q = 0; q < kc; ++q) {
    float* d = dst + q * MR;
    if (p.a_type == DType::fp8) {
      for (int r = 0; r < rows; ++r)
        d[r] = pr.e4m3[static_cast<std::uint8_t>(*a_at(pr, i0 + r, p0 + q))] *
               a_scale(pr, i0 + r, p0 + q);
    } else {
      pr.fam->convert(a_at(pr, i0, p0 + q), p.a_type, rows, 1.0f, pr.e4m3, d);
    }
    for (int r = rows; r < MR; ++r) d[r] = 0.0f;
  }
}

// Packs columns [j0, j0+cols) x K [p0, p0+kc) of op(B) into an NR-panel (kc x NR).
void pack_b_panel(const Problem& pr, std::int64_t j0, int cols, std::int64_t p0, std::int64_t kc,
                  float* dst, float* tmp) {
  const int NR = pr.fam->nr;
  const Params& p = *pr.p;
  if (pr.pairs && p.b_type == DType::fp8) {
    pack_fp8_pairs(
        pr, cols, kc, NR, [&](int c) { return b_at(pr, p0, j0 + c); }, tmp, dst);
    return;
  }
  if (pr.pairs) {
    pr.fam->interleave(reinterpret_cast<const float*>(b_at(pr, p0, j0)), pr.ldb / 2, cols, kc / 2,
                       NR, dst);
    return;
  }
  if (p.trans_b == Trans::T && p.b_type == DType::f32) {
    pr.fam->interleave(reinterpret_cast<const float*>(b_at(pr, p0, j0)), pr.ldb, cols, kc, NR, dst);
    return;
  }
  if (p.trans_b == Trans::T) {
    convert_w_rows(pr, j0, cols, p0, kc, tmp, kc);
    pr.fam->interleave(tmp, kc, cols, kc, NR, dst);
    return;
  }
  // B stored (K, N): NR contiguous values per k; j0 is NR-aligned and 128 % NR == 0, so one
  // fp8 scale covers the run.
  for (std::int64_t q = 0; q < kc; ++q) {
    float* d = dst + q * NR;
    pr.fam->convert(b_at(pr, p0 + q, j0), p.b_type, cols, b_scale(pr, p0 + q, j0), pr.e4m3, d);
    for (int c = cols; c < NR; ++c) d[c] = 0.0f;
  }
}

// An edge tile's sums t (row stride NR) onto C[mr, nr] (row stride ldc): C = fma(beta, C,
// scale(i) * t). beta 0 and 1, the cases inside the K loop, go without a libm call (generic code
// has no FMA instruction; fma(1, c, x) == c + x bit for bit), so those loops vectorize.
template <class Scale>
void update_edge(float* c, std::int64_t ldc, const float* t, int NR, int mr, int nr, float beta,
                 Scale scale) {
  for (int i = 0; i < mr; ++i) {
    const float s = scale(i);
    float* ci = c + i * ldc;
    const float* ti = t + i * NR;
    if (beta == 0.0f) {
      for (int j = 0; j < nr; ++j) ci[j] = s * ti[j];
    } else if (beta == 1.0f) {
      for (int j = 0; j < nr; ++j) ci[j] += s * ti[j];
    } else {
      for (int j = 0; j < nr; ++j) ci[j] = std::fma(beta, ci[j], s * ti[j]);
    }
  }
}

float load_c(DType t, const void* c, std::int64_t idx) {
  switch (t) {
    case DType::bf16:
      return bf16_to_f32(static_cast<const std::uint16_t*>(c)[idx]);
    case DType::f16:
      return f16_to_f32(static_cast<const std::uint16_t*>(c)[idx]);
    default:
      return static_cast<const float*>(c)[idx];
  }
}
void store_c(DType t, void* c, std::int64_t idx, float v) {
  switch (t) {
    case DType::bf16:
      static_cast<std::uint16_t*>(c)[idx] = f32_to_bf16(v);
      break;
    case DType::f16:
      static_cast<std::uint16_t*>(c)[idx] = f32_to_f16(v);
      break;
    default:
      static_cast<float*>(c)[idx] = v;
      break;
  }
}

// C[rows, cols] (at row i0, col j0) = alpha * src + beta * C, src fp32 with leading dim lds.
void write_back(const Problem& pr, std::int64_t i0, std::int64_t j0, std::int64_t rows,
                std::int64_t cols, const float* src, std::int64_t lds) {
  const Params& p = *pr.p;
  if ((p.c_type == DType::bf16 || p.c_type == DType::f16) && pr.fam->round16 != nullptr) {
    for (std::int64_t i = 0; i < rows; ++i)
      pr.fam->round16(p.c_type, src + i * lds, cols, p.alpha, p.beta,
                      static_cast<std::uint16_t*>(p.c) + (i0 + i) * pr.ldc + j0);
    return;
  }
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::int64_t idx = (i0 + i) * pr.ldc + j0 + j;
      const float ab = p.alpha * src[i * lds + j];
      store_c(p.c_type, p.c, idx,
              p.beta != 0.0f ? std::fma(p.beta, load_c(p.c_type, p.c, idx), ab) : ab);
    }
}

// ---- the packed path ----
// The micro-kernel over one packed A block (mc rows from row ic, panels of MR, kcw words a
// row of the panel) and one packed B block (nc columns from column jc, panels of NR) for the
// kc values of K from k_abs: C[ic:ic+mc, jc:jc+nc] at cbase (row stride ldc) = alpha * sums +
// beta * itself, edge tiles through a buffer. Both loop orders of packed_block end here.
struct BlockCall {
  const float* ap;  // the A block's panels
  const float* bp;  // the B block's panels
  std::int64_t ic, mc, jc, nc, k_abs, kc;
  const float* alpha;
  const float* beta;
  float* cbase;
  std::int64_t ldc;
  bool fetch_c;   // 16-bit C written after this block: fetch its lines while it computes
  bool prefetch;  // the pipeline has stages: touch the next kernel call's A and B panels
};
void multiply_blocks(const Problem& pr, const BlockCall& bc) {
  const Params& p = *pr.p;
  const KernelFamily& f = *pr.fam;
  const int MR = f.mr, NR = f.nr;
  const detail::UKernel uk = pr.pairs ? f.ukernel_bf16 : f.ukernel;
  const bool fp8_pairs = pr.pairs && p.a_type == DType::fp8;
  const std::int64_t kcw = bc.kc / pr.kw;
  alignas(64) float edge[32 * 32];  // MR x NR of any kernel family
  const float one = 1.0f, zero = 0.0f;
  for (std::int64_t jr = 0; jr < bc.nc; jr += NR) {
    const int nr = static_cast<int>(std::min<std::int64_t>(NR, bc.nc - jr));
    for (std::int64_t ir = 0; ir < bc.mc; ir += MR) {
      const int mr = static_cast<int>(std::min<std::int64_t>(MR, bc.mc - ir));
      if (bc.fetch_c) {
        const auto* c16 =
            static_cast<const std::uint16_t*>(p.c) + (bc.ic + ir) * pr.ldc + bc.jc + jr;
        for (int i = 0; i < mr; ++i) {
          __builtin_prefetch(c16 + i * pr.ldc, 1, 3);
          __builtin_prefetch(c16 + i * pr.ldc + nr - 1, 1, 3);
        }
      }
      detail::UkAux aux;
      if (bc.prefetch) {
        const bool last_ir = ir + MR >= bc.mc;
        aux.a_next = last_ir ? bc.ap : bc.ap + (ir + MR) * kcw;
        aux.b_next = last_ir ? bc.bp + (jr + NR) * kcw : bc.bp + jr * kcw;
      }
      float* c = bc.cbase + ir * bc.ldc + jr;
      if (fp8_pairs) {
        // One 128-wide scale block at a time: its sums times alpha * a_scale(row) *
        // b_scale(these columns) go onto C (C's first block with beta, then added).
        const float* a0 = bc.ap + ir * kcw;
        const float* b0 = bc.bp + jr * kcw;
        for (std::int64_t q = 0; q < bc.kc; q += kFp8Block) {
          const std::int64_t qw = std::min<std::int64_t>(kFp8Block, bc.kc - q) / 2;
          const float bs = b_scale(pr, bc.k_abs + q, bc.jc + jr);
          alignas(64) float rs[32];
          for (int i = 0; i < mr; ++i)
            rs[i] = *bc.alpha * a_scale(pr, bc.ic + ir + i, bc.k_abs + q) * bs;
          const float* bq = q == 0 ? bc.beta : &one;
          const float* aq = a0 + q / 2 * MR;
          const float* bq_panel = b0 + q / 2 * NR;
          if (mr == MR && nr == NR) {
            aux.row_scale = rs;
            uk(qw, &one, aq, bq_panel, bq, c, bc.ldc, 1, &aux);
            continue;
          }
          aux.row_scale = nullptr;
          uk(qw, &one, aq, bq_panel, &zero, edge, NR, 1, &aux);
          update_edge(c, bc.ldc, edge, NR, mr, nr, *bq, [&](int i) { return rs[i]; });
        }
        continue;
      }
      if (mr == MR && nr == NR) {
        uk(kcw, bc.alpha, bc.ap + ir * kcw, bc.bp + jr * kcw, bc.beta, c, bc.ldc, 1, &aux);
        continue;
      }
      uk(kcw, &one, bc.ap + ir * kcw, bc.bp + jr * kcw, &zero, edge, NR, 1, &aux);
      update_edge(c, bc.ldc, edge, NR, mr, nr, *bc.beta, [&](int) { return *bc.alpha; });
    }
  }
}

// Packs the A block rows [ic, ic + mc) x K [k_abs, k_abs + kc) as MR-panels at dst.
void pack_a_block(const Problem& pr, std::int64_t ic, std::int64_t mc, std::int64_t k_abs,
                  std::int64_t kc, float* dst, float* tmp) {
  const int MR = pr.fam->mr;
  for (std::int64_t ir = 0; ir < mc; ir += MR)
    pack_a_panel(pr, ic + ir, static_cast<int>(std::min<std::int64_t>(MR, mc - ir)), k_abs, kc, MR,
                 dst + ir * kc / pr.kw, tmp);
}

// Packs the B block columns [jc, jc + nc) x K [k_abs, k_abs + kc) as NR-panels at dst.
void pack_b_block(const Problem& pr, std::int64_t jc, std::int64_t nc, std::int64_t k_abs,
                  std::int64_t kc, float* dst, float* tmp) {
  const int NR = pr.fam->nr;
  for (std::int64_t jr = 0; jr < nc; jr += NR)
    pack_b_panel(pr, jc + jr, static_cast<int>(std::min<std::int64_t>(NR, nc - jr)), k_abs, kc,
                 dst + jr * kc / pr.kw, tmp);
}

// C[m0:m1, n0:n1] over K slice `slice` (-1: all of K; else its fp32 partial sums go to
// pr.partial, reduced by finish_split()), in the schedule's loop order (Order::km only where C
// is updated in place: fp32 C or a slice's partials; 16-bit C always goes through the mk
// order's fp32 tile).
void packed_block(const Problem& pr, std::int64_t m0, std::int64_t m1, std::int64_t n0,
                  std::int64_t n1, int slice) {
  const Params& p = *pr.p;
  const KernelFamily& f = *pr.fam;
  const int MR = f.mr, NR = f.nr;
  const std::int64_t k0 = slice < 0 ? 0 : slice * pr.kslice;
  const std::int64_t K = (slice < 0 ? p.k : std::min(p.k, k0 + pr.kslice)) - k0;
  // (MC past the block's rows packs no more of A: the buffers are sized by the rows.)
  const std::int64_t KC = pr.s.kc, MC = std::min<std::int64_t>(pr.s.mc, round_up(m1 - m0, MR));
  // Columns in equal blocks of at most the schedule's NC (whole NR panels): 1056 columns as 544 +
  // 512, not 1024 + 32 - a block of 32 columns packs all of A for them.
  const std::int64_t NC = [&] {
    const std::int64_t cols = n1 - n0, blocks = ceil_div(cols, pr.s.nc);
    return std::min<std::int64_t>(pr.s.nc, round_up(ceil_div(cols, blocks), NR));
  }();
  // Where the sums go: a slice's fp32 partials (alpha and beta come with the reduction), fp32 C
  // in place (alpha, and beta on the first K block), or an fp32 tile rounded into 16-bit C.
  const bool partial = slice >= 0;
  const bool into_c = !partial && p.c_type == DType::f32;
  const bool via_tile = !partial && !into_c;
  const float one = 1.0f, zero = 0.0f;
  const float* alpha = into_c ? &p.alpha : &one;
  const float* beta0 = partial ? &zero : into_c ? &p.beta : &zero;  // the first K block's
  auto c_at = [&](std::int64_t ic, std::int64_t jc) {
    return partial ? pr.partial + (slice * p.m + ic) * p.n + jc
                   : static_cast<float*>(p.c) + ic * pr.ldc + jc;
  };
  const std::int64_t ldc_mem = partial ? p.n : pr.ldc;
  const std::int64_t kw = pr.kw;  // K elements per packed value (2: bf16 pairs)
  Workspace& ws = workspace();
  float* tmp = ws.tmp.get(std::max(MR, NR) * KC);

  if (pr.s.order == Order::km && !via_tile) {
    // K blocks outside M blocks: B's KC x NC block packed once per K block, the MC blocks of A
    // streamed past it (the next one packed ahead, stages > 1), C updated per K block.
    const std::int64_t mtiles = ceil_div(m1 - m0, MC);
    const int stages = tile::clamp_stages(pr.s.stages, mtiles);
    float* bpack = ws.b_pack.get(KC * round_up(std::min(NC, n1 - n0), NR));
    float* apack[tile::kMaxStages];
    for (int st = 0; st < stages; ++st) apack[st] = ws.a_pack[st].get(round_up(MC, MR) * KC);
    for (std::int64_t jc = n0; jc < n1; jc += NC) {
      const std::int64_t nc = std::min(NC, n1 - jc);
      for (std::int64_t p0 = 0; p0 < K; p0 += KC) {
        const std::int64_t kc = std::min(KC, K - p0);
        pack_b_block(pr, jc, nc, k0 + p0, kc, bpack, tmp);
        auto load = [&](std::int64_t t, int slot) {
          const std::int64_t ic = m0 + t * MC;
          pack_a_block(pr, ic, std::min(MC, m1 - ic), k0 + p0, kc, apack[slot], tmp);
        };
        auto compute = [&](std::int64_t t, int slot) {
          const std::int64_t ic = m0 + t * MC;
          multiply_blocks(
              pr, {apack[slot], bpack, ic, std::min(MC, m1 - ic), jc, nc, k0 + p0, kc, alpha,
                   p0 == 0 ? beta0 : &one, c_at(ic, jc), ldc_mem, false, stages > 1});
        };
        tile::run_pipeline(mtiles, stages, load, compute);
      }
    }
    return;
  }

  // M blocks outside K blocks: B packed for the whole K of a column block, so C can be
  // accumulated over all kc blocks of one MC x NC tile before it is written: fp32 C is updated
  // in place; bf16/fp16 C goes through an fp32 tile and is rounded once (f32_to_bf16 /
  // f32_to_f16).
  const int stages = tile::clamp_stages(pr.s.stages, ceil_div(K, KC));
  float* bpack = ws.b_pack.get(K * round_up(std::min(NC, n1 - n0), NR));
  float* apack[tile::kMaxStages];
  for (int st = 0; st < stages; ++st) apack[st] = ws.a_pack[st].get(round_up(MC, MR) * KC);
  float* ctile = via_tile ? ws.c_tile.get(MC * round_up(NC, NR)) : nullptr;
  for (std::int64_t jc = n0; jc < n1; jc += NC) {
    const std::int64_t nc = std::min(NC, n1 - jc), ncp = round_up(nc, NR);
    // B[K, nc] -> for each kc block: ncp/NR panels of kc x NR, block base p0 * ncp.
    for (std::int64_t p0 = 0; p0 < K; p0 += KC)
      pack_b_block(pr, jc, nc, k0 + p0, std::min(KC, K - p0), bpack + p0 * ncp / kw, tmp);
    for (std::int64_t ic = m0; ic < m1; ic += MC) {
      const std::int64_t mc = std::min(MC, m1 - ic);
      auto load = [&](std::int64_t t, int slot) {
        const std::int64_t p0 = t * KC;
        pack_a_block(pr, ic, mc, k0 + p0, std::min(KC, K - p0), apack[slot], tmp);
      };
      auto compute = [&](std::int64_t t, int slot) {
        const std::int64_t p0 = t * KC, kc = std::min(KC, K - p0);
        // 16-bit C is written from the tile after the last K block; fetch its lines for
        // writing while the block computes, a micro-tile's rows at a time (a cold C otherwise
        // stalls the write-back on every store: 2048x512x128 bf16 x 8 spent a fifth of its time
        // there).
        multiply_blocks(pr, {apack[slot], bpack + p0 * ncp / kw, ic, mc, jc, nc, k0 + p0, kc, alpha,
                             t == 0 ? beta0 : &one, via_tile ? ctile : c_at(ic, jc),
                             via_tile ? ncp : ldc_mem, via_tile && p0 + KC >= K, stages > 1});
      };
      tile::run_pipeline(ceil_div(K, KC), stages, load, compute);
      if (via_tile) write_back(pr, ic, jc, mc, nc, ctile, ncp);
    }
  }
}

// ---- the decode path ----
// Columns [n0, n1) of C over K slice `slice` (-1: all of K).
void decode_block(const Problem& pr, std::int64_t n0, std::int64_t n1, int slice) {
  const Params& p = *pr.p;
  Workspace& ws = workspace();
  const std::int64_t k0 = slice < 0 ? 0 : slice * pr.kslice;
  const std::int64_t k1 = slice < 0 ? p.k : std::min(p.k, k0 + pr.kslice);
  detail::DecodeArgs g;
  g.a = pr.a32 + k0;
  g.lda = pr.lda32;
  g.m = p.m;
  g.k = k1 - k0;
  g.w = static_cast<const std::byte*>(p.b) + k0 * static_cast<std::int64_t>(dtype_size(p.b_type));
  g.w_type = p.b_type;
  g.ldw = pr.ldb;
  g.w_scale = p.b_scale != nullptr ? p.b_scale + k0 / kFp8Block : nullptr;
  g.ld_wscale = pr.ldb_s;
  g.n0 = n0;
  g.n1 = n1;
  g.e4m3 = pr.e4m3;
  g.stages = pr.s.stages;
  g.panel_bytes = detail::decode_panel_bytes();
  // K in equal tiles of at most the schedule's k_tile (1536 with k_tile 1024: 768 + 768, not
  // 1024 + 512): the pipeline prefetches tile t+d while tile t computes, element for element,
  // so a short tile followed by a long one would leave part of the long one unfetched.
  const std::int64_t tiles = ceil_div(g.k, pr.s.decode_k_tile);
  g.k_tile = tiles <= 1 ? pr.s.decode_k_tile : round_up(ceil_div(g.k, tiles), kFp8Block);
  detail::Decode decode = pr.fam->decode;
  if (pr.pairs_decode != nullptr) {  // k0 is a multiple of 128 (slices are): blocks align
    g.a16 = pr.a16 + k0;
    g.lda16 = pr.lda16;
    if (p.a_type == DType::fp8) {
      g.a_scale = p.a_scale + k0 / kFp8Block;
      g.ld_ascale = pr.lda_s;
    }
    decode = pr.pairs_decode;
  }
  // Scratch for the kernels that tile K (the fp32 route's converted W tiles, the fp8 pairs'
  // converted chunks) or pack A (the fp32 panel kernel); the bf16 pairs read W in place.
  if (detail::decode_uses_scratch(p, *pr.fam))
    g.scratch = ws.tmp.get(detail::decode_scratch_floats(g.k_tile, g.k));
  if (slice >= 0) {  // a partial sum: reduced by finish_split()
    g.out = pr.partial + slice * p.m * p.n + n0;
    g.ldo = p.n;
    decode(g);
    return;
  }
  const bool direct = p.c_type == DType::f32 && p.alpha == 1.0f && p.beta == 0.0f && !pr.ct;
  if (direct) {
    g.out = static_cast<float*>(p.c) + n0;
    g.ldo = pr.ldc;
  } else {
    g.out = ws.out.get(p.m * (n1 - n0));
    g.ldo = n1 - n0;
  }
  decode(g);
  if (pr.ct) {  // the caller's rows [n0, n1) of C: the sums transposed, then written as rows
    const std::int64_t nb = n1 - n0;
    float* t = ws.c_tile.get(nb * p.m);
    for (std::int64_t j = 0; j < nb; ++j)
      for (std::int64_t i = 0; i < p.m; ++i) t[j * p.m + i] = g.out[i * g.ldo + j];
    write_back(pr, n0, 0, nb, p.m, t, p.m);
    return;
  }
  if (!direct) write_back(pr, 0, n0, p.m, n1 - n0, g.out, g.ldo);
}

// ---- the direct path ----
// A^T panels: rows [i0, i0 + P) of op(A) (fewer at the end of M), in a width of whole vectors.
int at_rows(const Problem& pr, std::int64_t i0) {
  return static_cast<int>(std::min<std::int64_t>(pr.fam->direct_panel, pr.p->m - i0));
}
// Scratch floats of the direct path's packed A^T for M x K: every panel of `panel` rows over all
// of K, as fp32 values or (kw = 2) words of two bf16.
std::int64_t direct_at_floats(std::int64_t m, std::int64_t k, std::int64_t kw, int panel) {
  return round_up(ceil_div(m, panel) * panel * (k / kw), 16);
}
// ...and of A's scales beside it (Problem::scaled): every panel's P values per K block.
std::int64_t direct_as_floats(const Problem& pr) {
  const int P = pr.fam->direct_panel;
  return round_up(ceil_div(pr.p->m, P) * P * ceil_div(pr.p->k, kFp8Block), 16);
}
int at_width(const Problem& pr, int rows) {
  return static_cast<int>(round_up(rows, pr.fam->direct_lanes));
}
// The A scales of the panel from row i0 (Problem::as): K block b's values at + b * its width.
float* panel_scales(const Problem& pr, std::int64_t i0) {
  const int P = pr.fam->direct_panel;
  return pr.as + i0 / P * P * ceil_div(pr.p->k, kFp8Block);
}

// The k-pairs panel (pr.k2: the one panel of M <= direct_lanes / 2 rows): K [k0, k1) (k0 even)
// at dst + k0 / 2 * L, at[s * L + 2 i + e] = A(i, 2 s + e), zeros past M and past K.
void pack_at_k2(const Problem& pr, std::int64_t k0, std::int64_t k1, float* dst) {
  const Params& p = *pr.p;
  const int L = pr.fam->direct_lanes, m = static_cast<int>(p.m);
  const std::int64_t len = k1 - k0;
  // op(A)'s rows as fp32: in place where they are, else converted into scratch.
  const float* src = nullptr;
  std::int64_t ld = len;
  if (p.trans_a == Trans::N && p.a_type == DType::f32) {
    src = reinterpret_cast<const float*>(a_at(pr, 0, k0));
    ld = pr.lda;
  } else {
    float* tmp = workspace().a_conv.get(m * len);
    if (p.trans_a == Trans::N) {
      convert_a_rows(pr, 0, m, k0, len, tmp, len);
    } else {  // fp32 stored (K, M)
      for (int i = 0; i < m; ++i)
        for (std::int64_t q = 0; q < len; ++q)
          tmp[i * len + q] = *reinterpret_cast<const float*>(a_at(pr, i, k0 + q));
    }
    src = tmp;
  }
  float* d = dst + k0 / 2 * L;
  for (std::int64_t q = 0; q < len; q += 2, d += L) {
    for (int i = 0; i < m; ++i) {
      d[2 * i] = src[i * ld + q];
      d[2 * i + 1] = q + 1 < len ? src[i * ld + q + 1] : 0.0f;
    }
    for (int l = 2 * m; l < L; ++l) d[l] = 0.0f;
  }
}

// K [k0, k1) of the A^T panel from row i0 of op(A) into the panel at dst (all of K: the k-th
// `width` values at dst + k * width, zeros past the panel's rows): pack_a_panel with the panel's
// width for MR (on bf16 pairs, words of two bf16 of consecutive k; k0 and k1 even;
// the k-pairs panel by pack_at_k2).
// With pr.scaled also the panel's A scales of the K blocks in [k0, k1) (k0 a multiple of 128).
void pack_at(const Problem& pr, std::int64_t i0, std::int64_t k0, std::int64_t k1, float* dst) {
  if (pr.k2) return pack_at_k2(pr, k0, k1, dst);
  const int rows = at_rows(pr, i0), width = at_width(pr, rows);
  pack_a_panel(pr, i0, rows, k0, k1 - k0, width, dst + k0 / pr.kw * width,
               workspace().a_conv.get(rows * (k1 - k0)));
  if (!pr.scaled) return;
  float* as = panel_scales(pr, i0);
  for (std::int64_t b = k0 / kFp8Block; b < ceil_div(k1, kFp8Block); ++b)
    for (int i = 0; i < width; ++i)
      as[b * width + i] = i < rows ? a_scale(pr, i0 + i, b * kFp8Block) : 0.0f;
}

// fp8 W rows [j, j + rows) x K [k0, k0 + kc) as bf16 words (exact, unscaled), rows ldt words
// apart, and their scales per K block at ws[b * R + r] (rows past `rows` repeat the last).
void convert_w_fp8_pairs(const Problem& pr, std::int64_t j, int rows, int R, std::int64_t k0,
                         std::int64_t kc, float* dst, std::int64_t ldt, float* ws) {
  for (int r = 0; r < rows; ++r)
    detail::e4m3_to_bf16_avx512vbmi(reinterpret_cast<const std::uint8_t*>(b_at(pr, k0, j + r)), kc,
                                    pr.e4m3, reinterpret_cast<std::uint16_t*>(dst + r * ldt));
  for (std::int64_t b = 0; b < ceil_div(kc, kFp8Block); ++b)
    for (int r = 0; r < R; ++r)
      ws[b * R + r] = b_scale(pr, k0 + b * kFp8Block, j + std::min(r, rows - 1));
}

// C[m0:m1, n0:n1] (m0 a multiple of the panel width): KC blocks of K outermost (the A^T block,
// M x KC, stays in L2), then tiles of R rows of W (in L1 while every panel of A in [m0, m1)
// passes), the next tile's W fetched during the last panel. fp32 C is accumulated in place;
// 16-bit C rounded by the kernel (K in one block, pr.ct) or through fp32 sums of the block,
// rounded once at the end. Offsets into W and A^T count
// values (fp32) or words (bf16 pairs, kw = 2).
void direct_block(const Problem& pr, std::int64_t m0, std::int64_t m1, std::int64_t n0,
                  std::int64_t n1) {
  const Params& p = *pr.p;
  const KernelFamily& f = *pr.fam;
  const int R = f.direct_rows, P = f.direct_panel;
  // fp8 pairs (pr.scaled): KC whole scale blocks.
  const std::int64_t kw = pr.kw,
                     KC = round_up(pr.s.kc, pr.k2       ? 2
                                            : pr.scaled ? kFp8Block
                                                        : kw),
                     q0 = m0 / P, q1 = ceil_div(m1, P);
  const std::int64_t kwords = p.k / kw, ldw = pr.ldb / kw;
  const auto* w = static_cast<const float*>(p.b);
  // W not fp32 (and not bf16 pairs): each tile converted into L1 scratch, rows kc + 16 apart
  // (a multiple of 4 KiB apart, every row's k-th line would share one set); fp8 pairs as bf16
  // words, with the tile's W scales after it.
  const bool conv = detail::direct_converts(p, f), tiled = conv || pr.scaled;
  const std::int64_t ldt = round_up(std::min(KC, p.k) / kw, 16) + 16;
  const std::int64_t scales = pr.scaled ? R * ceil_div(std::min(KC, p.k), kFp8Block) : 0;
  float* wtile = tiled ? workspace().tmp.get(R * ldt + scales) : nullptr;
  float* wscale = pr.scaled ? wtile + R * ldt : nullptr;
  // 16-bit C. With K in one block the kernel rounds each sum into C itself where it writes C's rows
  // from registers: with pr.ct (round16 from an fp32 tile costs a tenth of a short-K bf16 product),
  // and without it on the families whose kernel transposes its sums in registers
  // (direct_writes_rows). Otherwise an fp32 tile of the block (with pr.ct its rows are the caller's
  // rows [n0, n1)), rounded once at the end: a scalar write of C^T to 16 bits is slower, and
  // rounding the tile in strips as they are done gains nothing over the whole tile.
  const bool to16 = p.c_type != DType::f32, ct = pr.ct;
  const bool staged = to16 && !((ct || (f.direct_writes_rows && !pr.k2)) && p.k <= KC);
  const std::int64_t mb = m1 - m0, nb = n1 - n0;
  void* out = staged ? workspace().c_tile.get(mb * nb) : p.c;
  const DType out_type = staged ? DType::f32 : p.c_type;
  const std::int64_t ldo = staged ? (ct ? mb : nb) : pr.ldc;
  const std::int64_t row0 = staged ? m0 : 0, col0 = staged ? n0 : 0;  // the tile's origin in C
  const float alpha = staged ? 1.0f : p.alpha;
  const auto ces = static_cast<std::int64_t>(dtype_size(out_type));
  const bool fetch = pr.s.stages > 1;
  const auto es = static_cast<std::int64_t>(dtype_size(p.b_type));
  for (std::int64_t k0 = 0; k0 < p.k; k0 += KC) {
    const std::int64_t kc = std::min(KC, p.k - k0);
    const float beta = k0 > 0 ? 1.0f : staged ? 0.0f : p.beta;
    if (pr.at_in_block)  // this block's panels of A^T for this K block (panel q at q * P * K)
      for (std::int64_t q = q0; q < q1; ++q)
        pack_at(pr, q * P, k0, k0 + kc, pr.at + q * P * kwords);
    for (std::int64_t j = n0; j < n1; j += R) {
      const int rows = static_cast<int>(std::min<std::int64_t>(R, n1 - j));
      // The next tile's rows of W as stored: the next R rows, or the first of the next K block.
      detail::DirectNext nx;
      nx.ld = pr.ldb * es;
      if (fetch && j + R < n1) {
        nx.w = reinterpret_cast<const char*>(b_at(pr, k0, j + R));
        nx.bytes = kc * es;
      } else if (fetch && k0 + KC < p.k) {
        nx.w = reinterpret_cast<const char*>(b_at(pr, k0 + KC, n0));
        nx.bytes = std::min(KC, p.k - k0 - KC) * es;
      }
      if (conv) convert_w_rows(pr, j, rows, k0, kc, wtile, ldt);
      if (pr.scaled) convert_w_fp8_pairs(pr, j, rows, R, k0, kc, wtile, ldt, wscale);
      const float* wt = tiled ? wtile : w + j * ldw + k0 / kw;
      const std::int64_t ld = tiled ? ldt : ldw;
      const detail::DirectNext* next = nx.w != nullptr ? &nx : nullptr;
      for (std::int64_t q = q0; q < q1; ++q) {
        const int m = at_rows(pr, q * P);
        const std::int64_t i = q * P - row0, r = j - col0;  // corner in out
        void* c = static_cast<char*>(out) + (ct ? r * ldo + i : i * ldo + r) * ces;
        const float* at = pr.k2 ? pr.at + k0 / 2 * f.direct_lanes
                                : pr.at + q * P * kwords + k0 / kw * at_width(pr, m);
        const detail::DirectNext* nq = q + 1 == q1 ? next : nullptr;
        if (pr.scaled) {
          const detail::DirectScales sc{panel_scales(pr, q * P) + k0 / kFp8Block * at_width(pr, m),
                                        wscale, kFp8Block / 2};
          f.direct_fp8(kc / kw, wt, ld, rows, at, m, alpha, beta, c, ldo, ct, out_type, nq, &sc);
          continue;
        }
        pr.direct(kc / kw, wt, ld, rows, at, m, alpha, beta, c, ldo, ct, out_type, nq);
      }
    }
  }
  const auto* tile = static_cast<const float*>(out);
  if (staged && ct) write_back(pr, n0, m0, nb, mb, tile, ldo);
  if (staged && !ct) write_back(pr, m0, n0, mb, nb, tile, ldo);
}

// C = alpha * (sum of the split-K partial sums) + beta * C.
void finish_split(const Problem& pr) {
  const Params& p = *pr.p;
  const std::int64_t mn = p.m * p.n;
  for (int s = 1; s < pr.slices; ++s) {
    const float* src = pr.partial + s * mn;
    for (std::int64_t i = 0; i < mn; ++i) pr.partial[i] += src[i];
  }
  write_back(pr, 0, 0, p.m, p.n, pr.partial, p.n);
}

// ---- checks and the heuristic ----
// `fused`: the call's items share one region, so the grid is blocks per item (any size).
void check(const Params& p, bool fused) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("gemm: " + what); };
  if (p.m < 0 || p.n < 0 || p.k < 0) fail("negative dimension");
  for (DType t : {p.a_type, p.b_type})
    if (!is_op_dtype(t)) fail(fmt::format("input dtype {} not supported", dtype_name(t)));
  if (p.c_type != DType::f32 && p.c_type != DType::bf16 && p.c_type != DType::f16)
    fail(fmt::format("output dtype {} not supported (fp32, bf16, fp16)", dtype_name(p.c_type)));
  if (p.threads < 1 || p.threads > kMaxScheduleThreads)
    fail(fmt::format("threads={} outside 1..{}", p.threads, kMaxScheduleThreads));
  if (p.stages < 1 || p.stages > tile::kMaxStages)
    fail(fmt::format("stages must be 1..{}", tile::kMaxStages));
  const Schedule& s = p.schedule;
  if (s.isa != Isa::automatic && !isa_supported(s.isa))
    fail(fmt::format("isa {} not supported by this CPU", isa_name(s.isa)));
  try {
    check_schedule_ranges(s);
  } catch (const std::invalid_argument& e) {
    fail(e.what());
  }
  if (s.threads > p.threads) fail("schedule threads > Params::threads");
  if (!grid_makes_threads(s, p.threads, fused))
    fail("threads_m * threads_n (times split_k) must equal threads");
  if (p.m == 0 || p.n == 0) return;
  if (s.path == Path::decode && !detail::decode_ok(p, s.swap))
    fail(s.swap
             ? fmt::format("the decode path on swapped operands needs n <= {}", detail::kDecodeMaxM)
             : fmt::format("decode path needs trans_b = T and m <= {}", detail::kDecodeMaxM));
  const KernelFamily& fam = detail::family(s.isa == Isa::automatic ? detected_isa() : s.isa);
  if (s.path == Path::direct && !s.swap && !detail::direct_ok(p, fam))
    fail("direct path needs W stored (N, K) (trans_b = T), and A stored (M, K) unless fp32");
  if (s.path == Path::direct && s.split_k > 1) fail("direct path takes no split_k");
  if (s.swap && (s.path == Path::packed || s.split_k > 1))
    fail("swap runs the direct or the decode path (no split_k)");
  if (s.swap && !detail::swap_ok(p, fam))
    fail("swap needs A stored (M, K) and W stored (N, K), neither fp8");
  if (p.c == nullptr) fail("c is null");
  if (p.k > 0 && (p.a == nullptr || p.b == nullptr)) fail("a or b is null");
  if (p.ldc != 0 && p.ldc < p.n) fail("ldc < n");
  const std::int64_t a_cols = p.trans_a == Trans::N ? p.k : p.m;
  const std::int64_t b_cols = p.trans_b == Trans::T ? p.k : p.n;
  if (p.lda != 0 && p.lda < a_cols) fail("lda too small for op(A)");
  if (p.ldb != 0 && p.ldb < b_cols) fail("ldb too small for op(B)");
  const std::int64_t kb = ceil_div(p.k, kFp8Block);
  if (p.a_type == DType::fp8 && p.k > 0 && p.a_scale == nullptr) fail("fp8 A needs a_scale");
  if (p.b_type == DType::fp8 && p.k > 0 && p.b_scale == nullptr) fail("fp8 B needs b_scale");
  if (p.lda_scale != 0 && p.lda_scale < kb) fail("lda_scale < ceil(k/128)");
  if (p.ldb_scale != 0 && p.ldb_scale < kb) fail("ldb_scale < ceil(k/128)");
}

// Thread grid: the (tm, tn) with tm * tn = threads that minimises the busiest thread's work,
// counting padded micro-tiles (compute) and the elements it packs (A once per NC block, B once), a
// packed element weighted like 16 flops (32 on bf16 pairs). With `split` (the caller left split_k
// to the engine) it also weighs tm * tn * slices = threads: each thread packs and multiplies a K
// slice, at the cost of the caller summing the slices' fp32 partials (weighted like packing). Only
// small C qualifies (its partials stay in L2): there, each grid packs one operand twice while
// slices pack nothing twice.
void choose_grid(const Params& p, const KernelFamily& f, std::int64_t nc, int threads, bool split,
                 Schedule& s) {
  double best = std::numeric_limits<double>::max();
  const bool small_c = p.m * p.n <= 64 * 1024;
  // A packed element costs about 16 flops of the fp32 kernel, 32 where the kernel multiplies bf16
  // pairs at twice the rate (a lower weight makes the model pick grids that run slower: 1x2 where
  // 2x1 is faster).
  const double pack_flops = detail::multiplies_bf16_pairs(p, f) ? 32.0 : 16.0;
  for (int sp = 1; sp <= (split && small_c ? threads : 1); ++sp) {
    if (threads % sp != 0 || (sp > 1 && p.k < 256 * sp)) continue;
    const std::int64_t kt = ceil_div(p.k, sp);
    for (int tm = 1; tm <= threads / sp; ++tm) {
      if ((threads / sp) % tm != 0) continue;
      const int tn = threads / sp / tm;
      const std::int64_t mt = ceil_div(p.m, tm), nt = round_up(ceil_div(p.n, tn), f.nr);
      const double compute = 2.0 * static_cast<double>(round_up(mt, f.mr) * nt * kt);
      const double pack = static_cast<double>(mt * kt * ceil_div(nt, nc) + nt * kt);
      const double reduce = sp > 1 ? static_cast<double>(p.m * p.n * (sp + 1)) : 0.0;
      const double cost = compute + pack_flops * (pack + reduce);
      if (cost < best) {
        best = cost;
        s.threads_m = tm;
        s.threads_n = tn;
        s.split_k = sp;
      }
    }
  }
}

// Whether the direct path's threads split M for these operands (`blocks` of them): few columns (the
// table's direct_split_max_n) and whole panels of A^T, as many for each thread, the last thread's
// rows at least 7/8 of the others' (a short last panel, 96 rows as 64 + 32, runs slower than the N
// split).
bool direct_split_m(const Params& p, const KernelFamily& f, const Blocking& b, int blocks) {
  if (b.direct_split_max_n <= 0 || p.n > b.direct_split_max_n || blocks <= 1) return false;
  const std::int64_t panels = ceil_div(p.m, f.direct_panel);
  if (panels % blocks != 0) return false;
  const std::int64_t rows = panels / blocks * f.direct_panel;  // each thread's but the last
  return 8 * (p.m - (blocks - 1) * rows) >= 7 * rows;
}

// The direct path's packed A^T at most (see resolve_with's direct_m).
constexpr std::int64_t kDirectMaxAtBytes = std::int64_t{32} << 20;

// Every automatic field filled. `blocks`: the grid size to aim for when none is given (the
// region's threads, or with fused items the share of them one item gets).
Schedule resolve_with(const Params& p, int blocks) {
  Schedule s = p.schedule;
  if (s.isa == Isa::automatic) s.isa = detected_isa();
  const KernelFamily& f = detail::family(s.isa);
  const Blocking& b = detail::blocking(s.isa);
  // The direct path's route for these operands: bf16 pairs (words), W converted, or fp32.
  const bool words = detail::direct_pairs(p, f), conv = detail::direct_converts(p, f);
  // Whether operands q have an M in the direct path's range for their route (from the table),
  // or up to `most` instead of the route's maximum.
  // The path packs all of op(A)^T per call into the caller's grow-only scratch: only while that
  // stays within kDirectMaxAtBytes (the table's M ranges reach 1024 rows on Zen 4; a 28672-deep K
  // would have kept 117 MiB per calling thread), beyond it the packed path's bounded blocks.
  // The direct path's fewest rows of A for operands q's route.
  auto direct_lo = [&](const Params& q) {
    const bool w = detail::direct_pairs(q, f), c = detail::direct_converts(q, f);
    return w ? b.direct_min_m_pairs : c ? b.direct_min_m_conv : b.direct_min_m;
  };
  auto direct_m = [&](const Params& q, int most = 0) {
    const bool w = detail::direct_pairs(q, f), c = detail::direct_converts(q, f);
    const int lo = direct_lo(q);
    const int hi = detail::direct_fp8_pairs(q, f) && b.direct_max_m_fp8 > 0 ? b.direct_max_m_fp8
                   : w                                                      ? b.direct_max_m_pairs
                   : c                                                      ? b.direct_max_m_conv
                                                                            : b.direct_max_m;
    const std::int64_t at_bytes = 4 * direct_at_floats(q.m, q.k, w ? 2 : 1, f.direct_panel);
    return hi > 0 && q.m >= lo && q.m <= (most > 0 ? most : hi) && at_bytes <= kDirectMaxAtBytes;
  };
  // ...or on k pairs: fp32 operands with few rows of A.
  const bool k2 = b.direct_min_m_k2 > 0 && !conv && detail::direct_on_k_pairs(p, f) &&
                  p.m >= b.direct_min_m_k2 && p.k >= b.direct_min_k_k2;
  if (s.path == Path::automatic && !s.swap) {
    // Decode when the weights dominate the traffic and there are too few rows of A to amortise
    // packing them: M up to the table's crossover, W stored (N, K).
    const bool pairs = detail::multiplies_bf16_pairs(p, f);
    // fp8 x fp8 decoded as bf16 pairs beats the packed path up to the decode kernel's limit.
    const int max_m = p.b_type == DType::f32            ? b.decode_max_m_f32
                      : detail::decodes_fp8_pairs(p, f) ? static_cast<int>(detail::kDecodeMaxM)
                      : pairs && p.b_type == DType::fp8 ? b.decode_max_m_fp8_pairs
                      : pairs                           ? b.decode_max_m_pairs
                                                        : b.decode_max_m_lowp;
    s.path =
        (p.trans_b == Trans::T && p.m <= max_m && s.split_k <= 1) ? Path::decode : Path::packed;
    // W read in place (or converted a tile at a time) against a packed A^T: from the M where
    // the decode kernel stops keeping up to where packing W (a transpose of every element) is
    // paid back; ranges per route (fp32, bf16 pairs, converted W) from the table.
    // fp8 x fp8 takes it as bf16 pairs (direct_fp8_pairs) from the table's direct_min_m_fp8 rows
    // (or above the decode path's), any K; on the fp32 route (W and A^T converted with their
    // scales) it stays packed.
    const bool fp8_pair = p.a_type == DType::fp8 && p.b_type == DType::fp8;
    // Few columns (from direct_min_n / 2, where the table splits M): the packed path packs both
    // operands for them, the direct path only A^T (threads split M where that divides evenly, N
    // otherwise); bf16 pairs and converted W from above their decode crossover, below which the
    // decode path stays faster.
    const bool few_cols = b.direct_split_max_n > 0 && p.n < b.direct_min_n &&
                          2 * p.n >= b.direct_min_n && direct_m(p) &&
                          ((!conv && !words) || p.m > max_m);
    // K: on the fp32 route from direct_min_k; on bf16 pairs at or below their decode crossover
    // outside the table's decode window (dispatch.cpp's kTable says why), any K above it.
    const bool k_ok = words
                          ? p.m > max_m || p.k < b.decode_pairs_min_k || p.k >= b.decode_pairs_max_k
                          : p.k >= b.direct_min_k;
    const bool fp8_direct =
        fp8_pair && words && p.m >= (b.direct_min_m_fp8 > 0 ? b.direct_min_m_fp8 : max_m + 1);
    if (s.split_k <= 1 && detail::direct_ok(p, f) && (!fp8_pair || fp8_direct) &&
        (p.n >= b.direct_min_n || few_cols) && ((direct_m(p) && (k_ok || fp8_direct)) || k2))
      s.path = Path::direct;
    if (s.split_k > 1 && detail::decode_ok(p, false)) s.path = Path::decode;
    // Few columns against many rows (attention's N = head_dim): the packed path would pack all of A
    // for N columns, and the direct path A^T (M x K); the direct path on the swapped operands reads
    // A's rows in place, packs W^T (N x K) once and writes C's rows as vectors (any K: no
    // transposed write to amortize). From swap_min_m rows (192 on Zen 4: at M = 160 it is mixed, at
    // M <= 128 the direct path wins), and up to swap_max_n_tall columns (512 on Zen 4) where there
    // are at least twice as many rows as columns. Large products, from swap_large_min_m (above the
    // direct path's rows) and N up to swap_large_max_n (4096 on Zen 4) while W^T stays within
    // kDirectMaxAtBytes: A's rows broadcast where they are stored against W^T packed 64 wide, K
    // blocks of the direct path's budget (oneDNN's brgemm structure) instead of packing both
    // operands. Short K on bf16 pairs stays packed (K < 128).
    const bool large =
        b.swap_large_min_m > 0 && p.m >= b.swap_large_min_m && (!words || p.k >= 128);
    const int swap_n = large                                     ? b.swap_large_max_n
                       : b.swap_max_n_tall > 0 && p.m >= 2 * p.n ? b.swap_max_n_tall
                                                                 : b.swap_max_n;
    // A short K from swap_short_min_m rows (128 on Zen 4) where N <= M: the plain direct path
    // writes each tile transposed (six values to each of 64 rows), the swapped one C's rows as
    // vectors. Where N > M the plain direct path stays.
    const bool short_k = b.swap_short_min_m > 0 && p.m >= b.swap_short_min_m &&
                         p.k <= b.swap_short_max_k && p.n <= p.m;
    // Below swap_min_m rows, where the packed path would run for fewer columns than the plain
    // direct path takes (N < direct_min_n / 2).
    const bool narrow = s.path == Path::packed && 2 * p.n < b.direct_min_n;
    if ((s.path == Path::packed || s.path == Path::direct) && s.split_k <= 1 && b.swap_min_m > 0 &&
        (p.m >= b.swap_min_m || short_k || narrow) && detail::swap_ok(p, f) &&
        direct_m(detail::swapped(p), swap_n))
      s.swap = true;
    // Fewer columns than the swapped direct path's minimum (an MoE router's 8 experts, a GEMV-like
    // product) where the packed path would run (padding N to its 32-wide panels and packing all of
    // A): the swapped operands, A's rows streamed once against the few rows of W in cache - on the
    // decode path, or for fp32 from direct_min_m_k2 columns on the direct path's k pairs (one panel
    // of W^T). This runs 2-6x faster than the packed path.
    if (s.path == Path::packed && !s.swap && s.split_k <= 1 && b.swap_min_m > 0 && p.n >= 1 &&
        detail::swap_ok(p, f)) {
      const Params q = detail::swapped(p);
      if (p.n < direct_lo(q) && detail::decode_ok(p, true)) {
        s.swap = true;
        const bool pairs_k = b.direct_min_m_k2 > 0 && !detail::direct_converts(q, f) &&
                             detail::direct_on_k_pairs(q, f) && q.m >= b.direct_min_m_k2;
        s.path = pairs_k ? Path::direct : Path::decode;
      }
    }
  }
  if (s.swap) {  // the direct (or decode) path's schedule for the swapped operands
    Params q = detail::swapped(p);
    q.schedule = s;
    q.schedule.swap = false;
    q.schedule.path = s.path == Path::decode ? Path::decode : Path::direct;
    // Threads split the caller's rows (A, read in place, is the large operand: splitting the W^T
    // panels instead makes every thread read all of it).
    if (q.schedule.threads_m * q.schedule.threads_n == 0) {
      q.schedule.threads_m = 1;
      q.schedule.threads_n = std::max(1, blocks);
    }
    Schedule r = resolve_with(q, blocks);
    r.swap = true;
    return r;
  }
  if (s.threads == 0) s.threads = p.threads;
  if (s.stages == 0) s.stages = p.stages;
  const bool auto_split = s.split_k == 0;
  if (s.split_k == 0) s.split_k = 1;
  // fp32 operands on the packed path: the row's fp32 blocks where it has them (dispatch.hpp).
  const bool f32_ops = s.path == Path::packed && p.a_type == DType::f32 && p.b_type == DType::f32;
  if (s.mc == 0) s.mc = f32_ops && b.mc_f32 > 0 ? b.mc_f32 : b.mc;
  s.mc = static_cast<int>(round_up(s.mc, f.mr));
  if (s.path == Path::direct) {
    // KC in whole 16-value steps; fp8 pairs: whole scale blocks.
    const std::int64_t unit = detail::direct_fp8_pairs(p, f) ? kFp8Block : 16;
    if (s.kc == 0) {
      const std::int64_t rows = round_up(std::max<std::int64_t>(p.m, 1), f.direct_lanes);
      const std::int64_t bytes = words ? 2 : 4;  // per A value
      // A converted W tile (R x KC fp32) stays within half of L1: KC <= 1024. Rows of A that make
      // one panel meet each W tile once, so nothing caps KC but the A^T block's budget: W's rows
      // then stream whole, not in pieces of direct_max_kc read far apart.
      const std::int64_t cap = conv                     ? 1024
                               : rows <= f.direct_panel ? std::int64_t{1} << 40
                                                        : b.direct_max_kc;
      const std::int64_t most =
          std::clamp<std::int64_t>(b.direct_block_bytes / (bytes * rows) / 64 * 64, 256, cap);
      const std::int64_t kblocks = ceil_div(std::max<std::int64_t>(p.k, 1), most);
      s.kc = static_cast<int>(round_up(ceil_div(std::max<std::int64_t>(p.k, 1), kblocks), unit));
    }
    // A KC past K is one block of all of K, the schedule of KC = K rounded as above: resolved to
    // it, so that the tuner (which tells candidates apart by their resolved description) does not
    // measure one schedule as several and keep whichever draw ran fastest.
    s.kc = static_cast<int>(
        std::min<std::int64_t>(s.kc, round_up(std::max<std::int64_t>(p.k, 1), unit)));
  }
  if (s.kc == 0) s.kc = f32_ops && b.kc_f32 > 0 ? b.kc_f32 : b.kc;
  // mk's column block: B is packed for the whole K of it, so keep that panel within the budget.
  const std::int64_t mk_nc = [&] {
    std::int64_t cols = b.b_panel_bytes / (4 * std::max<std::int64_t>(p.k, 1));
    if (b.nc > 0) cols = std::min<std::int64_t>(cols, b.nc);
    return std::clamp<std::int64_t>(cols - cols % f.nr, f.nr, 1 << 16);
  }();
  // The packed path's loop order: km (K blocks outside M blocks) where C is updated in place, K
  // spans more than one KC block and N at least one mk column block (narrower, A's stream outweighs
  // B's and mk stays ahead); mk where the sums go through the fp32 tile (16-bit C) or one K block
  // leaves the orders equal but for NC.
  if (s.order == Order::automatic)
    s.order = s.path == Path::packed && p.k > s.kc && p.n >= (s.nc > 0 ? s.nc : mk_nc) ? Order::km
                                                                                       : Order::mk;
  if (p.c_type != DType::f32) s.order = Order::mk;  // 16-bit C: sums through mk's fp32 tile
  if (s.nc == 0 && s.order == Order::km && s.path == Path::packed) {
    // B's block is KC deep: as wide as its budget allows.
    const std::int64_t cols = b.km_block_bytes / (4 * static_cast<std::int64_t>(s.kc));
    s.nc = static_cast<int>(
        std::clamp<std::int64_t>(cols - cols % f.nr, std::max(f.nr, b.nc), 1 << 16));
  }
  if (s.nc == 0) s.nc = static_cast<int>(mk_nc);
  s.nc = static_cast<int>(round_up(s.nc, f.nr));
  // A k_tile the decode kernel plays no part in resolves to the default: schedules that differ only
  // there are the same schedule, and the tuner must not measure them as candidates of their own.
  if (s.decode_k_tile == 0 || !detail::decode_uses_k_tile(p, f)) {
    // 4 KiB of each W row per tile (1024 fp32, 2048 bf16 / fp16, 4096 fp8): fewer tile switches
    // and, where one tile covers K, sums reduced straight from registers. Rows of up to 8 KiB are
    // one tile rather than two halves. W tiles the decode kernel converts once into fp32 scratch
    // (fp8 / fp16 with more rows of A than a register block, >= 3 on some ISAs) stay at 1024: 16
    // KiB of L1. The fp8 pairs decode's K chunk (more than one block of rows of A) is 4096 values,
    // 16 KiB of a group's four rows (1024 is slower, longer chunks no faster).
    const bool converted = (p.b_type == DType::fp8 || p.b_type == DType::f16) && p.m > 2;
    const std::int64_t row_bytes = p.k * static_cast<std::int64_t>(dtype_size(p.b_type));
    s.decode_k_tile = detail::decodes_fp8_pairs(p, f) ? 4096
                      : converted                     ? 1024
                      : row_bytes <= 8192
                          ? static_cast<int>(round_up(std::max<std::int64_t>(p.k, 1), kFp8Block))
                          : static_cast<int>(4096 / dtype_size(p.b_type));
  }
  if (s.threads_m * s.threads_n == 0) {
    if (s.path == Path::direct && direct_split_m(p, f, b, blocks)) {
      s.threads_m = blocks;
      s.threads_n = 1;
    } else if (s.path == Path::decode || s.path == Path::direct) {
      s.threads_m = 1;
      s.threads_n = std::max(1, blocks);
    } else {
      choose_grid(p, f, s.nc, std::max(1, blocks), auto_split, s);
    }
  }
  return s;
}

Problem make_problem(const Params& p, const Schedule& s) {
  Problem pr{};
  pr.p = &p;
  pr.s = s;
  pr.fam = &detail::family(pr.s.isa);
  pr.blk = detail::blocking(pr.s.isa);
  pr.lda = p.lda != 0 ? p.lda : (p.trans_a == Trans::N ? p.k : p.m);
  pr.ldb = p.ldb != 0 ? p.ldb : (p.trans_b == Trans::T ? p.k : p.n);
  pr.ldc = p.ldc != 0 ? p.ldc : p.n;
  const std::int64_t kb = ceil_div(p.k, kFp8Block);
  pr.lda_s = p.lda_scale != 0 ? p.lda_scale : kb;
  pr.ldb_s = p.ldb_scale != 0 ? p.ldb_scale : kb;
  pr.e4m3 = e4m3_table();
  if (s.split_k > 1) {  // (the fp8 pairs decode: whole super-blocks of A's order)
    const std::int64_t unit =
        detail::decodes_fp8_pairs(p, *pr.fam) ? detail::kFp8PairsSuper : kFp8Block;
    pr.kslice = round_up(ceil_div(p.k, s.split_k), unit);
    pr.slices = static_cast<int>(ceil_div(p.k, pr.kslice));
  }
  // bf16 pairs: both operands bf16, stored K-contiguous (A: N, B: T) with even K, leading
  // dimensions and KC and 4-byte-aligned bases, so that every pair is one aligned word.
  const auto aligned4 = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 4 == 0; };
  const bool fp8 = p.a_type == DType::fp8;
  pr.pairs = detail::multiplies_bf16_pairs(p, *pr.fam) && pr.lda % 2 == 0 && pr.ldb % 2 == 0 &&
             s.kc % (fp8 ? kFp8Block : 2) == 0 && (fp8 || (aligned4(p.a) && aligned4(p.b)));
  if (s.path == Path::direct) {  // A^T panels and W as words where the direct path multiplies pairs
    pr.pairs = detail::direct_pairs(p, *pr.fam);
    pr.scaled = detail::direct_fp8_pairs(p, *pr.fam);
    pr.direct = pr.pairs ? pr.fam->direct_bf16 : pr.fam->direct;
    // A panel of few rows of A (fp32 values): k pairs in the lanes, so that none idles.
    pr.k2 = detail::direct_on_k_pairs(p, *pr.fam);
    if (pr.k2) pr.direct = pr.fam->direct_k2;
  }
  pr.kw = pr.pairs ? 2 : 1;
  return pr;
}

// C = beta * C (K = 0 or alpha = 0: A and B are not read, as in BLAS).
void scale_c(const Problem& pr) {
  const Params& p = *pr.p;
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      const std::int64_t idx = i * pr.ldc + j;
      store_c(p.c_type, p.c, idx, p.beta != 0.0f ? p.beta * load_c(p.c_type, p.c, idx) : 0.0f);
    }
}

// ---- blocks and the executor ----
// One piece of work for one thread: C[m0:m1, n0:n1] of a problem (a K slice of it with
// split-K). Every call form and run_together reduce to a list of blocks run in one region.
struct Block {
  const Problem* pr;
  std::int64_t m0, m1, n0, n1;
  int slice;    // split-K slice, -1 = all of K
  double cost;  // for the order in which threads take blocks
};

void add_blocks(const Problem& pr, std::vector<Block>& out) {
  const Params& p = *pr.p;
  const Schedule& s = pr.s;
  // K per block, and a tile of C as one block, or one per split-K slice.
  const double kk = static_cast<double>(pr.slices > 1 ? pr.kslice : p.k);
  auto emit = [&](std::int64_t m0, std::int64_t m1, std::int64_t n0, std::int64_t n1, double cost) {
    if (pr.slices <= 1) return out.push_back({&pr, m0, m1, n0, n1, -1, cost});
    for (int sl = 0; sl < pr.slices; ++sl) out.push_back({&pr, m0, m1, n0, n1, sl, cost});
  };
  // A cell of the thread grid in pieces of `width` columns.
  auto emit_pieces = [&](std::int64_t m0, std::int64_t m1, std::int64_t n0, std::int64_t n1,
                         std::int64_t width, double cost_per_col) {
    for (std::int64_t j = n0; j < n1; j += width) {
      const std::int64_t j1 = std::min(n1, j + width);
      emit(m0, m1, j, j1, cost_per_col * static_cast<double>(j1 - j));
    }
  };
  // Pieces only where the region has threads to hand them to.
  const bool shared = s.threads > 1;
  if (s.path == Path::direct) {  // the grid over C: panels of A^T by W tiles
    const std::int64_t mchunk = round_up(ceil_div(p.m, s.threads_m), pr.fam->direct_panel);
    const std::int64_t nchunk = round_up(ceil_div(p.n, s.threads_n), pr.fam->direct_rows);
    for (std::int64_t m0 = 0; m0 < p.m; m0 += mchunk) {
      const std::int64_t m1 = std::min(p.m, m0 + mchunk);
      // Blocks that pack their own A^T panels (at_in_block) keep a cell whole: two pieces of one
      // cell would pack the same panels.
      const std::int64_t width =
          shared && !pr.at_in_block
              ? detail::piece_cols(nchunk, pr.fam->direct_rows,
                                   detail::rough_ns(p.b_type, m1 - m0, nchunk, p.k))
              : nchunk;
      for (std::int64_t n0 = 0; n0 < p.n; n0 += nchunk)
        emit_pieces(m0, m1, n0, std::min(p.n, n0 + nchunk), width,
                    2.0 * static_cast<double>(m1 - m0) * kk);
    }
    return;
  }
  if (s.path == Path::decode) {
    const std::int64_t chunk = round_up(ceil_div(p.n, s.threads_n), detail::kDecodeRows);
    const std::int64_t width = shared
                                   ? detail::piece_cols(chunk, detail::kDecodeRows,
                                                        detail::rough_ns(p.b_type, p.m, chunk, p.k))
                                   : chunk;
    emit_pieces(0, p.m, 0, p.n, width, kk * (4.0 + static_cast<double>(p.m)));
    return;
  }
  // The packed path: each cell in its column blocks of at most the schedule's NC, equal and of
  // whole NR panels (1056 columns as 544 + 512), the blocks packed_block would make: a piece
  // packs what the cell's loop packs for it, so cutting there costs nothing.
  const std::int64_t mchunk = round_up(ceil_div(p.m, s.threads_m), pr.fam->mr);
  const std::int64_t nchunk = round_up(ceil_div(p.n, s.threads_n), pr.fam->nr);
  for (int tm = 0; tm < s.threads_m; ++tm)
    for (int tn = 0; tn < s.threads_n; ++tn) {
      const std::int64_t m0 = std::min(p.m, tm * mchunk), m1 = std::min(p.m, m0 + mchunk);
      const std::int64_t n0 = std::min(p.n, tn * nchunk), n1 = std::min(p.n, n0 + nchunk);
      if (m0 >= m1 || n0 >= n1) continue;
      const std::int64_t width =
          shared ? std::min<std::int64_t>(
                       s.nc, round_up(ceil_div(n1 - n0, ceil_div(n1 - n0, s.nc)), pr.fam->nr))
                 : n1 - n0;
      emit_pieces(m0, m1, n0, n1, width, 2.0 * static_cast<double>(m1 - m0) * kk);
    }
}

void run_block(const Block& b) {
  if (b.pr->s.path == Path::decode) return decode_block(*b.pr, b.n0, b.n1, b.slice);
  if (b.pr->s.path == Path::direct) return direct_block(*b.pr, b.m0, b.m1, b.n0, b.n1);
  packed_block(*b.pr, b.m0, b.m1, b.n0, b.n1, b.slice);
}

// Below these single-thread times a job runs on the caller alone: waking a sleeping worker costs
// 50-150 us on a VM (a futex wake, and a worker put to sleep by an LLC flush); a spinning worker
// joins in about a microsecond.
constexpr double kMinParallelNsSleeping = 300e3, kMinParallelNsSpinning = 4e3;

// The threads of a region: `work_ns` >= 0: the thread count was not fixed by the schedule, so a
// job (or a sequence of jobs of this total rough time) too small to pay for waking the workers
// runs on the caller.
int region_threads(int threads, double work_ns) {
  if (work_ns >= 0 && threads > 1) {
    const bool asleep = ThreadPool::instance().sleeping() > 0;
    if (work_ns < (asleep ? kMinParallelNsSleeping : kMinParallelNsSpinning)) return 1;
  }
  return threads;
}

// A piece of the work on A that a region runs before its blocks (the blocks wait for all of
// them): `at`: K [k0, k1) of the direct path's A^T panel from row i0, at dst; `decode_a`: rows
// [i0, i1) of the decode path's A converted (fp32 rows with the scales applied, or fp8 as
// bf16 pairs), the whole buffer at dst.
struct Pack {
  enum class Kind : std::uint8_t { at, decode_a };
  const Problem* pr;
  std::int64_t i0, k0, k1;
  float* dst;
  Kind kind = Kind::at;
  std::int64_t i1 = 0;
};

// Rows [i0, i1) of the decode path's A, converted into buf (the problem's M x K rows): fp8 x fp8
// as bf16 pairs in the pairs kernel's order, unscaled; otherwise fp32 rows with the scales
// applied.
void convert_decode_a(const Problem& pr, std::int64_t i0, std::int64_t i1, float* buf) {
  const Params& p = *pr.p;
  if (pr.pairs_decode != nullptr) {
    auto* b16 = reinterpret_cast<std::uint16_t*>(buf);
    detail::permute_a_fp8_pairs(static_cast<const std::uint8_t*>(p.a) + i0 * pr.lda, i1 - i0,
                                pr.lda, p.k, pr.e4m3, detail::fp8_pairs_super(p.m),
                                b16 + i0 * pr.lda16);
    return;
  }
  if (p.trans_a == Trans::N) {
    convert_a_rows(pr, i0, static_cast<int>(i1 - i0), 0, p.k, buf + i0 * p.k, p.k);
    return;
  }
  for (std::int64_t i = i0; i < i1; ++i)
    for (std::int64_t q = 0; q < p.k; ++q)
      pr.fam->convert(a_at(pr, i, q), p.a_type, 1, a_scale(pr, i, q), pr.e4m3, buf + i * p.k + q);
}

// Runs the blocks in one parallel region of at most `threads` threads, each block claimed once from
// a shared counter: block t goes to the t-th thread to arrive (with as many blocks as threads, the
// engine's thread grid), more blocks are taken largest first. A worker that is slow to wake finds
// its block already done by the caller instead of holding it up. The direct path's A^T pieces run
// first, in the same region: tasks are claimed in order from one counter, so once a thread claims a
// block every piece has been claimed by a thread running it (a piece never waits), and the block
// waits only for them to finish - one fork/join per call instead of two, which a batch of small
// products would otherwise pay per item.
void execute(std::vector<Block>& blocks, const std::vector<Pack>& packs, int threads) {
  if (blocks.empty() && packs.empty()) return;
  // Largest first; equal costs in the order add_blocks made them (problem, then rows, columns,
  // slice). Not std::stable_sort: its temporary buffer was a heap allocation per fused call.
  if (blocks.size() > static_cast<std::size_t>(std::max(1, threads)))
    std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) {
      if (a.cost != b.cost) return a.cost > b.cost;
      return std::tie(a.pr, a.m0, a.n0, a.slice) < std::tie(b.pr, b.m0, b.n0, b.slice);
    });
  const auto np = static_cast<std::int64_t>(packs.size());
  std::atomic<std::int64_t> packed{0};
  struct Count {  // counted even if the piece throws, so no block waits forever
    std::atomic<std::int64_t>& n;
    ~Count() { n.fetch_add(1, std::memory_order_release); }
  };
  auto task = [&](std::int64_t i) {
    if (i < np) {
      const Count done{packed};
      const Pack& a = packs[static_cast<std::size_t>(i)];
      if (a.kind == Pack::Kind::decode_a) return convert_decode_a(*a.pr, a.i0, a.i1, a.dst);
      return pack_at(*a.pr, a.i0, a.k0, a.k1, a.dst);
    }
    while (packed.load(std::memory_order_acquire) < np) spin_pause();
    run_block(blocks[static_cast<std::size_t>(i - np)]);
  };
  ThreadPool::instance().run_tasks(threads, np + static_cast<std::int64_t>(blocks.size()), task);
}

// Caller-thread scratch of one execution: problems, blocks, converted A, the direct path's A^T
// and split-K sums (grow-only, so a repeated call does not allocate).

struct Batch {
  std::vector<Params> params;
  // Schedule::swap: the swapped operands problems point into (reserved for every problem of the
  // execution before the first is made, so it never reallocates; grow-only like the rest).
  std::vector<Params> swapped;
  std::vector<Problem> problems;
  std::vector<Block> blocks;
  std::vector<Pack> packs;
  std::vector<std::size_t> counts;  // items per call
  Buffer a32, partial;
};
Batch& batch_scratch() {
  thread_local Batch b;
  return b;
}

// The problem of p under its resolved schedule s: with s.swap, of p's operands swapped (kept
// in bt.swapped, reserved by the caller), unless A and B are not read (K = 0, alpha = 0:
// C = beta * C as the caller's problem).
Problem problem_of(Batch& bt, const Params& p, const Schedule& s) {
  if (!s.swap || p.k == 0 || p.alpha == 0.0f) {
    Schedule t = s;
    t.swap = false;
    return make_problem(p, t);
  }
  if (bt.swapped.size() == bt.swapped.capacity())
    throw std::logic_error("gemm: swapped operands not reserved");  // would move the others
  bt.swapped.push_back(detail::swapped(p));
  Problem pr = make_problem(bt.swapped.back(), s);
  pr.ct = true;
  return pr;
}

// Floats of the region's buffer that the decode path's converted A takes: fp32 rows of K, or
// fp8 x fp8 as bf16 rows of whole super-blocks (fp8_pairs_row).
std::int64_t decode_a_floats(const Problem& pr) {
  const Params& p = *pr.p;
  const bool fp8_pairs = pr.pairs_decode != nullptr && p.a_type == DType::fp8;
  return round_up(fp8_pairs ? ceil_div(p.m * detail::fp8_pairs_row(p.k), 2) : p.m * p.k, 16);
}

// Runs every problem of the batch (already resolved) in one region: converts A for the
// decode problems that need it, makes the blocks, executes, sums the split-K partials.
// `seq_ns` >= 0: the threads are the engine's choice (see execute), for a job that is part of
// a sequence of this total rough time (0: the job alone); < 0: the schedule fixed them.
void execute_problems(Batch& bt, int threads, double seq_ns) {
  std::int64_t conv = 0, part = 0;
  for (Problem& pr : bt.problems) {
    const Params& p = *pr.p;
    if (p.k == 0 || p.alpha == 0.0f) continue;
    pr.pairs_decode = nullptr;
    if (pr.s.path == Path::decode) {
      if (detail::decodes_fp8_pairs(p, *pr.fam))
        pr.pairs_decode = pr.fam->decode_fp8_pairs;
      else if (detail::decodes_bf16_pairs(p, *pr.fam))
        pr.pairs_decode = pr.fam->decode_bf16_pairs;
    }
    const bool bf16_in_place = pr.pairs_decode != nullptr && p.a_type == DType::bf16;
    if (pr.s.path == Path::decode && !bf16_in_place &&
        (p.a_type != DType::f32 || p.trans_a != Trans::N))
      conv += decode_a_floats(pr);
    if (pr.s.path == Path::direct) conv += direct_at_floats(p.m, p.k, pr.kw, pr.fam->direct_panel);
    if (pr.s.path == Path::direct && pr.scaled) conv += direct_as_floats(pr);
    if (pr.slices > 1) part += round_up(pr.slices * p.m * p.n, 16);
  }
  float* conv_buf = conv > 0 ? bt.a32.get(conv) : nullptr;
  float* part_buf = part > 0 ? bt.partial.get(part) : nullptr;
  bt.blocks.clear();
  bt.packs.clear();
  for (Problem& pr : bt.problems) {
    const Params& p = *pr.p;
    if (p.k == 0 || p.alpha == 0.0f) {  // C = beta * C: A and B are not read
      scale_c(pr);
      continue;
    }
    if (pr.s.path == Path::decode) {
      pr.a32 = static_cast<const float*>(p.a);
      pr.lda32 = pr.lda;
      if (pr.pairs_decode != nullptr && p.a_type == DType::bf16) {
        pr.a16 = static_cast<const std::uint16_t*>(p.a);
        pr.lda16 = pr.lda;
      } else if (pr.pairs_decode != nullptr || p.a_type != DType::f32 || p.trans_a != Trans::N) {
        // A converted (small: M <= 64 rows) by the region's threads before the blocks, rows shared
        // out, so that the workers do not wait while the caller converts it alone: fp8 as bf16
        // (half the floats of the buffer reserved for it), scales kept apart; otherwise fp32 rows
        // with the scales applied.
        float* buf = conv_buf;
        conv_buf += decode_a_floats(pr);
        const std::int64_t rows = ceil_div(p.m, std::max(1, threads));
        for (std::int64_t i0 = 0; i0 < p.m; i0 += rows)
          bt.packs.push_back({&pr, i0, 0, 0, buf, Pack::Kind::decode_a, std::min(p.m, i0 + rows)});
        if (pr.pairs_decode != nullptr) {
          pr.a16 = reinterpret_cast<const std::uint16_t*>(buf);
          pr.lda16 = detail::fp8_pairs_row(p.k);
        } else {
          pr.a32 = buf;
          pr.lda32 = p.k;
        }
      }
    }
    if (pr.s.path == Path::direct) {
      // A^T packed in pieces of 512 K values of a panel, the pieces shared by the threads; or,
      // where each block has panels of its own, by the blocks (direct_block).
      const int P = pr.fam->direct_panel;
      const std::int64_t panels = ceil_div(p.m, P), kwords = p.k / pr.kw;
      pr.at_in_block = pr.s.threads_n == 1 && !pr.k2;
      for (std::int64_t q = 0; q < panels && !pr.at_in_block; ++q)
        for (std::int64_t k0 = 0; k0 < p.k; k0 += 512)
          bt.packs.push_back({&pr, q * P, k0, std::min(p.k, k0 + 512), conv_buf + q * P * kwords});
      pr.at = conv_buf;
      conv_buf += direct_at_floats(p.m, p.k, pr.kw, P);
      if (pr.scaled) {
        pr.as = conv_buf;
        conv_buf += direct_as_floats(pr);
      }
    }
    if (pr.slices > 1) {
      pr.partial = part_buf;
      part_buf += round_up(pr.slices * p.m * p.n, 16);
    }
    add_blocks(pr, bt.blocks);
  }
  double work_ns = seq_ns;  // the job's own rough time, or its sequence's when larger
  if (seq_ns >= 0) {
    double own = 0;
    for (const Problem& pr : bt.problems)
      own += detail::rough_ns(pr.p->b_type, pr.p->m, pr.p->n, pr.p->k);
    work_ns = std::max(seq_ns, own);
  }
  const int wanted = threads;
  threads = region_threads(threads, work_ns);
  execute(bt.blocks, bt.packs, threads);
  for (const Problem& pr : bt.problems)
    if (pr.slices > 1 && pr.p->k > 0 && pr.p->alpha != 0.0f) finish_split(pr);
  // Ran alone because the workers slept: wake them now, after the work, so that the jobs that
  // follow find them waiting. Otherwise a run of small jobs after a pause (or after a benchmark
  // rested the pool) stayed on one thread to its end, each job finding the workers asleep.
  // (Alone while worth two threads: the workers slept when region_threads looked; wake()
  // checks again.)
  if (threads < wanted && work_ns >= kMinParallelNsSpinning) ThreadPool::instance().wake();
}

}  // namespace

Schedule resolve(const Params& p) {
  return resolve_with(p, p.schedule.threads != 0 ? p.schedule.threads : p.threads);
}

std::string describe(const Schedule& s) {
  const auto& f = detail::family(s.isa == Isa::automatic ? detected_isa() : s.isa);
  // The direct path has no MC / NC blocks and its own kernel (W rows x A rows).
  std::string d =
      s.path == Path::direct
          ? fmt::format("path=direct{} kernel={}_direct_{}x{} kc={} threads={} grid={}x{}",
                        s.swap ? " swap" : "", isa_name(f.isa), f.direct_rows, f.direct_panel, s.kc,
                        s.threads, s.threads_m, s.threads_n)
          : fmt::format("path={}{} kernel={} mc={} nc={} kc={} threads={} grid={}x{}",
                        path_name(s.path), s.swap ? " swap" : "", f.name, s.mc, s.nc, s.kc,
                        s.threads, s.threads_m, s.threads_n);
  if (s.path != Path::packed && s.path != Path::direct) {
    d += fmt::format(" k_tile={} split_k={}", s.decode_k_tile, s.split_k);
  } else if (s.split_k > 1) {
    d += fmt::format(" split_k={}", s.split_k);
  }
  if (s.path == Path::packed) d += fmt::format(" order={}", order_name(s.order));
  d += fmt::format(" stages={}", s.stages);
  return d;
}

std::string to_string(const Schedule& s) {
  return fmt::format(
      "path={} isa={} mc={} nc={} kc={} threads={} grid={}x{} k_tile={} split_k={} stages={} "
      "fuse={} swap={} order={}",
      path_name(s.path), isa_name(s.isa), s.mc, s.nc, s.kc, s.threads, s.threads_m, s.threads_n,
      s.decode_k_tile, s.split_k, s.stages, fuse_name(s.fuse_items), s.swap ? 1 : 0,
      order_name(s.order));
}

void check_schedule_ranges(const Schedule& s) {
  auto in = [](std::string_view field, int v, int hi) {
    if (v < 0 || v > hi)
      throw std::invalid_argument(fmt::format("schedule: {}={} outside 0..{}", field, v, hi));
  };
  in("mc", s.mc, kMaxCacheBlock);
  in("nc", s.nc, kMaxCacheBlock);
  in("kc", s.kc, kMaxCacheBlock);
  in("threads", s.threads, kMaxScheduleThreads);
  in("grid (threads_m)", s.threads_m, kMaxScheduleThreads);
  in("grid (threads_n)", s.threads_n, kMaxScheduleThreads);
  in("split_k", s.split_k, kMaxScheduleThreads);
  in("k_tile", s.decode_k_tile, kMaxDecodeKTile);
  in("stages", s.stages, tile::kMaxStages);
  if (s.threads_m * s.threads_n > kMaxScheduleThreads)  // (each at most 1024: no overflow)
    throw std::invalid_argument(fmt::format("schedule: grid {}x{} has more than {} blocks",
                                            s.threads_m, s.threads_n, kMaxScheduleThreads));
  if ((s.threads_m == 0) != (s.threads_n == 0))
    throw std::invalid_argument("schedule: grid needs both threads_m and threads_n, or neither");
  if (s.decode_k_tile % kFp8Block != 0)
    throw std::invalid_argument(
        fmt::format("schedule: k_tile={} is not a multiple of {}", s.decode_k_tile, kFp8Block));
}

bool grid_makes_threads(const Schedule& s, int threads, bool fused) {
  const int region = s.threads != 0 ? s.threads : threads;
  const int grid = s.threads_m * s.threads_n;
  return fused || grid == 0 || grid == region || grid * std::max(s.split_k, 1) == region;
}

Schedule parse_schedule(std::string_view text) {
  Schedule s;
  auto bad = [](std::string_view what) {  // quoting at most 80 characters of it
    throw std::invalid_argument(fmt::format("schedule: bad field '{}{}'", what.substr(0, 80),
                                            what.size() > 80 ? "..." : ""));
  };
  auto to_int = [&](std::string_view field, std::string_view v) {
    int x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || end != v.data() + v.size() || x < 0) bad(field);
    return x;
  };
  // An enum field by the name its *_name() function gives each value.
  auto by_name = [&]<class E>(std::string_view field, std::string_view v,
                              std::initializer_list<E> all, std::string_view (*name_of)(E)) {
    for (E e : all)
      if (v == name_of(e)) return e;
    bad(field);
    return *all.begin();  // not reached: bad() throws
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && text[pos] == ' ') ++pos;
    if (pos >= text.size()) break;
    std::size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view field = text.substr(pos, end - pos);
    pos = end;
    const std::size_t eq = field.find('=');
    if (eq == std::string_view::npos) bad(field);
    const std::string_view key = field.substr(0, eq), v = field.substr(eq + 1);
    if (key == "path") {
      s.path =
          by_name(field, v, {Path::automatic, Path::packed, Path::decode, Path::direct}, path_name);
    } else if (key == "isa") {
      s.isa = by_name(field, v, {Isa::automatic, Isa::scalar, Isa::avx2, Isa::avx512}, isa_name);
    } else if (key == "mc") {
      s.mc = to_int(field, v);
    } else if (key == "nc") {
      s.nc = to_int(field, v);
    } else if (key == "kc") {
      s.kc = to_int(field, v);
    } else if (key == "threads") {
      s.threads = to_int(field, v);
    } else if (key == "grid") {
      const std::size_t x = v.find('x');
      if (x == std::string_view::npos) bad(field);
      s.threads_m = to_int(field, v.substr(0, x));
      s.threads_n = to_int(field, v.substr(x + 1));
    } else if (key == "k_tile") {
      s.decode_k_tile = to_int(field, v);
    } else if (key == "split_k") {
      s.split_k = to_int(field, v);
    } else if (key == "stages") {
      s.stages = to_int(field, v);
    } else if (key == "fuse") {
      s.fuse_items = by_name(field, v, {Fuse::automatic, Fuse::on, Fuse::off}, fuse_name);
    } else if (key == "swap") {
      s.swap = to_int(field, v) != 0;
    } else if (key == "order") {
      s.order = by_name(field, v, {Order::automatic, Order::mk, Order::km}, order_name);
    } else {
      bad(field);
    }
  }
  check_schedule_ranges(s);
  return s;
}

std::string_view form_name(Form f) {
  switch (f) {
    case Form::single:
      return "gemm";
    case Form::batched:
      return "batched";
    case Form::grouped_contiguous:
      return "grouped_contiguous";
    case Form::grouped_masked:
      return "grouped_masked";
  }
  return "?";
}

namespace {

// One call in one region; `seq_ns`: as execute_problems (the rough time of the sequence of
// calls it belongs to).
void gemm_in(const Params& p, double seq_ns) {
  check(p, false);
  if (p.m == 0 || p.n == 0) return;
  Batch& bt = batch_scratch();
  // A nested call (from inside a region) must not clobber the caller's scratch.
  Batch local;
  Batch& use = bt.problems.empty() ? bt : local;
  use.problems.clear();
  use.swapped.clear();
  use.swapped.reserve(1);
  use.problems.push_back(problem_of(use, p, resolve(p)));
  execute_problems(use, use.problems.front().s.threads, p.schedule.threads == 0 ? seq_ns : -1.0);
  use.problems.clear();
}

}  // namespace

void gemm(const Params& p) {
  gemm_in(p, 0.0);
}

namespace {

// Group g's weights: (N, K) rows at b + g * N * ldb, scales at b_scale + g * ceil(N/128) *
// ldb_scale.
Params group_params(const Params& p, std::int64_t g) {
  Params q = p;
  const std::int64_t ldb = p.ldb != 0 ? p.ldb : p.k;
  const std::int64_t ldbs = p.ldb_scale != 0 ? p.ldb_scale : ceil_div(p.k, kFp8Block);
  q.b = static_cast<const std::byte*>(p.b) +
        g * p.n * ldb * static_cast<std::int64_t>(dtype_size(p.b_type));
  if (p.b_scale != nullptr) q.b_scale = p.b_scale + g * ceil_div(p.n, kFp8Block) * ldbs;
  return q;
}

void check_call(const Call& c) {
  if (c.items < 0)
    throw std::invalid_argument(c.form == Form::batched ? "gemm: negative batch"
                                                        : "gemm: negative group count");
  if (c.form == Form::grouped_contiguous || c.form == Form::grouped_masked) {
    if (c.p.trans_a != Trans::N || c.p.trans_b != Trans::T)
      throw std::invalid_argument("gemm: grouped GEMM takes A (rows, K) and W (groups, N, K)");
    if (c.items > 0 && c.index == nullptr)
      throw std::invalid_argument("gemm: grouped GEMM needs offsets / counts");
  }
}

void expand_items(const Call& c, std::vector<Params>& out) {
  const Params& p = c.p;
  if (c.form == Form::single) {
    out.push_back(p);
    return;
  }
  if (c.form == Form::batched) {
    const BatchStrides& st = c.strides;
    for (std::int64_t b = 0; b < c.items; ++b) {
      Params q = p;
      q.a = static_cast<const std::byte*>(p.a) +
            b * st.a * static_cast<std::int64_t>(dtype_size(p.a_type));
      q.b = static_cast<const std::byte*>(p.b) +
            b * st.b * static_cast<std::int64_t>(dtype_size(p.b_type));
      q.c =
          static_cast<std::byte*>(p.c) + b * st.c * static_cast<std::int64_t>(dtype_size(p.c_type));
      if (p.a_scale != nullptr) q.a_scale = p.a_scale + b * st.a_scale;
      if (p.b_scale != nullptr) q.b_scale = p.b_scale + b * st.b_scale;
      out.push_back(q);
    }
    return;
  }
  const std::int64_t lda = p.lda != 0 ? p.lda : p.k, ldc = p.ldc != 0 ? p.ldc : p.n;
  const std::int64_t ldas = p.lda_scale != 0 ? p.lda_scale : ceil_div(p.k, kFp8Block);
  const auto a_es = static_cast<std::int64_t>(dtype_size(p.a_type));
  const auto c_es = static_cast<std::int64_t>(dtype_size(p.c_type));
  for (std::int64_t g = 0; g < c.items; ++g) {
    std::int64_t r0 = 0, rows = 0;
    if (c.form == Form::grouped_contiguous) {
      r0 = c.index[g];
      const std::int64_t r1 = c.index[g + 1];
      if (r0 < 0 || r1 < r0 || r1 > p.m)
        throw std::invalid_argument("gemm: group offsets out of range");
      rows = r1 - r0;
    } else {
      if (c.index[g] < 0 || c.index[g] > p.m)
        throw std::invalid_argument("gemm: masked count out of range");
      r0 = g * p.m;
      rows = c.index[g];
    }
    Params q = group_params(p, g);
    q.m = rows;
    q.lda = lda;
    q.ldc = ldc;
    q.a = static_cast<const std::byte*>(p.a) + r0 * lda * a_es;
    q.c = static_cast<std::byte*>(p.c) + r0 * ldc * c_es;
    if (p.a_scale != nullptr) q.a_scale = p.a_scale + r0 * ldas;
    out.push_back(q);
  }
}

// Items with no rows or columns do nothing (their C is not touched).
void drop_empty(std::vector<Params>& v, std::size_t first) {
  v.erase(std::remove_if(v.begin() + static_cast<std::ptrdiff_t>(first), v.end(),
                         [](const Params& q) { return q.m == 0 || q.n == 0; }),
          v.end());
}

// A fork/join of the pool in rough_ns's units (a few microseconds): work under it runs in one
// region rather than one per item.
constexpr double kRegionRoughNs = 8e3;

// Fuse::automatic's choice for a call's items (expanded, empty ones included) on `threads`.
bool fuse_pays(const std::vector<Params>& items, int threads) {
  thread_local std::vector<double> cost;
  cost.clear();
  double total = 0;
  for (const Params& q : items)
    if (q.m > 0 && q.n > 0) total += cost.emplace_back(detail::rough_ns(q.b_type, q.m, q.n, q.k));
  if (cost.size() < 2 || threads < 2) return false;
  // The items dealt largest first to the least loaded thread, against all threads on each item
  // in turn plus a fork/join each.
  std::sort(cost.begin(), cost.end(), std::greater<>());
  thread_local std::vector<double> load;
  load.assign(static_cast<std::size_t>(threads), 0.0);
  for (const double x : cost) *std::min_element(load.begin(), load.end()) += x;
  const double fused = *std::max_element(load.begin(), load.end());
  return fused <= total / threads + static_cast<double>(cost.size()) * kRegionRoughNs;
}

int call_threads(const Call& c) {
  return c.p.schedule.threads != 0 ? c.p.schedule.threads : c.p.threads;
}

}  // namespace

bool fuses_items(const Call& c) {
  if (c.form == Form::single || c.p.schedule.fuse_items == Fuse::off) return false;
  if (c.p.schedule.fuse_items == Fuse::on) return true;
  std::vector<Params> items;
  expand_items(c, items);
  return fuse_pays(items, call_threads(c));
}

void run(const Call& c) {
  check_call(c);
  if (c.form == Form::single) return gemm(c.p);
  thread_local std::vector<Params> items;
  items.clear();
  if (c.p.schedule.fuse_items != Fuse::on) expand_items(c, items);
  if (c.p.schedule.fuse_items == Fuse::off ||
      (c.p.schedule.fuse_items == Fuse::automatic && !fuse_pays(items, call_threads(c)))) {
    // One region per item, each with all threads.
    double seq_ns = 0;  // the items follow each other: worth waking the workers for all
    for (const Params& q : items) seq_ns += detail::rough_ns(q.b_type, q.m, q.n, q.k);
    for (const Params& q : items) gemm_in(q, seq_ns);
    return;
  }
  run_together(&c, 1, call_threads(c));
}

void run_together(const Call* calls, std::size_t count, int threads) {
  if (threads < 1) throw std::invalid_argument("gemm: threads < 1");
  Batch local;
  Batch& scratch = batch_scratch();
  Batch& bt = scratch.problems.empty() ? scratch : local;
  bt.params.clear();
  bt.problems.clear();
  bt.swapped.clear();
  bt.counts.clear();
  for (std::size_t i = 0; i < count; ++i) {
    check_call(calls[i]);
    const std::size_t first = bt.params.size();
    expand_items(calls[i], bt.params);
    drop_empty(bt.params, first);
    bt.counts.push_back(bt.params.size() - first);
  }
  // Problems point into bt.params, complete by now. An item without a grid of its own gets
  // its share of the region's threads as blocks.
  bt.problems.reserve(bt.params.size());
  bt.swapped.reserve(bt.params.size());
  std::size_t j = 0;
  for (const std::size_t items : bt.counts) {
    const int share = static_cast<int>(std::max<std::int64_t>(
        1, threads / static_cast<std::int64_t>(std::max<std::size_t>(1, items))));
    for (std::size_t e = j + items; j < e; ++j) {
      check(bt.params[j], true);
      bt.problems.push_back(problem_of(bt, bt.params[j], resolve_with(bt.params[j], share)));
    }
  }
  bool adaptive = true;  // no call fixed its thread count
  for (std::size_t i = 0; i < count; ++i) adaptive = adaptive && calls[i].p.schedule.threads == 0;
  execute_problems(bt, threads, adaptive ? 0.0 : -1.0);
  bt.problems.clear();
  bt.params.clear();
}

void batched_gemm(const Params& p, std::int64_t batch, const BatchStrides& s) {
  Call c;
  c.p = p;
  c.form = Form::batched;
  c.items = batch;
  c.strides = s;
  run(c);
}

void grouped_gemm_contiguous(const Params& p, std::int64_t groups, const std::int32_t* offsets) {
  Call c;
  c.p = p;
  c.form = Form::grouped_contiguous;
  c.items = groups;
  c.index = offsets;
  run(c);
}

void grouped_gemm_masked(const Params& p, std::int64_t groups, const std::int32_t* counts) {
  Call c;
  c.p = p;
  c.form = Form::grouped_masked;
  c.items = groups;
  c.index = counts;
  run(c);
}

}  // namespace attain::gemm
