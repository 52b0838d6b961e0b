// The packed path: BLIS's loop nest, both operands packed into panels the micro-kernel streams.
//
// Order mk, per block of C:
//   jc (NC cols)  pack B[K chunk, nc] -> kc-blocks of NR-wide panels    (L3 / memory)
//    ic (MC rows)
//     pc (KC)      pipeline: pack A[mc, kc] into stage slot (pc+S-1) % S  (L2)
//      jr (NR)      B micro-panel kc x NR                                 (L1)
//       ir (MR)      micro-kernel: MR x NR of C in registers
// B is packed for a chunk of K of a column block (all of K where the panel fits the row's
// b_panel_bytes), so C can be accumulated over the chunk's kc blocks of one MC x NC tile before
// it is written: fp32 C is updated in place; bf16/fp16 C goes through an fp32 tile and is rounded
// once after the last chunk (f32_to_bf16 / f32_to_f16), or where K is one block is rounded by the
// micro-kernel itself.
// Order km (BLIS's; fp32 C): jc (NC) > pc (KC): pack B[kc, nc] (L3) > ic (MC): pipeline over
// the MC blocks, pack A[mc, kc] (L2) > jr > ir, C updated once per kc block.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/gemm/paths/path.hpp"

namespace attain::gemm::detail {

namespace {

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

// Rows of stored bytes, `ld` apart: where a later pack_a_block reads A (stored_a), for a prefetch.
struct StoredRows {
  const char* p = nullptr;
  std::int64_t rows = 0, ld = 0, bytes = 0;
};
StoredRows stored_a(const Problem& pr, std::int64_t ic, std::int64_t mc, std::int64_t k_abs,
                    std::int64_t kc) {
  const auto es = static_cast<std::int64_t>(dtype_size(pr.p->a_type));
  const bool rows_m = pr.p->trans_a == Trans::N;  // A stored (M, K): a row per row of the block
  return {reinterpret_cast<const char*>(a_at(pr, ic, k_abs)), rows_m ? mc : kc, pr.lda * es,
          (rows_m ? kc : mc) * es};
}

// ---- the micro-kernel over packed blocks ----
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
  // Packed operands the next block reads, fetched into L2 a share per kernel call (or none).
  const float* fetch_next = nullptr;
  std::int64_t fetch_bytes = 0;
  // 16-bit C at the block's corner (row stride ldc), written by the kernel (ukernel_writes16):
  // alpha and beta are the call's, and cbase is unused.
  std::uint16_t* c16 = nullptr;
  // Whole tiles go to C with non-temporal stores where 64-byte aligned (UkAux::stream_c).
  bool stream_c = false;
  // The stored A of a block the pipeline packs later, fetched into L1 a share per kernel call:
  // packing reads A from memory at the speed of the loads that wait on it (the transposes' loads
  // held the packing's samples), and memory is idle while the kernel runs.
  StoredRows a_next = {};
};
void multiply_blocks(const Problem& pr, const BlockCall& bc) {
  const Params& p = *pr.p;
  const KernelFamily& f = *pr.fam;
  const int MR = f.mr, NR = f.nr;
  const UKernel uk = pr.pairs ? f.ukernel_bf16 : f.ukernel;
  const bool fp8_pairs = pr.pairs && p.a_type == DType::fp8;
  const std::int64_t kcw = bc.kc / pr.kw;
  alignas(64) float edge[32 * 32];  // MR x NR of any kernel family
  const float one = 1.0f, zero = 0.0f;
  const std::int64_t calls = ceil_div(bc.nc, NR) * ceil_div(bc.mc, MR);
  const std::int64_t fetch_share = round_up(ceil_div(bc.fetch_bytes, calls), 64);
  const char* fetch = reinterpret_cast<const char*>(bc.fetch_next);
  const char* fetch_end = fetch + bc.fetch_bytes;
  const StoredRows& an = bc.a_next;
  const std::int64_t an_lines = an.p != nullptr ? ceil_div(an.bytes + 63, 64) : 0;
  const std::int64_t an_share = ceil_div(an.rows * an_lines, calls);
  std::int64_t an_r = 0, an_l = 0;  // the next line to fetch: row, line in the row
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
      for (const char* e = std::min(fetch + fetch_share, fetch_end); fetch < e; fetch += 64)
        __builtin_prefetch(fetch, 0, 2);
      for (std::int64_t q = 0; q < an_share && an_r < an.rows; ++q) {
        __builtin_prefetch(an.p + an_r * an.ld + an_l * 64, 0, 3);
        if (++an_l == an_lines) an_l = 0, ++an_r;
      }
      UkAux aux;
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
      if (bc.c16 != nullptr) {  // whole tiles rounded into C by the kernel, edges here
        if (mr == MR && nr == NR) {
          aux.c16 = bc.c16 + ir * bc.ldc + jr;
          aux.c16_bf = p.c_type == DType::bf16;
          uk(kcw, bc.alpha, bc.ap + ir * kcw, bc.bp + jr * kcw, bc.beta, edge, bc.ldc, 1, &aux);
          continue;
        }
        uk(kcw, &one, bc.ap + ir * kcw, bc.bp + jr * kcw, &zero, edge, NR, 1, &aux);
        write_back(pr, bc.ic + ir, bc.jc + jr, mr, nr, edge, NR);
        continue;
      }
      if (mr == MR && nr == NR) {
        aux.stream_c = bc.stream_c && reinterpret_cast<std::uintptr_t>(c) % 64 == 0;
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

// One block of C as packed_block sets it up, for either loop order: its K slice, block sizes and
// where its sums go - a slice's fp32 partials (alpha and beta come with the reduction), fp32 C in
// place (alpha, and beta on the first K block), or 16-bit C: rounded by the kernel where K is one
// block (writes16; alpha and beta), else through an fp32 tile rounded into it.
struct PackedBlock {
  std::int64_t m0, m1, n0, n1;
  int slice;
  std::int64_t k0, K;  // the K slice [k0, k0 + K)
  std::int64_t KC, MC, NC;
  bool partial, via_tile, writes16;
  const float* alpha;
  const float* beta0;  // the first K block's
  std::int64_t ldc_mem;
  float* tmp;
  float* c_at(const Problem& pr, std::int64_t ic, std::int64_t jc) const {
    const Params& p = *pr.p;
    return partial ? pr.partial + (slice * p.m + ic) * p.n + jc
                   : static_cast<float*>(p.c) + ic * pr.ldc + jc;
  }
  std::uint16_t* c16_at(const Problem& pr, std::int64_t ic, std::int64_t jc) const {
    return static_cast<std::uint16_t*>(pr.p->c) + ic * pr.ldc + jc;
  }
};

constexpr float kOne = 1.0f, kZero = 0.0f;
// The most packed A a thread keeps across its column blocks (run_mk).
constexpr std::int64_t kKeepPackedABytes = std::int64_t{32} << 20;

PackedBlock set_up(const Problem& pr, std::int64_t m0, std::int64_t m1, std::int64_t n0,
                   std::int64_t n1, int slice) {
  const Params& p = *pr.p;
  const int MR = pr.fam->mr, NR = pr.fam->nr;
  PackedBlock b{};
  b.m0 = m0, b.m1 = m1, b.n0 = n0, b.n1 = n1, b.slice = slice;
  b.k0 = slice < 0 ? 0 : slice * pr.kslice;
  b.K = (slice < 0 ? p.k : std::min(p.k, b.k0 + pr.kslice)) - b.k0;
  // (MC past the block's rows packs no more of A: the buffers are sized by the rows.)
  b.KC = pr.s.kc;
  b.MC = std::min<std::int64_t>(pr.s.mc, round_up(m1 - m0, MR));
  // Columns in equal blocks of at most the schedule's NC (whole NR panels): 1056 columns as 544 +
  // 512, not 1024 + 32 - a block of 32 columns packs all of A for them.
  const std::int64_t cols = n1 - n0, blocks = ceil_div(cols, pr.s.nc);
  b.NC = std::min<std::int64_t>(pr.s.nc, round_up(ceil_div(cols, blocks), NR));
  b.partial = slice >= 0;
  const bool into_c = !b.partial && p.c_type == DType::f32;
  const bool c16 = !b.partial && !into_c;
  // 16-bit C with K in one block: the kernel rounds its sums into C where the family's can (fp8
  // pairs add one scale block at a time), with no fp32 tile to write, read back and round (bf16
  // 8192 x 8192 x 192: the 16-bit write_row alone was 13% of its samples).
  b.writes16 =
      c16 && b.K <= b.KC && pr.fam->ukernel_writes16 && !(pr.pairs && p.a_type == DType::fp8);
  b.via_tile = c16 && !b.writes16;
  b.alpha = into_c || b.writes16 ? &p.alpha : &kOne;
  b.beta0 = into_c || b.writes16 ? &p.beta : &kZero;
  b.ldc_mem = b.partial ? p.n : pr.ldc;
  b.tmp = workspace().tmp.get(std::max(MR, NR) * b.KC);
  return b;
}

// K blocks outside M blocks: B's KC x NC block packed once per K block, the MC blocks of A
// streamed past it (the next one packed ahead, stages > 1), C updated per K block.
void run_km(const Problem& pr, const PackedBlock& b) {
  const int MR = pr.fam->mr, NR = pr.fam->nr;
  const std::int64_t KC = b.KC, MC = b.MC, NC = b.NC, K = b.K, k0 = b.k0;
  const std::int64_t m0 = b.m0, m1 = b.m1, n0 = b.n0, n1 = b.n1;
  Workspace& ws = workspace();
  const std::int64_t mtiles = ceil_div(m1 - m0, MC);
  const int stages = tile::clamp_stages(pr.s.stages, mtiles);
  float* bpack = ws.b_pack.get(KC * round_up(std::min(NC, n1 - n0), NR));
  float* apack[tile::kMaxStages];
  for (int st = 0; st < stages; ++st) apack[st] = ws.a_pack[st].get(round_up(MC, MR) * KC);
  for (std::int64_t jc = n0; jc < n1; jc += NC) {
    const std::int64_t nc = std::min(NC, n1 - jc);
    for (std::int64_t p0 = 0; p0 < K; p0 += KC) {
      const std::int64_t kc = std::min(KC, K - p0);
      pack_b_block(pr, jc, nc, k0 + p0, kc, bpack, b.tmp);
      auto load = [&](std::int64_t t, int slot) {
        const std::int64_t ic = m0 + t * MC;
        pack_a_block(pr, ic, std::min(MC, m1 - ic), k0 + p0, kc, apack[slot], b.tmp);
      };
      auto compute = [&](std::int64_t t, int slot) {
        const std::int64_t ic = m0 + t * MC;
        // The block packed after the next (the schedule's --stages 1 fetches nothing ahead): this
        // K block's t + stages, or the next K block's.
        StoredRows next;
        const std::int64_t u = t + stages;
        const std::int64_t q0 = u < mtiles ? p0 : p0 + KC, i = m0 + (u % mtiles) * MC;
        if (pr.s.stages > 1 && u < 2 * mtiles && q0 < K)
          next = stored_a(pr, i, std::min(MC, m1 - i), k0 + q0, std::min(KC, K - q0));
        multiply_blocks(pr, {apack[slot], bpack, ic, std::min(MC, m1 - ic), jc, nc, k0 + p0, kc,
                             b.alpha, p0 == 0 ? b.beta0 : &kOne, b.c_at(pr, ic, jc), b.ldc_mem,
                             false, stages > 1, nullptr, 0, nullptr, false, next});
      };
      tile::run_pipeline(mtiles, stages, load, compute);
    }
  }
}

// M blocks outside K blocks: B packed for a chunk of K at a time (all of K where its panel fits
// the row's b_panel_bytes), so C can be accumulated over the chunk's kc blocks of one MC x NC
// tile before it is written: fp32 C is updated in place; bf16/fp16 C goes through fp32 tiles and
// is rounded once (f32_to_bf16 / f32_to_f16) after the last chunk.
void run_mk(const Problem& pr, const PackedBlock& b) {
  const int MR = pr.fam->mr, NR = pr.fam->nr;
  const std::int64_t KC = b.KC, MC = b.MC, NC = b.NC, K = b.K, k0 = b.k0;
  const std::int64_t m0 = b.m0, m1 = b.m1, n0 = b.n0, n1 = b.n1;
  const std::int64_t kw = pr.kw;  // K elements per packed value (2: bf16 pairs)
  const bool via_tile = b.via_tile;
  Workspace& ws = workspace();
  // K in equal chunks of whole KC blocks, each chunk's panel within the row's b_panel_bytes
  // counted as K x NC fp32 (bf16 pairs: half of it): a K-deep panel past it streams from memory
  // for every MC block, and narrowing NC to fit it instead packs A once per narrower column block
  // (bf16 K 53248: NC 96, A packed 171 times for N 16384). Counted so, bf16 K 16384 at NC 512
  // runs in two chunks of 8 MiB, 1.03-1.05x one of 16 MiB (docs/gemm.md, "K in chunks").
  const std::int64_t ncp_max = round_up(std::min(NC, n1 - n0), NR);
  const std::int64_t ktiles = ceil_div(K, KC);
  const std::int64_t tile_bytes = KC * ncp_max * 4;
  const std::int64_t per_chunk =
      std::clamp<std::int64_t>(pr.blk.b_panel_bytes / tile_bytes, 1, ktiles);
  const std::int64_t chunk_tiles = ceil_div(ktiles, ceil_div(ktiles, per_chunk));
  const int stages = tile::clamp_stages(pr.s.stages, chunk_tiles);
  float* bpack = ws.b_pack.get(std::min(K, chunk_tiles * KC) * ncp_max);
  float* apack[tile::kMaxStages];
  for (int st = 0; st < stages; ++st) apack[st] = ws.a_pack[st].get(round_up(MC, MR) * KC);
  // Where K takes more than one chunk, the rows go in groups whose 16-bit C sums (one fp32 tile
  // per MC block, kept until the last chunk) stay within the same budget, each group packing the
  // chunks of B again; one group of all the rows otherwise, 16-bit C through one tile.
  const std::int64_t mtiles = ceil_div(m1 - m0, MC);
  const bool chunked = chunk_tiles < ktiles;
  const std::int64_t group =
      chunked ? std::clamp<std::int64_t>(pr.blk.b_panel_bytes / (MC * ncp_max * 4), 1, mtiles) * MC
              : m1 - m0;
  float* ctiles = via_tile ? ws.c_tile.get((chunked ? group : MC) * ncp_max) : nullptr;
  auto ctile = [&](std::int64_t ic, std::int64_t g0) {
    return ctiles + (chunked ? (ic - g0) * ncp_max : 0);
  };
  // Several column blocks of these rows (in this block, or in the product's other pieces): A's
  // blocks are packed once, in the thread's first column block, and kept for the others.
  const std::int64_t slot_words = round_up(MC, MR) * ceil_div(KC, kw);
  const std::int64_t whole_words = mtiles * ktiles * slot_words;
  const bool keep_a = pr.p->n > NC && whole_words * 4 <= kKeepPackedABytes;
  const KeptA tag{pr.id, m0, m1, MC, KC, b.slice};
  bool packed = keep_a && ws.kept_a == tag;  // by an earlier piece on this thread
  float* awhole = keep_a ? ws.a_whole.get(whole_words) : nullptr;
  if (keep_a && !packed) ws.kept_a = KeptA{};  // overwritten below
  // A's block (rows from i, K block t) in awhole.
  auto kept = [&](std::int64_t i, std::int64_t t) {
    return awhole + ((i - m0) / MC * ktiles + t) * slot_words;
  };
  // fp32 C written once past the caches (Problem::stream_c): K in one block of at most
  // kStreamMaxK, beta 0, each tile row whole 64-byte lines. Where K is longer C's share of the
  // traffic is smaller: streamed, K 192 and 512 ran 0.97-0.99x. 16-bit C keeps the plain stores:
  // streamed, batched 8 x 16384 x 2048 x 128 and 8192 x 8192 x 192 bf16 ran 0.90-0.95x.
  constexpr std::int64_t kStreamMaxK = 128;  // K 64: 1.11-1.17x; K 128: 1.00-1.03x
  const bool stream_c = pr.stream_c && !b.partial && pr.p->c_type == DType::f32 &&
                        K <= std::min(KC, kStreamMaxK) && pr.p->beta == 0.0f && NR % 16 == 0 &&
                        pr.ldc % 16 == 0 && reinterpret_cast<std::uintptr_t>(pr.p->c) % 64 == 0;
  for (std::int64_t jc = n0; jc < n1; jc += NC) {
    const std::int64_t nc = std::min(NC, n1 - jc), ncp = round_up(nc, NR);
    for (std::int64_t g0 = m0; g0 < m1; g0 += group) {
      const std::int64_t g1 = std::min(m1, g0 + group);
      for (std::int64_t t0 = 0; t0 < ktiles; t0 += chunk_tiles) {
        const std::int64_t t1 = std::min(ktiles, t0 + chunk_tiles), q0 = t0 * KC;
        // B[chunk, nc] -> for each kc block: ncp/NR panels of kc x NR, block base (p0 - q0) * ncp.
        for (std::int64_t p0 = q0; p0 < std::min(K, t1 * KC); p0 += KC)
          pack_b_block(pr, jc, nc, k0 + p0, std::min(KC, K - p0), bpack + (p0 - q0) * ncp / kw,
                       b.tmp);
        for (std::int64_t ic = g0; ic < g1; ic += MC) {
          const std::int64_t mc = std::min(MC, m1 - ic);
          auto a_at = [&](std::int64_t t, int slot) { return keep_a ? kept(ic, t) : apack[slot]; };
          auto load = [&](std::int64_t u, int slot) {
            if (packed) return;
            const std::int64_t p0 = (t0 + u) * KC;
            pack_a_block(pr, ic, mc, k0 + p0, std::min(KC, K - p0), a_at(t0 + u, slot), b.tmp);
          };
          auto compute = [&](std::int64_t u, int slot) {
            const std::int64_t t = t0 + u, p0 = t * KC, kc = std::min(KC, K - p0);
            // A not kept yet: the block packed after the next, this chunk's u + stages or the
            // next row block's (with stages, as run_km).
            StoredRows a_next;
            if (!packed && pr.s.stages > 1) {
              const std::int64_t v = u + stages, n = t1 - t0;
              const std::int64_t i = v < n ? ic : ic + MC, qn = (t0 + v % n) * KC;
              if (v < 2 * n && i < g1)
                a_next = stored_a(pr, i, std::min(MC, m1 - i), k0 + qn, std::min(KC, K - qn));
            }
            // Kept A blocks come from L3 or memory: fetch the next one while this one computes
            // (the loops' order: K blocks of the chunk, MC blocks of the group, chunks, groups,
            // column blocks).
            const float* next = nullptr;
            if (packed)
              next = t + 1 < t1     ? kept(ic, t + 1)
                     : ic + MC < g1 ? kept(ic + MC, t0)
                     : t1 < ktiles  ? kept(g0, t1)
                     : g1 < m1      ? kept(g1, 0)
                     : jc + NC < n1 ? kept(m0, 0)
                                    : nullptr;
            // 16-bit C is written from the tile after the last K block; fetch its lines for
            // writing while the block computes, a micro-tile's rows at a time (a cold C
            // otherwise stalls the write-back on every store: 2048x512x128 bf16 x 8 spent a
            // fifth of its time there).
            multiply_blocks(pr, {a_at(t, slot), bpack + (p0 - q0) * ncp / kw, ic, mc, jc, nc,
                                 k0 + p0, kc, b.alpha, t == 0 ? b.beta0 : &kOne,
                                 via_tile     ? ctile(ic, g0)
                                 : b.writes16 ? nullptr
                                              : b.c_at(pr, ic, jc),
                                 via_tile ? ncp : b.ldc_mem, via_tile && p0 + KC >= K, stages > 1,
                                 next, next == nullptr ? 0 : slot_words * 4,
                                 b.writes16 ? b.c16_at(pr, ic, jc) : nullptr, stream_c, a_next});
          };
          tile::run_pipeline(t1 - t0, stages, load, compute);
          if (via_tile && t1 == ktiles) write_back(pr, ic, jc, mc, nc, ctile(ic, g0), ncp);
        }
      }
    }
    if (keep_a && !packed) packed = true, ws.kept_a = tag;
  }
#if defined(__x86_64__)
  // Non-temporal stores are weakly ordered: make them visible before the block reports done.
  if (stream_c) __builtin_ia32_sfence();
#endif
}

// C[m0:m1, n0:n1] over K slice `slice` (-1: all of K; else its fp32 partial sums go to
// pr.partial, reduced by finish_split()), in the schedule's loop order (Order::km only where C
// is updated in place: fp32 C or a slice's partials; 16-bit C always goes through the mk
// order's fp32 tile).
void run_block(const Block& blk) {
  const Problem& pr = *blk.pr;
  const PackedBlock b = set_up(pr, blk.m0, blk.m1, blk.n0, blk.n1, blk.slice);
  if (pr.s.order == Order::km && !b.via_tile && !b.writes16) return run_km(pr, b);
  run_mk(pr, b);
}

// Each cell of the thread grid in its column blocks of at most the schedule's NC, equal and of
// whole NR panels (1056 columns as 544 + 512), the blocks run_block would make: a piece packs
// what the cell's loop packs for it, so cutting there costs nothing. Pieces only where the
// region has threads to hand them to.
void plan(const Problem& pr, std::vector<Block>& out) {
  const Params& p = *pr.p;
  const Schedule& s = pr.s;
  const std::int64_t mchunk = round_up(ceil_div(p.m, s.threads_m), pr.fam->mr);
  const std::int64_t nchunk = round_up(ceil_div(p.n, s.threads_n), pr.fam->nr);
  for (int tm = 0; tm < s.threads_m; ++tm)
    for (int tn = 0; tn < s.threads_n; ++tn) {
      const std::int64_t m0 = std::min(p.m, tm * mchunk), m1 = std::min(p.m, m0 + mchunk);
      const std::int64_t n0 = std::min(p.n, tn * nchunk), n1 = std::min(p.n, n0 + nchunk);
      if (m0 >= m1 || n0 >= n1) continue;
      const std::int64_t width =
          s.threads > 1
              ? std::min<std::int64_t>(
                    s.nc, round_up(ceil_div(n1 - n0, ceil_div(n1 - n0, s.nc)), pr.fam->nr))
              : n1 - n0;
      add_pieces(pr, m0, m1, n0, n1, width, 2.0 * static_cast<double>(m1 - m0) * k_per_block(pr),
                 out);
    }
}

// Every product (the swapped operands are the direct and decode paths' only).
std::string accepts(const Params&, const KernelFamily&, bool swap) {
  return swap ? "swap runs the direct or the decode path (no split_k)" : "";
}

void bind(Problem&) {}  // the route (bf16 pairs or fp32 panels) is make_problem's
std::int64_t no_scratch(const Problem&) {
  return 0;
}
void no_prepare(Problem&, float*, int, std::vector<Pack>&) {}

}  // namespace

const PathImpl kPackedPath{Path::packed, accepts, bind, no_scratch, no_prepare, plan, run_block};

}  // namespace attain::gemm::detail
