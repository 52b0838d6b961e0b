// The frame's operand handling: per-thread scratch, A and W converted to fp32, packed panels,
// C written back (16-bit C rounded once), and the problem a resolved schedule makes.
#include "kernels/cpu/gemm/frame/problem.hpp"

#include <atomic>
#include <bit>
#include <cmath>

#include "kernels/cpu/gemm/paths/path.hpp"

namespace attain::gemm::detail {

Workspace& workspace() {
  thread_local Workspace ws;
  return ws;
}

namespace {

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

// fp8 as bf16 pairs: `rows` rows of kc e4m3 values (row r at at(r)) as 32-bit words of two
// bf16 each, row after row in tmp (kc / 2 words a row), then transposed into a panel of R rows.
// The values are unscaled (the scales go on the sums) and exact: e4m3 fits bf16.
// With AVX512-VBMI each row goes to bf16 in one pass of byte lookups (the family's e4m3_to_bf16).
template <class At>
void pack_fp8_pairs(const Problem& pr, int rows, std::int64_t kc, int R, At at, float* tmp,
                    float* dst) {
  const bool vbmi = cpu_info().avx512vbmi && pr.fam->e4m3_to_bf16 != nullptr;
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
      pr.fam->e4m3_to_bf16(reinterpret_cast<const std::uint8_t*>(at(r)), kc, pr.e4m3,
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

}  // namespace

void convert_a_rows(const Problem& pr, std::int64_t i0, int rows, std::int64_t p0, std::int64_t len,
                    float* dst, std::int64_t ld) {
  for (int r = 0; r < rows; ++r)
    convert_k_run(
        pr, pr.p->a_type, [&](std::int64_t q) { return a_at(pr, i0 + r, q); },
        [&](std::int64_t q) { return a_scale(pr, i0 + r, q); }, p0, len, dst + r * ld);
}

void convert_w_rows(const Problem& pr, std::int64_t j0, int rows, std::int64_t p0, std::int64_t len,
                    float* dst, std::int64_t ld) {
  for (int r = 0; r < rows; ++r)
    convert_k_run(
        pr, pr.p->b_type, [&](std::int64_t q) { return b_at(pr, q, j0 + r); },
        [&](std::int64_t q) { return b_scale(pr, q, j0 + r); }, p0, len, dst + r * ld);
}

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

void write_back(const Problem& pr, std::int64_t i0, std::int64_t j0, std::int64_t rows,
                std::int64_t cols, const float* src, std::int64_t lds) {
  write_back(pr, i0, j0, rows, cols, src, lds, pr.p->beta);
}

void write_back(const Problem& pr, std::int64_t i0, std::int64_t j0, std::int64_t rows,
                std::int64_t cols, const float* src, std::int64_t lds, float beta) {
  const Params& p = *pr.p;
  if (pr.fam->write_row != nullptr) {
    const auto es = static_cast<std::int64_t>(dtype_size(p.c_type));
    for (std::int64_t i = 0; i < rows; ++i)
      pr.fam->write_row(p.c_type, src + i * lds, cols, p.alpha, beta,
                        static_cast<char*>(p.c) + ((i0 + i) * pr.ldc + j0) * es);
    return;
  }
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::int64_t idx = (i0 + i) * pr.ldc + j0 + j;
      const float ab = p.alpha * src[i * lds + j];
      store_c(p.c_type, p.c, idx,
              beta != 0.0f ? std::fma(beta, load_c(p.c_type, p.c, idx), ab) : ab);
    }
}

void scale_c(const Problem& pr) {
  const Params& p = *pr.p;
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      const std::int64_t idx = i * pr.ldc + j;
      store_c(p.c_type, p.c, idx, p.beta != 0.0f ? p.beta * load_c(p.c_type, p.c, idx) : 0.0f);
    }
}

void finish_split(const Problem& pr) {
  const Params& p = *pr.p;
  const std::int64_t mn = p.m * p.n;
  for (int s = 1; s < pr.slices; ++s) {
    const float* src = pr.partial + s * mn;
    for (std::int64_t i = 0; i < mn; ++i) pr.partial[i] += src[i];
  }
  write_back(pr, 0, 0, p.m, p.n, pr.partial, p.n);
}

void add_pieces(const Problem& pr, std::int64_t m0, std::int64_t m1, std::int64_t n0,
                std::int64_t n1, std::int64_t width, double cost_per_col, std::vector<Block>& out) {
  for (std::int64_t j = n0; j < n1; j += width) {
    const std::int64_t j1 = std::min(n1, j + width);
    const double cost = cost_per_col * static_cast<double>(j1 - j);
    if (pr.slices <= 1) {
      out.push_back({&pr, m0, m1, j, j1, -1, cost});
      continue;
    }
    for (int sl = 0; sl < pr.slices; ++sl) out.push_back({&pr, m0, m1, j, j1, sl, cost});
  }
}

// The problem of p under its resolved schedule s (make_problem's contract: frame/problem.hpp).
Problem make_problem(const Params& p, const Schedule& s) {
  static std::atomic<std::uint64_t> ids{0};
  Problem pr{};
  pr.p = &p;
  pr.id = ++ids;
  pr.s = s;
  pr.fam = &family(pr.s.isa);
  pr.blk = blocking(pr.s.isa);
  pr.lda = p.lda != 0 ? p.lda : (p.trans_a == Trans::N ? p.k : p.m);
  pr.ldb = p.ldb != 0 ? p.ldb : (p.trans_b == Trans::T ? p.k : p.n);
  pr.ldc = p.ldc != 0 ? p.ldc : p.n;
  const std::int64_t kb = ceil_div(p.k, kFp8Block);
  pr.lda_s = p.lda_scale != 0 ? p.lda_scale : kb;
  pr.ldb_s = p.ldb_scale != 0 ? p.ldb_scale : kb;
  pr.e4m3 = e4m3_table();
  if (s.split_k > 1) {  // (the fp8 pairs decode: whole super-blocks of A's order)
    const std::int64_t unit = decodes_fp8_pairs(p, *pr.fam) ? kFp8PairsSuper : kFp8Block;
    pr.kslice = round_up(ceil_div(p.k, s.split_k), unit);
    pr.slices = static_cast<int>(ceil_div(p.k, pr.kslice));
  }
  // bf16 pairs: both operands bf16, stored K-contiguous (A: N, B: T) with even K, leading
  // dimensions and KC and 4-byte-aligned bases, so that every pair is one aligned word (the
  // packed path's route; the direct path's bind sets its own).
  const auto aligned4 = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 4 == 0; };
  const bool fp8 = p.a_type == DType::fp8;
  pr.pairs = multiplies_bf16_pairs(p, *pr.fam) && pr.lda % 2 == 0 && pr.ldb % 2 == 0 &&
             s.kc % (fp8 ? kFp8Block : 2) == 0 && (fp8 || (aligned4(p.a) && aligned4(p.b)));
  path_impl(s.path).bind(pr);
  pr.kw = pr.pairs ? 2 : 1;
  return pr;
}

}  // namespace attain::gemm::detail
