// The decode path: few rows of A (M <= kDecodeMaxM) against W stored (N, K), which is streamed
// once and converted in registers by the family's decode kernel; A converted first (fp32 rows
// with the scales applied, or bf16 pairs). Threads split N.
#include <fmt/format.h>

#include <algorithm>

#include "kernels/cpu/gemm/paths/path.hpp"

namespace attain::gemm::detail {

namespace {

// Columns [n0, n1) of C over K slice `slice` (-1: all of K).
void decode_block(const Problem& pr, std::int64_t n0, std::int64_t n1, int slice) {
  const Params& p = *pr.p;
  Workspace& ws = workspace();
  const std::int64_t k0 = slice < 0 ? 0 : slice * pr.kslice;
  const std::int64_t k1 = slice < 0 ? p.k : std::min(p.k, k0 + pr.kslice);
  DecodeArgs g;
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
  g.panel_bytes = decode_panel_bytes();
  // K in equal tiles of at most the schedule's k_tile (1536 with k_tile 1024: 768 + 768, not
  // 1024 + 512): the pipeline prefetches tile t+d while tile t computes, element for element,
  // so a short tile followed by a long one would leave part of the long one unfetched.
  const std::int64_t tiles = ceil_div(g.k, pr.s.decode_k_tile);
  g.k_tile = tiles <= 1 ? pr.s.decode_k_tile : round_up(ceil_div(g.k, tiles), kFp8Block);
  Decode decode = pr.fam->decode;
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
  if (decode_uses_scratch(p, *pr.fam)) g.scratch = ws.tmp.get(decode_scratch_floats(g.k_tile, g.k));
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

// Rows [i0, i1) of the decode path's A, converted into buf (the problem's M x K rows): fp8 x fp8
// as bf16 pairs in the pairs kernel's order, unscaled; otherwise fp32 rows with the scales
// applied.
void convert_decode_a(const Problem& pr, std::int64_t i0, std::int64_t i1, float* buf) {
  const Params& p = *pr.p;
  if (pr.pairs_decode != nullptr) {
    auto* b16 = reinterpret_cast<std::uint16_t*>(buf);
    pr.fam->permute_a_fp8_pairs(static_cast<const std::uint8_t*>(p.a) + i0 * pr.lda, i1 - i0,
                                pr.lda, p.k, pr.e4m3, fp8_pairs_super(p.m), b16 + i0 * pr.lda16);
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

void run_pack(const Pack& a) {
  convert_decode_a(*a.pr, a.i0, a.i1, a.dst);
}

// Floats of the region's buffer that the decode path's converted A takes: fp32 rows of K, or
// fp8 x fp8 as bf16 rows of whole super-blocks (fp8_pairs_row).
std::int64_t decode_a_floats(const Problem& pr) {
  const Params& p = *pr.p;
  const bool fp8_pairs = pr.pairs_decode != nullptr && p.a_type == DType::fp8;
  return round_up(fp8_pairs ? ceil_div(p.m * fp8_pairs_row(p.k), 2) : p.m * p.k, 16);
}

// Whether A goes through the region's buffer (converted) rather than being read in place: fp32
// rows stored (M, K) are read as they are, and so is bf16 A on the bf16 pairs.
bool converts_a(const Problem& pr) {
  const Params& p = *pr.p;
  const bool bf16_in_place = pr.pairs_decode != nullptr && p.a_type == DType::bf16;
  return !bf16_in_place &&
         (pr.pairs_decode != nullptr || p.a_type != DType::f32 || p.trans_a != Trans::N);
}

// W stored (N, K) and at most kDecodeMaxM rows of A; on the swapped operands at most kDecodeMaxM
// columns (the caller's N becomes the decode path's M) and what the swap needs (the direct
// path's conditions for it).
std::string accepts(const Params& p, const KernelFamily& f, bool swap) {
  if (!decode_ok(p, swap))
    return swap ? fmt::format("the decode path on swapped operands needs n <= {}", kDecodeMaxM)
                : fmt::format("decode path needs trans_b = T and m <= {}", kDecodeMaxM);
  return swap ? kDirectPath.accepts(p, f, true) : "";
}

// The decode kernel multiplies bf16 pairs where the family and CPU have them (fp8 x fp8 or
// bf16 x bf16); otherwise the fp32 route.
void bind(Problem& pr) {
  const Params& p = *pr.p;
  pr.pairs_decode = nullptr;
  if (decodes_fp8_pairs(p, *pr.fam))
    pr.pairs_decode = pr.fam->decode_fp8_pairs;
  else if (decodes_bf16_pairs(p, *pr.fam))
    pr.pairs_decode = pr.fam->decode_bf16_pairs;
}

std::int64_t scratch_floats(const Problem& pr) {
  return converts_a(pr) ? decode_a_floats(pr) : 0;
}

void prepare(Problem& pr, float* buf, int threads, std::vector<Pack>& packs) {
  const Params& p = *pr.p;
  pr.a32 = static_cast<const float*>(p.a);
  pr.lda32 = pr.lda;
  if (pr.pairs_decode != nullptr && p.a_type == DType::bf16) {
    pr.a16 = static_cast<const std::uint16_t*>(p.a);
    pr.lda16 = pr.lda;
    return;
  }
  if (!converts_a(pr)) return;
  // A converted (small: M <= 64 rows) by the region's threads before the blocks, rows shared
  // out, so that the workers do not wait while the caller converts it alone: fp8 as bf16
  // (half the floats of the buffer reserved for it), scales kept apart; otherwise fp32 rows
  // with the scales applied.
  const std::int64_t rows = ceil_div(p.m, std::max(1, threads));
  for (std::int64_t i0 = 0; i0 < p.m; i0 += rows)
    packs.push_back({&pr, i0, 0, 0, buf, std::min(p.m, i0 + rows), run_pack});
  if (pr.pairs_decode != nullptr) {
    pr.a16 = reinterpret_cast<const std::uint16_t*>(buf);
    pr.lda16 = fp8_pairs_row(p.k);
  } else {
    pr.a32 = buf;
    pr.lda32 = p.k;
  }
}

// Each thread's columns in pieces (piece_cols), whole register tiles of kDecodeRows rows of W.
void plan(const Problem& pr, std::vector<Block>& out) {
  const Params& p = *pr.p;
  const Schedule& s = pr.s;
  const std::int64_t chunk = round_up(ceil_div(p.n, s.threads_n), kDecodeRows);
  const std::int64_t width =
      s.threads > 1 ? piece_cols(chunk, kDecodeRows, rough_ns(p.b_type, p.m, chunk, p.k)) : chunk;
  add_pieces(pr, 0, p.m, 0, p.n, width, k_per_block(pr) * (4.0 + static_cast<double>(p.m)), out);
}

void run_block(const Block& b) {
  decode_block(*b.pr, b.n0, b.n1, b.slice);
}

}  // namespace

const PathImpl kDecodePath{Path::decode, accepts, bind, scratch_floats, prepare, plan, run_block};

}  // namespace attain::gemm::detail
