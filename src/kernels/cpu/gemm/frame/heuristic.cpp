// The heuristic: from a problem's shape, dtypes and this CPU's table row to a resolved Schedule -
// path, operand swap, blocks, K tile and thread grid - with the reason for each choice when asked
// (explain()). It reads top to bottom as the decisions are made: the path (decode below the
// decode crossover, the direct path in its table range, the swapped operands for few columns),
// then the blocks of the path taken, then the grid.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/util.hpp"
#include "kernels/cpu/gemm/dispatch.hpp"
#include "kernels/cpu/gemm/frame/frame.hpp"
#include "kernels/cpu/gemm/paths/path.hpp"

namespace attain::gemm {

namespace detail {

namespace {

// The direct path's packed A^T at most: the path packs all of op(A)^T per call into the caller's
// grow-only scratch, so only while that stays within 32 MiB (the table's M ranges reach 1024 rows
// on Zen 4; a 28672-deep K would have kept 117 MiB per calling thread); beyond it the packed
// path's bounded blocks.
constexpr std::int64_t kDirectMaxAtBytes = std::int64_t{32} << 20;

// Reasons, collected only where a caller asks (explain()): resolve() runs on every call, so the
// formatting is out of line and marked cold, away from the decisions' own code (a call after a
// cache flush fetches every line of that path from memory).
class Why {
 public:
  explicit Why(std::vector<std::string>* out) : out_(out) {}
  bool on() const { return out_ != nullptr; }
  template <class... Args>
  void say(fmt::format_string<Args...> f, Args&&... args) {
    if (out_ != nullptr) [[unlikely]]
      add(out_, f, std::forward<Args>(args)...);
  }

 private:
  template <class... Args>
  [[gnu::cold, gnu::noinline]] static void add(std::vector<std::string>* out,
                                               fmt::format_string<Args...> f, Args&&... args) {
    out->push_back(fmt::format(f, std::forward<Args>(args)...));
  }
  std::vector<std::string>* out_;
};

// The table row's ranges for one problem.
struct Ranges {
  const KernelFamily& f;
  const Blocking& b;
  // The direct path's fewest rows of A for operands q's route (bf16 pairs, W converted, fp32).
  int direct_lo(const Params& q) const {
    const bool w = direct_pairs(q, f), c = direct_converts(q, f);
    return w ? b.direct_min_m_pairs : c ? b.direct_min_m_conv : b.direct_min_m;
  }
  // Whether operands q have an M in the direct path's range for their route, or up to `most`
  // instead of the route's maximum, with their A^T within kDirectMaxAtBytes.
  bool direct_m(const Params& q, int most = 0) const {
    const bool w = direct_pairs(q, f), c = direct_converts(q, f);
    const int lo = direct_lo(q);
    const int hi = direct_fp8_pairs(q, f) && b.direct_max_m_fp8 > 0 ? b.direct_max_m_fp8
                   : w                                              ? b.direct_max_m_pairs
                   : c                                              ? b.direct_max_m_conv
                                                                    : b.direct_max_m;
    const std::int64_t at_bytes = 4 * direct_at_floats(q.m, q.k, w ? 2 : 1, f.direct_panel);
    return hi > 0 && q.m >= lo && q.m <= (most > 0 ? most : hi) && at_bytes <= kDirectMaxAtBytes;
  }
  // The decode/packed crossover in M for these operands' route.
  int decode_max_m(const Params& p) const {
    const bool pairs = multiplies_bf16_pairs(p, f);
    // fp8 x fp8 decoded as bf16 pairs beats the packed path up to the decode kernel's limit.
    return p.b_type == DType::f32            ? b.decode_max_m_f32
           : decodes_fp8_pairs(p, f)         ? static_cast<int>(kDecodeMaxM)
           : pairs && p.b_type == DType::fp8 ? b.decode_max_m_fp8_pairs
           : pairs                           ? b.decode_max_m_pairs
                                             : b.decode_max_m_lowp;
  }
  // fp32 operands with few rows of A (one vector of pairs) on the direct path's k pairs
  // (direct_k2): k_pairs_m the operands and M, k_pairs also the row's K minimum.
  bool k_pairs(const Params& p) const { return k_pairs_m(p) && p.k >= b.direct_min_k_k2; }
  bool k_pairs_m(const Params& p) const {
    return b.direct_min_m_k2 > 0 && !direct_converts(p, f) && direct_on_k_pairs(p, f) &&
           p.m >= b.direct_min_m_k2 && 2 * p.m <= f.direct_lanes;
  }
};

// Decode when the weights dominate the traffic and there are too few rows of A to amortise
// packing them: M up to the table's crossover, W stored (N, K). Otherwise packed, for now.
Path decode_or_packed(const Params& p, const Schedule& s, int max_m, Why& why) {
  if (p.trans_b == Trans::T && p.m <= max_m && s.split_k <= 1) {
    why.say("path=decode: M {} <= {} (the decode crossover for this route), W stored (N, K)", p.m,
            max_m);
    return Path::decode;
  }
  if (p.trans_b != Trans::T)
    why.say("path=packed: W stored (K, N) (the decode and direct paths read W's rows)");
  else if (s.split_k > 1)
    why.say("path=packed: split_k {} given", s.split_k);
  else
    why.say("path=packed: M {} above the decode crossover {}", p.m, max_m);
  return Path::packed;
}

// W read in place (or converted a tile at a time) against a packed A^T: from the M where the
// decode kernel stops keeping up to where packing W (a transpose of every element) is paid back;
// ranges per route (fp32, bf16 pairs, converted W) from the table. fp8 x fp8 takes it as bf16
// pairs (direct_fp8_pairs) from the table's direct_min_m_fp8 rows (or above the decode path's),
// any K; on the fp32 route (W and A^T converted with their scales) it stays packed.
bool direct_takes(const Params& p, const Ranges& r, const Schedule& s, int max_m, Why& why) {
  const KernelFamily& f = r.f;
  const Blocking& b = r.b;
  const bool words = direct_pairs(p, f), conv = direct_converts(p, f);
  const bool fp8_pair = p.a_type == DType::fp8 && p.b_type == DType::fp8;
  // Few columns (from direct_min_n / 2, where the table splits M): the packed path packs both
  // operands for them, the direct path only A^T (threads split M where that divides evenly, N
  // otherwise); bf16 pairs and converted W from above their decode crossover, below which the
  // decode path stays faster, but for bf16 pairs from the table's few_cols_pairs_min_k (a long
  // K: the decode kernel's group of four W rows no longer stays in L1 while each block of four
  // rows of A passes over it).
  const bool long_pairs = words && b.few_cols_pairs_min_k > 0 && p.k >= b.few_cols_pairs_min_k;
  const bool few_cols = b.direct_split_max_n > 0 && p.n < b.direct_min_n &&
                        2 * p.n >= b.direct_min_n && r.direct_m(p) &&
                        ((!conv && !words) || p.m > max_m || long_pairs);
  // K: on the fp32 route from direct_min_k; on bf16 pairs at or below their decode crossover
  // outside the table's decode window (config/ says why), any K above it.
  const bool k_ok = words ? p.m > max_m || p.k < b.decode_pairs_min_k || p.k >= b.decode_pairs_max_k
                          : p.k >= b.direct_min_k;
  const bool fp8_direct =
      fp8_pair && words && p.m >= (b.direct_min_m_fp8 > 0 ? b.direct_min_m_fp8 : max_m + 1);
  if (s.split_k > 1 || !direct_ok(p, f) || (fp8_pair && !fp8_direct) ||
      (p.n < b.direct_min_n && !few_cols))
    return false;
  const char* route = fp8_direct ? "fp8 pairs"
                      : words    ? "bf16 pairs"
                      : conv     ? "converted W"
                                 : "fp32";
  if (r.direct_m(p) && (k_ok || fp8_direct)) {
    why.say("path=direct: M {} in the {} route's direct range from {} (N {}{}, K {})", p.m, route,
            r.direct_lo(p), p.n, few_cols ? ": few columns, from direct_min_n / 2" : "", p.k);
    return true;
  }
  if (r.k_pairs(p)) {
    why.say("path=direct: M {} from {} on the k-pairs kernel, K {} >= {}", p.m, b.direct_min_m_k2,
            p.k, b.direct_min_k_k2);
    return true;
  }
  return false;
}

// Few columns against many rows (attention's N = head_dim): the packed path would pack all of A
// for N columns, and the direct path A^T (M x K); the direct path on the swapped operands reads
// A's rows in place, packs W^T (N x K) once and writes C's rows as vectors (any K: no transposed
// write to amortize). From swap_min_m rows (192 on Zen 4: at M = 160 it is mixed, at M <= 128 the
// direct path wins), and up to swap_max_n_tall columns (512 on Zen 4) where there are at least
// twice as many rows as columns. Large products, from swap_large_min_m (above the direct path's
// rows) and N up to swap_large_max_n (4096 on Zen 4) while W^T stays within kDirectMaxAtBytes:
// A's rows broadcast where they are stored against W^T packed 64 wide, K blocks of the direct
// path's budget (oneDNN's brgemm structure) instead of packing both operands: on Zen 4 for any K
// but bf16 pairs' shortest (K < swap_large_min_k_pairs 128 stays packed), on Zen 5 only for a
// short K (swap_large_max_k), where the packed kernel's C update outweighs its few k steps, and
// not where the swapped kernel converts W (fp16: 0.72-0.93x there).
bool swap_takes(const Params& p, const Ranges& r, const Schedule& s, Why& why) {
  const Blocking& b = r.b;
  const bool words = direct_pairs(p, r.f);
  const bool large = b.swap_large_min_m > 0 && p.m >= b.swap_large_min_m &&
                     (!words || p.k >= b.swap_large_min_k_pairs) &&
                     (b.swap_large_max_k == 0 || p.k <= b.swap_large_max_k) &&
                     (b.swap_large_converts || !direct_converts(swapped(p), r.f));
  const bool tall = !large && b.swap_max_n_tall > 0 && p.m >= 2 * p.n;
  const int swap_n = large ? b.swap_large_max_n : tall ? b.swap_max_n_tall : b.swap_max_n;
  // A short K from swap_short_min_m rows (128 on Zen 4) where N <= M: the plain direct path
  // writes each tile transposed (six values to each of 64 rows), the swapped one C's rows as
  // vectors. Where N > M the plain direct path stays.
  const bool short_k = b.swap_short_min_m > 0 && p.m >= b.swap_short_min_m &&
                       p.k <= b.swap_short_max_k && p.n <= p.m;
  // Below swap_min_m rows, where the packed path would run for fewer columns than the plain
  // direct path takes (N < direct_min_n / 2).
  const bool narrow = s.path == Path::packed && 2 * p.n < b.direct_min_n;
  if (!((s.path == Path::packed || s.path == Path::direct) && s.split_k <= 1 && b.swap_min_m > 0 &&
        (p.m >= b.swap_min_m || short_k || narrow) && swap_ok(p, r.f) &&
        r.direct_m(swapped(p), swap_n)))
    return false;
  if (!why.on()) return true;
  why.say(
      "swap: {}, N {} in the swapped operands' direct range up to {}: the direct path on the "
      "swapped operands",
      p.m >= b.swap_min_m ? fmt::format("M {} >= swap_min_m {}", p.m, b.swap_min_m)
      : short_k
          ? fmt::format("short K {} <= {} from M {}", p.k, b.swap_short_max_k, b.swap_short_min_m)
          : fmt::format("N {} below direct_min_n / 2", p.n),
      p.n,
      large  ? fmt::format("{} (large products from M {}{})", swap_n, b.swap_large_min_m,
                          b.swap_large_max_k > 0 ? fmt::format(", K <= {}", b.swap_large_max_k)
                                                  : std::string())
       : tall ? fmt::format("{} (M >= 2 N)", swap_n)
             : fmt::format("{}", swap_n));
  return true;
}

// Fewer columns than the swapped direct path's minimum (an MoE router's 8 experts, a GEMV-like
// product) where the packed path would run (padding N to its 32-wide panels and packing all of
// A): the swapped operands, A's rows streamed once against the few rows of W in cache - on the
// decode path, or for fp32 from direct_min_m_k2 columns on the direct path's k pairs (one panel
// of W^T). This runs 2-6x faster than the packed path.
bool few_columns_swap(const Params& p, const Ranges& r, Schedule& s, Why& why) {
  if (s.path != Path::packed || s.swap || s.split_k > 1 || r.b.swap_min_m <= 0 || p.n < 1 ||
      !swap_ok(p, r.f))
    return false;
  const Params q = swapped(p);
  if (p.n >= r.direct_lo(q) || !decode_ok(p, true)) return false;
  const bool pairs_k = r.k_pairs_m(q);
  s.path = pairs_k ? Path::direct : Path::decode;
  why.say(
      "swap: few columns, N {} below the swapped operands' direct minimum {}: the {} path on "
      "the swapped operands",
      p.n, r.direct_lo(q), pairs_k ? "direct (k pairs)" : "decode");
  return true;
}

// The path and the operand swap, where the caller left them to the engine.
void choose_path(const Params& p, const Ranges& r, Schedule& s, Why& why) {
  const int max_m = r.decode_max_m(p);  // the decode/packed crossover for p's route
  s.path = decode_or_packed(p, s, max_m, why);
  if (direct_takes(p, r, s, max_m, why)) s.path = Path::direct;
  if (s.split_k > 1 && decode_ok(p, false)) {
    s.path = Path::decode;
    why.say("path=decode: split_k {} given, W stored (N, K), M <= {}", s.split_k, kDecodeMaxM);
  }
  if (swap_takes(p, r, s, why))
    s.swap = true;
  else if (few_columns_swap(p, r, s, why))
    s.swap = true;
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
  const double pack_flops = multiplies_bf16_pairs(p, f) ? 32.0 : 16.0;
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

// KC of the direct path: the largest that keeps a block's A^T (its rows of M x KC) within the
// table's direct_block_bytes, at most direct_max_kc, K cut into equal blocks. A block's rows are
// M over the grid's threads_m: where the threads split M each reads only its own panels, so the
// block fits twice the K of all of M (fp32 512 x 256 x 7168 swapped, 2 threads: KC 1024 against
// 512 ran 1.08-1.10x, Zen 5 guest).
int direct_kc(const Params& p, const KernelFamily& f, const Blocking& b, const Schedule& s) {
  const bool words = direct_pairs(p, f), conv = direct_converts(p, f);
  // KC in whole 16-value steps; fp8 pairs: whole scale blocks.
  const std::int64_t unit = direct_fp8_pairs(p, f) ? kFp8Block : 16;
  std::int64_t kc = s.kc;
  if (kc == 0) {
    const std::int64_t rows =
        s.threads_m > 1 ? direct_block_rows(std::max<std::int64_t>(p.m, 1), s.threads_m, f)
                        : round_up(std::max<std::int64_t>(p.m, 1), f.direct_lanes);
    const std::int64_t bytes = words ? 2 : 4;  // per A value
    // A converted W tile (R x KC fp32) stays within half of L1: KC <= 1024. Rows of A that make
    // one panel meet each W tile once, so nothing caps KC but the A^T block's budget: W's rows
    // then stream whole, not in pieces of direct_max_kc read far apart.
    const std::int64_t cap = conv                     ? 1024
                             : rows <= f.direct_panel ? std::int64_t{1} << 40
                                                      : b.direct_max_kc;
    // The k-pairs kernel (M up to a vector's lanes) reads W twice as fast for its FMAs as a
    // panel of more rows, and its A^T block shares the L2 with that stream: half the budget
    // (batched 8 and 64 x (16 x 128 x 8192) fp32, 2 threads, KC 4096 against all of K: 1.14x,
    // Zen 5 guest).
    const std::int64_t budget = b.direct_block_bytes / (direct_on_k_pairs(p, f) ? 2 : 1);
    const std::int64_t most = std::clamp<std::int64_t>(budget / (bytes * rows) / 64 * 64, 256, cap);
    const std::int64_t kblocks = ceil_div(std::max<std::int64_t>(p.k, 1), most);
    kc = round_up(ceil_div(std::max<std::int64_t>(p.k, 1), kblocks), unit);
  }
  // A KC past K is one block of all of K, the schedule of KC = K rounded as above: resolved to
  // it, so that the tuner (which tells candidates apart by their resolved description) does not
  // measure one schedule as several and keep whichever draw ran fastest.
  return static_cast<int>(
      std::min<std::int64_t>(kc, round_up(std::max<std::int64_t>(p.k, 1), unit)));
}

// MC, KC, NC and the packed path's loop order.
void resolve_blocks(const Params& p, const KernelFamily& f, const Blocking& b, Schedule& s) {
  // fp32 operands on the packed path: the row's fp32 blocks where it has them (dispatch.hpp).
  const bool f32_ops = s.path == Path::packed && p.a_type == DType::f32 && p.b_type == DType::f32;
  if (s.mc == 0) s.mc = f32_ops && b.mc_f32 > 0 ? b.mc_f32 : b.mc;
  s.mc = static_cast<int>(round_up(s.mc, f.mr));
  if (s.kc == 0 && s.path != Path::direct) s.kc = f32_ops && b.kc_f32 > 0 ? b.kc_f32 : b.kc;
  // mk's column block where B's panel of all of K stays within the budget (the order's choice
  // below); the row's nc where it has one, B then packed a chunk of K at a time (run_mk).
  const std::int64_t budget_nc = [&] {
    std::int64_t cols = b.b_panel_bytes / (4 * std::max<std::int64_t>(p.k, 1));
    if (b.nc > 0) cols = std::min<std::int64_t>(cols, b.nc);
    return std::clamp<std::int64_t>(cols - cols % f.nr, f.nr, 1 << 16);
  }();
  const std::int64_t mk_nc = b.nc > 0 ? b.nc : budget_nc;
  // The packed path's loop order: km (K blocks outside M blocks) where C is updated in place, K
  // spans more than one KC block and N at least budget_nc (narrower, A's stream outweighs B's and
  // mk stays ahead); mk where the sums go through the fp32 tile (16-bit C) or one K block leaves
  // the orders equal but for NC.
  if (s.order == Order::automatic)
    s.order = s.path == Path::packed && p.k > s.kc && p.n >= (s.nc > 0 ? s.nc : budget_nc)
                  ? Order::km
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
}

// The decode kernel's K tile. One the decode kernel plays no part in resolves to the default:
// schedules that differ only there are the same schedule, and the tuner must not measure them as
// candidates of their own.
void resolve_k_tile(const Params& p, const KernelFamily& f, Schedule& s) {
  if (s.decode_k_tile != 0 && decode_uses_k_tile(p, f)) return;
  // 4 KiB of each W row per tile (1024 fp32, 2048 bf16 / fp16, 4096 fp8): fewer tile switches
  // and, where one tile covers K, sums reduced straight from registers. Rows of up to 8 KiB are
  // one tile rather than two halves. W tiles the decode kernel converts once into fp32 scratch
  // (fp8 / fp16 with more rows of A than a register block, >= 3 on some ISAs) stay at 1024: 16
  // KiB of L1. The fp8 pairs decode's K chunk (more than one block of rows of A) is 4096 values,
  // 16 KiB of a group's four rows (1024 is slower, longer chunks no faster).
  const bool converted = (p.b_type == DType::fp8 || p.b_type == DType::f16) && p.m > 2;
  const std::int64_t row_bytes = p.k * static_cast<std::int64_t>(dtype_size(p.b_type));
  s.decode_k_tile = decodes_fp8_pairs(p, f) ? 4096
                    : converted             ? 1024
                    : row_bytes <= 8192
                        ? static_cast<int>(round_up(std::max<std::int64_t>(p.k, 1), kFp8Block))
                        : static_cast<int>(4096 / dtype_size(p.b_type));
}

// The decode path's threads split K, not N, where each would have fewer than this many W rows:
// a split of N has every thread read all of A for its few rows, a split of K half of A each (an
// MoE router, 8 x 8 x 4096, cold on the Zen 5 guest: 1.17-1.23x in fp32 and bf16; M 16-32 and N
// 16-24 level to 1.2x). Not for one row of A, which has nothing to share (fp32 0.93-0.96x).
constexpr std::int64_t kDecodeSplitKRows = 16;

// The thread grid: the direct path splits M in whole panels where N is narrow (direct_split_m),
// the decode path K where W has few rows for the threads and K is long, the decode and direct
// paths otherwise split N, the packed path takes choose_grid's model.
void resolve_grid(const Params& p, const KernelFamily& f, const Blocking& b, int blocks,
                  bool auto_split, Schedule& s) {
  if (s.threads_m * s.threads_n != 0) return;
  if (s.path == Path::direct && direct_split_m(p, f, b, blocks)) {
    s.threads_m = blocks;
    s.threads_n = 1;
  } else if (s.path == Path::decode && auto_split && blocks > 1 && p.m > 1 &&
             p.n < kDecodeSplitKRows * blocks && p.k >= 1024) {
    s.threads_m = 1;
    s.threads_n = 1;
    s.split_k = blocks;
  } else if (s.path == Path::decode || s.path == Path::direct) {
    s.threads_m = 1;
    s.threads_n = std::max(1, blocks);
  } else {
    choose_grid(p, f, s.nc, std::max(1, blocks), auto_split, s);
  }
}

Schedule resolve_explained(const Params& p, int blocks, Why& why);

// The direct (or decode) path's schedule for the swapped operands. Threads split the caller's
// rows (A, read in place, is the large operand: splitting the W^T panels instead makes every
// thread read all of it), except where the direct path's own rule splits the swapped product's
// rows, W's (direct_split_m: the caller's M within direct_split_max_n, W^T's panels whole and even
// among the threads). There each thread packs only its own panels of W^T, where the split of A's
// rows packs all of W^T before any block runs: bf16 512 x 256 x 7168 ran 1.12-1.16x faster split
// so, fp32 1.06-1.09x (best medians, Zen 5 guest, 2 threads, cold); from M 1024, where that
// packing is a smaller share, splitting A's rows runs level or ahead.
Schedule resolve_swapped(const Params& p, const Schedule& s, int blocks, Why& why) {
  Params q = swapped(p);
  q.schedule = s;
  q.schedule.swap = false;
  q.schedule.path = s.path == Path::decode ? Path::decode : Path::direct;
  if (q.schedule.threads_m * q.schedule.threads_n == 0 &&
      !(q.schedule.path == Path::direct &&
        direct_split_m(q, family(s.isa), blocking(s.isa), blocks))) {
    q.schedule.threads_m = 1;
    q.schedule.threads_n = std::max(1, blocks);
  }
  Schedule r = resolve_explained(q, blocks, why);
  r.swap = true;
  return r;
}

Schedule resolve_explained(const Params& p, int blocks, Why& why) {
  Schedule s = p.schedule;
  if (s.isa == Isa::automatic) s.isa = detected_isa();
  const KernelFamily& f = family(s.isa);
  const Blocking& b = blocking(s.isa);
  if (s.path == Path::automatic && !s.swap) choose_path(p, Ranges{f, b}, s, why);
  if (s.swap) return resolve_swapped(p, s, blocks, why);
  if (s.threads == 0) s.threads = p.threads;
  if (s.stages == 0) s.stages = p.stages;
  const bool auto_split = s.split_k == 0;
  if (s.split_k == 0) s.split_k = 1;
  resolve_blocks(p, f, b, s);
  resolve_k_tile(p, f, s);
  resolve_grid(p, f, b, blocks, auto_split, s);
  if (s.path == Path::direct) s.kc = direct_kc(p, f, b, s);  // from the grid's rows a block
  return s;
}

}  // namespace

Schedule resolve_with(const Params& p, int blocks) {
  Why none(nullptr);
  return resolve_explained(p, blocks, none);
}

}  // namespace detail

Schedule resolve(const Params& p) {
  return detail::resolve_with(p, p.schedule.threads != 0 ? p.schedule.threads : p.threads);
}

std::vector<std::string> explain(const Params& p) {
  std::vector<std::string> why;
  detail::Why w(&why);
  const Schedule s =
      detail::resolve_explained(p, p.schedule.threads != 0 ? p.schedule.threads : p.threads, w);
  why.push_back(describe(s));
  return why;
}

}  // namespace attain::gemm
