// The direct path: W read where it is stored (or converted a tile at a time), never packed,
// against a packed A^T (panels of the family's direct_panel rows over all of K): for mid-size M,
// where packing W would not be paid back. On the swapped operands (Schedule::swap) it computes
// C^T = W . A^T, A's rows read in place and C written as rows.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/gemm/paths/path.hpp"

namespace attain::gemm::detail {

namespace {

// A^T panels: rows [i0, i0 + P) of op(A) (fewer at the end of M), in a width of whole vectors.
int at_rows(const Problem& pr, std::int64_t i0) {
  return static_cast<int>(std::min<std::int64_t>(pr.fam->direct_panel, pr.p->m - i0));
}

// Scratch floats of A's scales beside the A^T (Problem::scaled): every panel's P values per K
// block.
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

// The k-pairs panel's width (pr.k2: the one panel of M <= direct_lanes rows): the vectors that
// hold M pairs of lanes.
int k2_width(const Problem& pr) {
  return static_cast<int>(round_up(2 * pr.p->m, pr.fam->direct_lanes));
}

// Bytes of the k-pairs panel that pack_at_k2 fills a chunk of K at a time, within Zen 5's 48 KiB
// L1 (at 16 KiB batched 64 x (16 x 128 x 512) fp32, whose rows then take two chunks, runs 0.9x).
constexpr std::int64_t kK2ChunkBytes = 32 * 1024;
// ...and the row whose values it fetches while it copies one: this many rows on (one or four
// rows on run 0.97-1.00x as fast).
constexpr int kK2AheadRows = 2;

// The k-pairs panel: K [k0, k1) (k0 even) at dst + k0 / 2 * L (L = k2_width), at[s * L + 2 i + e] =
// A(i, 2 s + e), zeros past M and past K, gathered from A's rows as they are.
void pack_at_k2(const Problem& pr, std::int64_t k0, std::int64_t k1, float* dst) {
  const Params& p = *pr.p;
  const int L = k2_width(pr), m = static_cast<int>(p.m);
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
  // A row at a time, its pairs copied 8 bytes each, in chunks of K whose part of the panel fits
  // L1 (kK2ChunkBytes): each row's values are read in order, a stream the prefetchers follow,
  // and the chunk's panel lines stay in L1 until every row has written its pair into them
  // (batched 64 x (16 x 128 x 512) fp32 runs 1.10x as fast as with a step of K across the rows).
  float* d = dst + k0 / 2 * L;
  const std::int64_t pairs = len / 2, steps = (len + 1) / 2;
  const std::int64_t chunk = std::max<std::int64_t>(1, kK2ChunkBytes / (4 * L));
  for (std::int64_t s0 = 0; s0 < pairs; s0 += chunk) {
    const std::int64_t s1 = std::min(pairs, s0 + chunk);
    for (int i = 0; i < m; ++i) {
      // The row kK2AheadRows on in this order (this chunk's, or the next chunk's first rows).
      const std::int64_t ia = (i + kK2AheadRows) % m;
      const std::int64_t a0 = i + kK2AheadRows < m ? s0 : s1;
      const float* ra = src + ia * ld;
      for (std::int64_t s = a0; s < std::min(pairs, a0 + chunk); s += 8)
        __builtin_prefetch(ra + 2 * s, 0, 3);
      const float* r = src + i * ld;
      float* di = d + 2 * i;
      for (std::int64_t s = s0; s < s1; ++s) std::memcpy(di + s * L, r + 2 * s, 8);
    }
  }
  if (len % 2 != 0)  // the last value of each row alone, its pair's second lane zero
    for (int i = 0; i < m; ++i)
      d[pairs * L + 2 * i] = src[i * ld + len - 1], d[pairs * L + 2 * i + 1] = 0.0f;
  if (2 * m < L)  // the lanes past M
    for (std::int64_t s = 0; s < steps; ++s) std::fill(d + s * L + 2 * m, d + (s + 1) * L, 0.0f);
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
    pr.fam->e4m3_to_bf16(reinterpret_cast<const std::uint8_t*>(b_at(pr, k0, j + r)), kc, pr.e4m3,
                         reinterpret_cast<std::uint16_t*>(dst + r * ldt));
  for (std::int64_t b = 0; b < ceil_div(kc, kFp8Block); ++b)
    for (int r = 0; r < R; ++r)
      ws[b * R + r] = b_scale(pr, k0 + b * kFp8Block, j + std::min(r, rows - 1));
}

// C's rows this many bytes apart (or a multiple) share few of L1's sets: the unswapped tiles
// write them through a strip of kStripTiles tiles' columns (set_up), whose rows and those of the
// block's fp32 tile lie kStripPad values further apart.
constexpr std::int64_t kAliasStride = 1024;
constexpr std::int64_t kStripTiles = 8;
constexpr std::int64_t kStripPad = 16;
// Strips only where a tile's K (KC, or K) is below this: over longer K the tile's write is a
// small share and the strip's extra pass costs as much (bf16 128 x 7168 x 2048 and 32 x 7168 x
// 2048, one K block: 0.99x with strips; fp32 KC 960-1024 1.10-1.11x, bf16 K 512 / 1536 1.37x /
// 1.13x).
constexpr std::int64_t kStripMaxK = 2048;

// One block of the direct path as direct_block sets it up: K blocks, W tiles (converted into
// scratch where W is not fp32 or bf16 pairs) and where the sums go.
struct DirectBlock {
  std::int64_t m0, m1, n0, n1;
  std::int64_t KC, q0, q1;  // K block; the block's panels of A^T [q0, q1)
  std::int64_t kwords, ldw;
  // Panel q of A^T at at + (q - at_q0) * P * kwords: the problem's (packed before the blocks), or
  // where the block packs its own panels (at_in_block) the thread's, so that a region of many
  // small products (fused items) packs each into the same cache-warm lines instead of into its
  // own slice of a region-wide buffer.
  float* at;
  std::int64_t at_q0;
  // Panel q's A^T (K from 0; P the family's direct_panel).
  float* panel(std::int64_t q, int P) const { return at + (q - at_q0) * P * kwords; }
  bool conv, tiled;
  std::int64_t ldt;  // a converted tile's row stride
  float* wtile;
  float* wscale;
  // The sums: C itself, or (staged) an fp32 tile of the block rounded into 16-bit C at the end,
  // or (strip_cols > 0) an fp32 strip of that many of the block's columns, written into C in
  // place as each strip is done.
  bool staged;
  std::int64_t strip_cols;
  void* out;
  DType out_type;
  std::int64_t ldo, row0, col0;  // row0, col0: the origin in C of the tile (of the first strip)
  float alpha;
};

DirectBlock set_up(const Problem& pr, std::int64_t m0, std::int64_t m1, std::int64_t n0,
                   std::int64_t n1) {
  const Params& p = *pr.p;
  const KernelFamily& f = *pr.fam;
  const int R = f.direct_rows, P = f.direct_panel;
  DirectBlock d{};
  d.m0 = m0, d.m1 = m1, d.n0 = n0, d.n1 = n1;
  // fp8 pairs (pr.scaled): KC whole scale blocks.
  const std::int64_t kw = pr.kw;
  d.KC = round_up(pr.s.kc, pr.k2 ? 2 : pr.scaled ? kFp8Block : kw);
  d.q0 = m0 / P, d.q1 = ceil_div(m1, P);
  d.kwords = p.k / kw, d.ldw = pr.ldb / kw;
  const std::int64_t own = pr.k2 ? k2_width(pr) * ceil_div(p.k, 2) : (d.q1 - d.q0) * P * d.kwords;
  d.at = pr.at_in_block ? workspace().at.get(own) : pr.at;
  d.at_q0 = pr.at_in_block ? d.q0 : 0;
  // W not fp32 (and not bf16 pairs): each tile converted into L1 scratch, rows kc + 16 apart
  // (a multiple of 4 KiB apart, every row's k-th line would share one set); fp8 pairs as bf16
  // words, with the tile's W scales after it.
  d.conv = direct_converts(p, f), d.tiled = d.conv || pr.scaled;
  d.ldt = round_up(std::min(d.KC, p.k) / kw, 16) + 16;
  const std::int64_t scales = pr.scaled ? R * ceil_div(std::min(d.KC, p.k), kFp8Block) : 0;
  d.wtile = d.tiled ? workspace().tmp.get(R * d.ldt + scales) : nullptr;
  d.wscale = pr.scaled ? d.wtile + R * d.ldt : nullptr;
  // 16-bit C. With K in one block the kernel rounds each sum into C itself where it writes C's rows
  // from registers: with pr.ct (write_row from an fp32 tile costs a tenth of a short-K bf16
  // product), and without it on the families whose kernel transposes its sums in registers
  // (direct_writes_rows). Otherwise an fp32 tile of the block (with pr.ct its rows are the caller's
  // rows [n0, n1)), rounded once at the end: a scalar write of C^T to 16 bits is slower, and
  // rounding the tile in strips as they are done gains nothing over the whole tile.
  // fp32 C through the tile too where the threads split W's rows on the swapped operands (C's
  // columns) and K takes more than one block: in place, every K block would update each thread's
  // part of every row of C, and with few columns a thread their lines sit side by side, each
  // core's prefetches pulling in the other's (2 threads, Zen 5 guest, through the tile against
  // in place: fp32 512 x 256 x 7168, 128 columns a thread, 1.05x; 512 x 128 x 2880 1.03x).
  const bool to16 = p.c_type != DType::f32, ct = pr.ct;
  const bool shares_rows = ct && pr.s.threads_m > 1 && p.k > d.KC;
  d.staged = (to16 && !((ct || (f.direct_writes_rows && !pr.k2)) && p.k <= d.KC)) || shares_rows;
  const std::int64_t mb = m1 - m0, nb = n1 - n0;
  // Unswapped, a tile writes R values into each of up to 64 rows of C (each panel's), and the
  // next tiles the values beside them in the same lines. Rows a multiple of 1 KiB apart (N a
  // power of two, 2048 x 2 or 4 bytes ...) fall in a few of L1's sets (and at 64 KiB in one of
  // L2's), so the lines are gone before the next tile comes back to them: every tile's write
  // reaches L2 or L3 (bf16 128 x 1024 x 512, one thread, hot: 0.62 of the bf16 dot peak, 0.91 at
  // N 1000 or 1040). Such C goes through a strip of kStripTiles tiles' columns of the block's
  // rows, rows kStripPad apart, written into C's rows a strip at a time; the block's fp32 tile
  // (staged) gets rows that are not such a multiple apart.
  const auto ces = static_cast<std::int64_t>(dtype_size(p.c_type));
  const bool aliased = !ct && f.direct_writes_rows && (pr.ldc * ces) % kAliasStride == 0;
  const bool short_k = std::min(d.KC, p.k) < kStripMaxK;
  d.strip_cols = aliased && short_k && !d.staged && nb > R ? kStripTiles * R : 0;
  if (d.strip_cols > 0) {
    d.ldo = d.strip_cols + kStripPad;
    d.out = workspace().c_tile.get(mb * d.ldo);
  } else if (d.staged) {
    d.ldo = ct ? mb : nb + (nb * 4 % kAliasStride == 0 ? kStripPad : 0);
    d.out = workspace().c_tile.get((ct ? nb : mb) * d.ldo);
  } else {
    d.ldo = pr.ldc;
    d.out = p.c;
  }
  const bool sums = d.staged || d.strip_cols > 0;
  d.out_type = sums ? DType::f32 : p.c_type;
  d.row0 = sums ? m0 : 0, d.col0 = sums ? n0 : 0;
  d.alpha = sums ? 1.0f : p.alpha;
  return d;
}

// The W tile of `rows` rows from row j (at wt, rows ld apart) against every panel of the block's
// A^T for K [k0, k0 + kc); the last panel fetches the next tile (next). col0: the column of C at
// the origin of the block's output (its first column, or the strip's).
void multiply_tile(const Problem& pr, const DirectBlock& d, std::int64_t col0, std::int64_t k0,
                   std::int64_t kc, std::int64_t j, int rows, const float* wt, std::int64_t ld,
                   float beta, const DirectNext* next) {
  const KernelFamily& f = *pr.fam;
  const int P = f.direct_panel;
  const std::int64_t kw = pr.kw;
  const bool ct = pr.ct;
  const auto ces = static_cast<std::int64_t>(dtype_size(d.out_type));
  for (std::int64_t q = d.q0; q < d.q1; ++q) {
    const int m = at_rows(pr, q * P);
    const std::int64_t i = q * P - d.row0, r = j - col0;  // corner in out
    void* c = static_cast<char*>(d.out) + (ct ? r * d.ldo + i : i * d.ldo + r) * ces;
    const float* at =
        pr.k2 ? d.at + k0 / 2 * k2_width(pr) : d.panel(q, P) + k0 / kw * at_width(pr, m);
    const DirectNext* nq = q + 1 == d.q1 ? next : nullptr;
    if (pr.scaled) {
      const DirectScales sc{panel_scales(pr, q * P) + k0 / kFp8Block * at_width(pr, m), d.wscale,
                            kFp8Block / 2};
      f.direct_fp8(kc / kw, wt, ld, rows, at, m, d.alpha, beta, c, d.ldo, ct, d.out_type, nq, &sc);
      continue;
    }
    pr.direct(kc / kw, wt, ld, rows, at, m, d.alpha, beta, c, d.ldo, ct, d.out_type, nq);
  }
}

// C[m0:m1, n0:n1] (m0 a multiple of the panel width): KC blocks of K outermost (the A^T block,
// M x KC, stays in L2), then tiles of R rows of W (in L1 while every panel of A in [m0, m1)
// passes), the next tile's W fetched during the last panel. fp32 C is accumulated in place;
// 16-bit C rounded by the kernel (K in one block, pr.ct) or through fp32 sums of the block,
// rounded once at the end. Offsets into W and A^T count values (fp32) or words (bf16 pairs,
// kw = 2).
void direct_block(const Problem& pr, std::int64_t m0, std::int64_t m1, std::int64_t n0,
                  std::int64_t n1) {
  const Params& p = *pr.p;
  const int R = pr.fam->direct_rows, P = pr.fam->direct_panel;
  const DirectBlock d = set_up(pr, m0, m1, n0, n1);
  const std::int64_t KC = d.KC, kw = pr.kw, strip = d.strip_cols;
  const auto* w = static_cast<const float*>(p.b);
  const bool fetch = pr.s.stages > 1;
  const auto es = static_cast<std::int64_t>(dtype_size(p.b_type));
  std::int64_t col0 = d.col0;
  for (std::int64_t k0 = 0; k0 < p.k; k0 += KC) {
    const std::int64_t kc = std::min(KC, p.k - k0);
    const float beta = k0 > 0 ? 1.0f : d.staged ? 0.0f : p.beta;
    if (pr.at_in_block)  // this block's panels of A^T for this K block, into the thread's buffer
      for (std::int64_t q = d.q0; q < d.q1; ++q) pack_at(pr, q * P, k0, k0 + kc, d.panel(q, P));
    for (std::int64_t j = n0; j < n1; j += R) {
      const int rows = static_cast<int>(std::min<std::int64_t>(R, n1 - j));
      if (strip > 0 && (j - n0) % strip == 0) col0 = j;
      // The next tile's rows of W as stored: the next R rows, or the first of the next K block.
      DirectNext nx;
      nx.ld = pr.ldb * es;
      if (fetch && j + R < n1) {
        nx.w = reinterpret_cast<const char*>(b_at(pr, k0, j + R));
        nx.bytes = kc * es;
      } else if (fetch && k0 + KC < p.k) {
        nx.w = reinterpret_cast<const char*>(b_at(pr, k0 + KC, n0));
        nx.bytes = std::min(KC, p.k - k0 - KC) * es;
      }
      if (d.conv) convert_w_rows(pr, j, rows, k0, kc, d.wtile, d.ldt);
      if (pr.scaled) convert_w_fp8_pairs(pr, j, rows, R, k0, kc, d.wtile, d.ldt, d.wscale);
      const float* wt = d.tiled ? d.wtile : w + j * d.ldw + k0 / kw;
      multiply_tile(pr, d, col0, k0, kc, j, rows, wt, d.tiled ? d.ldt : d.ldw,
                    strip > 0 ? 0.0f : beta, nx.w != nullptr ? &nx : nullptr);
      if (strip > 0 && ((j + R - n0) % strip == 0 || j + R >= n1))
        write_back(pr, m0, col0, m1 - m0, j + rows - col0, static_cast<const float*>(d.out), d.ldo,
                   beta);
    }
  }
  const auto* tile = static_cast<const float*>(d.out);
  if (d.staged && pr.ct) write_back(pr, n0, m0, n1 - n0, m1 - m0, tile, d.ldo);
  if (d.staged && !pr.ct) write_back(pr, m0, n0, m1 - m0, n1 - n0, tile, d.ldo);
}

void run_pack(const Pack& a) {
  pack_at(*a.pr, a.i0, a.k0, a.k1, a.dst);
}

// W stored (N, K) (trans_b = T), and A stored (M, K) unless fp32; on the swapped operands, what
// the swap needs (swap_ok).
std::string accepts(const Params& p, const KernelFamily& f, bool swap) {
  if (swap)
    return swap_ok(p, f) ? "" : "swap needs A stored (M, K) and W stored (N, K), neither fp8";
  return direct_ok(p, f)
             ? ""
             : "direct path needs W stored (N, K) (trans_b = T), and A stored (M, K) unless fp32";
}

// The route: bf16 pairs (direct_pairs; fp8 with block scales: direct_fp8_pairs) or fp32 values,
// and a panel of few rows of A on k pairs, so that none of the lanes idles.
void bind(Problem& pr) {
  const Params& p = *pr.p;
  pr.pairs = direct_pairs(p, *pr.fam);
  pr.scaled = direct_fp8_pairs(p, *pr.fam);
  pr.direct = pr.pairs ? pr.fam->direct_bf16 : pr.fam->direct;
  pr.k2 = direct_on_k_pairs(p, *pr.fam);
  if (pr.k2) pr.direct = pr.fam->direct_k2;
  // Where a block of C spans all of N (threads_n 1: the threads split M, or one block makes the
  // product), each block packs its own A^T panels, the k-pairs panel too.
  pr.at_in_block = pr.s.threads_n == 1;
}

std::int64_t scratch_floats(const Problem& pr) {
  const Params& p = *pr.p;
  const std::int64_t at =
      pr.at_in_block ? 0 : direct_at_floats(p.m, p.k, pr.kw, pr.fam->direct_panel);
  return at + (pr.scaled ? direct_as_floats(pr) : 0);
}

// A^T packed in pieces of 512 K values of a panel, the pieces shared by the threads; or, where
// each block has panels of its own (threads_n 1), by the blocks (direct_block).
void prepare(Problem& pr, float* buf, int, std::vector<Pack>& packs) {
  const Params& p = *pr.p;
  const int P = pr.fam->direct_panel;
  const std::int64_t panels = ceil_div(p.m, P), kwords = p.k / pr.kw;
  for (std::int64_t q = 0; q < panels && !pr.at_in_block; ++q)
    for (std::int64_t k0 = 0; k0 < p.k; k0 += 512)
      packs.push_back({&pr, q * P, k0, std::min(p.k, k0 + 512), buf + q * P * kwords, 0, run_pack});
  pr.at = pr.at_in_block ? nullptr : buf;
  if (pr.scaled) pr.as = pr.at_in_block ? buf : buf + direct_at_floats(p.m, p.k, pr.kw, P);
}

// The grid over C: panels of A^T by W tiles, each cell in pieces (piece_cols) where the region
// has threads to hand them to - except where the blocks pack their own A^T panels
// (at_in_block): two pieces of one cell would pack the same panels.
void plan(const Problem& pr, std::vector<Block>& out) {
  const Params& p = *pr.p;
  const Schedule& s = pr.s;
  const std::int64_t mchunk = direct_block_rows(p.m, s.threads_m, *pr.fam);
  const std::int64_t nchunk = round_up(ceil_div(p.n, s.threads_n), pr.fam->direct_rows);
  for (std::int64_t m0 = 0; m0 < p.m; m0 += mchunk) {
    const std::int64_t m1 = std::min(p.m, m0 + mchunk);
    const std::int64_t width =
        s.threads > 1 && !pr.at_in_block
            ? piece_cols(nchunk, pr.fam->direct_rows, rough_ns(p.b_type, m1 - m0, nchunk, p.k))
            : nchunk;
    for (std::int64_t n0 = 0; n0 < p.n; n0 += nchunk)
      add_pieces(pr, m0, m1, n0, std::min(p.n, n0 + nchunk), width,
                 2.0 * static_cast<double>(m1 - m0) * k_per_block(pr), out);
  }
}

void run_block(const Block& b) {
  direct_block(*b.pr, b.m0, b.m1, b.n0, b.n1);
}

}  // namespace

const PathImpl kDirectPath{Path::direct, accepts, bind, scratch_floats, prepare, plan, run_block};

}  // namespace attain::gemm::detail
