// The scheduler's heuristic, candidate list and analytical cost model (include/attain/tune.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>

#include "attain/gemm_plan.hpp"
#include "attain/tune.hpp"
#include "core/util.hpp"

namespace attain::tune {

namespace {

using gemm::Call;
using gemm::Form;
using gemm::Path;
using gemm::Schedule;

double d(std::int64_t v) {
  return static_cast<double>(v);
}

bool decode_ok(const Call& c) {
  Schedule s;
  s.path = Path::decode;
  return gemm::schedule_fits(c.p, s);
}

// Seconds per element the decode kernel spends converting W to fp32 in registers, per thread
// (fp8 goes through a table; bf16 / fp16 are a shift or F16C and hide under the load).
double convert_s(DType t) {
  switch (t) {
    case DType::fp8:
      return 0.07e-9;
    case DType::bf16:
    case DType::f16:
      return 0.01e-9;
    default:
      return 0.0;
  }
}

// Fraction of the FMA peak the kernels reach: the decode kernel (few rows of A per W row, a
// reduction per output) and the packed micro-kernel in steady state.
constexpr double kDecodeEff = 0.45;
// Fraction of the probed read bandwidth the decode kernel streams W at (0.55-0.65 on the Zen 5
// guest): estimates in real seconds make --explain readable and the search's early stop less
// dependent on its correction factor.
constexpr double kDecodeBwEff = 0.62;
constexpr double kPackedEff = 0.85;
// The direct kernel: its FMA efficiency on the padded panel width, and its floor per W element
// (a broadcast per W value and k step, whatever the panel width: fp32 7168 x 2048 ran in
// 1.7-1.9 ms on 2 threads for every M <= 12, docs/gemm.md).
constexpr double kDirectEff = 0.85;
constexpr double kDirectWS = 0.22e-9;
// ...and, unswapped, its write of C transposed per element (a 16 x 16 transpose, then six
// values into each of 64 rows): batched 128 x 128 x 128 x 128 bf16 ran 0.3 ms slower on one
// thread than swapped, whose tile leaves as whole rows of C (1.81 against 1.51 ms, Zen 5 guest).
constexpr double kDirectTransposedCS = 0.15e-9;
constexpr double kPackS = 0.35e-9;  // packing one element (load, convert, interleave, store)
constexpr double kBlockS = 0.4e-6;  // setting up one block (workspace, loop nest)
// per-element work outside the blocks (A conversion, split-K sum)
constexpr double kSerialS = 0.5e-9;

// One block's work, before the bandwidth it gets is known: its time is
// max(bytes / (bandwidth x bw_eff) x mem_factor, compute_s) + fixed_s.
struct BlockWork {
  double bytes = 0, bw_eff = 1, mem_factor = 1, compute_s = 0, fixed_s = 0;
  double seconds(double bw) const {
    return std::max(bytes / (bw * bw_eff) * mem_factor, compute_s) + fixed_s;
  }
};

// The busiest thread's time when `t` threads take the blocks: as many blocks as threads:
// one each; otherwise largest first to the least loaded thread.
double makespan(std::vector<double>& blocks, int t) {
  if (blocks.empty()) return 0;
  if (t <= 1) {
    double s = 0;
    for (double b : blocks) s += b;
    return s;
  }
  std::sort(blocks.begin(), blocks.end(), std::greater<>());
  std::priority_queue<double, std::vector<double>, std::greater<>> load;
  for (int i = 0; i < t; ++i) load.push(0.0);
  double worst = 0;
  for (double b : blocks) {
    const double l = load.top() + b;
    load.pop();
    load.push(l);
    worst = std::max(worst, l);
  }
  return worst;
}

// The decode path's blocks: W streamed once per block, converted in registers (fp32 route) or
// multiplied as bf16 pairs at the bf16 dot peak (bf16 W as stored, fp8 W through two byte
// lookups, about a third of the fp32 route's conversion cost).
void decode_work(const gemm::Plan& pl, const Machine& mc, std::vector<BlockWork>& out,
                 double& serial) {
  const gemm::Params& p = pl.p;
  const bool fp8_pairs = pl.route.fp8_pairs, bf16_pairs = pl.route.bf16_pairs && !fp8_pairs;
  const double dec_peak = pl.route.bf16_pairs && mc.bf16_gflops_1t > 0 ? mc.bf16_gflops_1t * 1e9
                                                                       : mc.fma_gflops_1t * 1e9;
  const double conv = bf16_pairs ? 0.0 : fp8_pairs ? convert_s(p.b_type) / 3 : convert_s(p.b_type);
  const double bsz = d(static_cast<std::int64_t>(dtype_size(p.b_type)));
  for (const gemm::PlanBlock& b : pl.blocks) {
    const double nb = d(b.n1 - b.n0), k = d(b.k);
    BlockWork w;
    w.bytes = nb * k * bsz + d(p.m) * k * 4.0;
    w.bw_eff = kDecodeBwEff;
    // Prefetch: one stage leaves the next tile's latency exposed.
    w.mem_factor = pl.s.stages <= 1 ? 1.15 : 1.0;
    w.compute_s = 2.0 * d(p.m) * nb * k / (dec_peak * kDecodeEff) + nb * k * conv;
    w.fixed_s = kBlockS;
    out.push_back(w);
  }
  // A converted (by the region's threads, before the blocks).
  if (p.a_type != DType::f32 && !bf16_pairs)
    serial += d(p.m * p.k) * kSerialS / std::max(1, pl.s.threads);
}

// The direct path's blocks: W read once, in place; A^T packed by all threads first (a region of
// its own). bf16 A and W as bf16 pairs: the bf16 dot peak, one broadcast per two k. W of another
// dtype is converted a tile at a time before the tile computes (fp8 pairs: to bf16 by byte
// lookups, as the fp8 pairs decode converts). At most direct_lanes rows of A on the k-pairs
// kernel: two k in each pair of lanes, so a vector holds direct_lanes / 2 rows for two k steps;
// the broadcasts as many (two values each, at about the cost of two).
void direct_work(const gemm::Plan& pl, const Machine& mc, std::vector<BlockWork>& out,
                 double& serial) {
  const gemm::Params& p = pl.p;
  const bool words = pl.route.bf16_pairs;
  const double dpeak =
      words && mc.bf16_gflops_1t > 0 ? mc.bf16_gflops_1t * 1e9 : mc.fma_gflops_1t * 1e9;
  const double kw = words ? 2.0 : 1.0;
  const double conv = pl.route.converts_w  ? convert_s(p.b_type) * 4
                      : pl.route.fp8_pairs ? convert_s(p.b_type) / 3
                                           : 0.0;
  const double bsz = d(static_cast<std::int64_t>(dtype_size(p.b_type)));
  const double asz = d(static_cast<std::int64_t>(dtype_size(p.a_type)));
  for (const gemm::PlanBlock& b : pl.blocks) {
    std::int64_t width = 0;  // rows of the block's A^T panels, padded to whole vectors
    for (std::int64_t i0 = b.m0; i0 < b.m1; i0 += pl.direct_panel)
      width += pl.route.k_pairs
                   ? round_up(2 * (b.m1 - i0), pl.direct_lanes) / 2
                   : round_up(std::min<std::int64_t>(pl.direct_panel, b.m1 - i0), pl.direct_lanes);
    const double nb = d(b.n1 - b.n0);
    BlockWork w;
    w.bytes = nb * d(p.k) * bsz + d((b.m1 - b.m0) * p.k) * asz;
    w.compute_s = std::max(2.0 * d(width) * nb * d(p.k) / (dpeak * kDirectEff),
                           nb * d(p.k) / kw * kDirectWS) *
                      (pl.s.stages <= 1 ? 1.05 : 1.0) +
                  nb * d(p.k) * conv +
                  (pl.s.swap ? 0.0 : nb * d(b.m1 - b.m0) * kDirectTransposedCS);
    w.fixed_s = kBlockS * 2;
    out.push_back(w);
  }
  serial += d(p.m * p.k) * kPackS / std::max(1, pl.s.threads) + mc.region_s;
}

// The packed path's blocks: the micro-kernel at its peak (the bf16 dot peak on bf16 pairs), A
// packed once per NC column block and B once; a small KC re-reads C more often.
void packed_work(const gemm::Plan& pl, const Machine& mc, std::vector<BlockWork>& out) {
  const gemm::Params& p = pl.p;
  const Schedule& s = pl.s;
  const double packed_peak = pl.route.bf16_pairs && mc.bf16_gflops_1t > 0 ? mc.bf16_gflops_1t * 1e9
                                                                          : mc.fma_gflops_1t * 1e9;
  const double bsz = d(static_cast<std::int64_t>(dtype_size(p.b_type)));
  const double asz = d(static_cast<std::int64_t>(dtype_size(p.a_type)));
  const double csz = d(static_cast<std::int64_t>(dtype_size(p.c_type)));
  for (const gemm::PlanBlock& b : pl.blocks) {
    const std::int64_t mb = b.m1 - b.m0, nb = b.n1 - b.n0, kb = b.k;
    const double comp =
        2.0 * d(round_up(mb, pl.mr) * round_up(nb, pl.nr) * kb) / (packed_peak * kPackedEff);
    const double a_packs = d(ceil_div(nb, s.nc));
    const double pack = (d(mb * kb) * a_packs + d(nb * kb)) * kPackS;
    const double c_passes = d(ceil_div(kb, s.kc));
    // An MC block that overflows L2 with its A panel streams it from L3 each jr step.
    const double l2 = d(s.mc) * d(s.kc) * 4.0 > 1.5e6 ? 1.1 : 1.0;
    const double kc_eff = s.kc < 128 ? 1.15 : 1.0;
    BlockWork w;
    w.bytes =
        d(mb * kb) * asz * a_packs + d(nb * kb) * bsz + d(mb * nb) * csz * std::min(c_passes, 4.0);
    w.compute_s = comp * l2 * kc_eff + pack;
    w.fixed_s = kBlockS * 4;
    out.push_back(w);
  }
}

// The blocks of one item under a schedule - the engine's own plan of them (gemm::plan), priced
// block by block - appended; the work before or after the blocks (A converted or A^T packed by
// the threads first, split-K sums on the caller) added to `serial`.
void item_blocks(const gemm::Params& p, const Schedule& s, const Machine& mc,
                 std::vector<BlockWork>& out, double& serial) {
  const gemm::Plan pl = gemm::plan(p, s);
  if (pl.slices > 1) serial += d(pl.slices * pl.p.m * pl.p.n) * kSerialS;
  switch (pl.s.path) {
    case Path::decode:
      return decode_work(pl, mc, out, serial);
    case Path::direct:
      return direct_work(pl, mc, out, serial);
    default:
      return packed_work(pl, mc, out);
  }
}

// The blocks' times when `active` threads stream at once.
std::vector<double> block_seconds(const std::vector<BlockWork>& work, const Machine& mc,
                                  int active) {
  const double bw = mc.bw_per_thread(active) * 1e9;
  std::vector<double> out;
  out.reserve(work.size());
  for (const BlockWork& w : work) out.push_back(w.seconds(bw));
  return out;
}

}  // namespace

std::string describe(const Call& c, const Schedule& s) {
  Call cc = c;
  cc.p.schedule = s;
  gemm::Params q = cc.p;
  const std::vector<std::int64_t> rows = item_rows(c);
  if (!rows.empty()) q.m = rows.front();  // a grouped call's p.m counts every item's rows
  std::string d = gemm::describe(gemm::resolve(q));
  if (c.form != Form::single) d += gemm::fuses_items(cc) ? " fused-items" : " item-regions";
  return d;
}

std::vector<std::int64_t> item_rows(const Call& c) {
  std::vector<std::int64_t> rows;
  switch (c.form) {
    case Form::single:
      rows.push_back(c.p.m);
      break;
    case Form::batched:
      rows.assign(static_cast<std::size_t>(std::max<std::int64_t>(0, c.items)), c.p.m);
      break;
    case Form::grouped_contiguous:
      for (std::int64_t g = 0; g < c.items; ++g) rows.push_back(c.index[g + 1] - c.index[g]);
      break;
    case Form::grouped_masked:
      for (std::int64_t g = 0; g < c.items; ++g) rows.push_back(c.index[g]);
      break;
  }
  std::erase_if(rows, [](std::int64_t r) { return r <= 0; });
  return rows;
}

Machine Machine::from(const HostCeilings& host, int threads) {
  Machine m;
  m.threads = std::max(1, threads);
  if (host.fma_gflops_1t > 0) m.fma_gflops_1t = host.fma_gflops_1t;
  if (host.bf16_gflops_1t > 0) m.bf16_gflops_1t = host.bf16_gflops_1t;
  if (host.read_gbps_1t > 0) m.read_gbps_1t = host.read_gbps_1t;
  if (host.read_gbps_all > 0) {
    const int all = std::max(1, host.cores);
    const double t =
        std::clamp(static_cast<double>(m.threads - 1) / std::max(1, all - 1), 0.0, 1.0);
    m.read_gbps_all = all == 1 ? host.read_gbps_1t
                               : host.read_gbps_1t + t * (host.read_gbps_all - host.read_gbps_1t);
  } else {
    m.read_gbps_all = m.read_gbps_1t * m.threads;
  }
  if (m.threads == 1) m.read_gbps_all = m.read_gbps_1t;
  // A probe taken on a busy machine can show less bandwidth for all threads than for one;
  // more threads never stream less.
  m.read_gbps_all = std::max(m.read_gbps_all, m.read_gbps_1t);
  return m;
}

double Machine::bw_per_thread(int active) const {
  if (active <= 1) return read_gbps_1t;
  const double t = static_cast<double>(active - 1) / std::max(1, threads - 1);
  const double total = read_gbps_1t + std::clamp(t, 0.0, 1.0) * (read_gbps_all - read_gbps_1t);
  return total / active;
}

Key key_of(const Call& c) {
  Key k;
  k.op = std::string(gemm::form_name(c.form));
  k.a_type = std::string(dtype_name(c.p.a_type));
  k.b_type = std::string(dtype_name(c.p.b_type));
  k.c_type = std::string(dtype_name(c.p.c_type));
  k.trans_a = c.p.trans_a == gemm::Trans::N ? 'N' : 'T';
  k.trans_b = c.p.trans_b == gemm::Trans::N ? 'N' : 'T';
  k.threads = c.p.threads;
  k.m = c.p.m;
  k.n = c.p.n;
  k.k = c.p.k;
  k.items = c.form == Form::single ? 1 : c.items;
  return k;
}

double estimate(const Call& c, const Schedule& sched, const Machine& mc) {
  const std::vector<std::int64_t> rows = item_rows(c);
  if (rows.empty() || c.p.n == 0) return 0;
  auto resolved = [&](std::int64_t m) {
    gemm::Params q = c.p;
    q.m = m;
    q.schedule = sched;
    return std::pair<gemm::Params, Schedule>(q, gemm::resolve(q));
  };
  double serial = 0;
  std::vector<BlockWork> work;
  // Bandwidth is shared by the threads actually busy: no more than there are blocks.
  auto busy = [&](int threads) {
    return static_cast<int>(std::min<std::size_t>(work.size(), std::max(1, threads)));
  };
  gemm::Call fc = c;
  fc.p.schedule = sched;
  if (gemm::fuses_items(fc)) {
    int threads = 1;
    for (std::int64_t m : rows) {
      const auto [q, s] = resolved(m);
      threads = s.threads;
      item_blocks(q, s, mc, work, serial);
    }
    const int used = busy(threads);
    std::vector<double> t = block_seconds(work, mc, used);
    return makespan(t, used) + (used > 1 ? mc.wake_s + mc.region_s : 0.0) + serial;
  }
  double total = 0;
  bool first = true;
  for (std::int64_t m : rows) {
    const auto [q, s] = resolved(m);
    work.clear();
    item_blocks(q, s, mc, work, serial);
    const int used = busy(s.threads);
    std::vector<double> t = block_seconds(work, mc, used);
    total += makespan(t, used);
    if (used > 1) total += mc.region_s + (first ? mc.wake_s : 0.0);
    first = false;
  }
  return total + serial;
}

Schedule heuristic(const Call& c, const Machine& mc) {
  Schedule s;  // automatic fields: the engine's table
  const std::vector<std::int64_t> rows = item_rows(c);
  const double flops = [&] {
    double f = 0;
    for (std::int64_t m : rows) f += 2.0 * d(m) * d(c.p.n) * d(c.p.k);
    return f;
  }();
  // 1. Tiny work does not pay for waking a second thread: under ~25 us of one thread's
  //    compute, stay on the caller.
  const bool tiny = flops < 25e-6 * mc.fma_gflops_1t * 1e9 * 0.5;
  s.threads = tiny ? 1 : c.p.threads;
  // 2. Many items: one region for all of them, each item whole when there are enough items
  //    to keep every thread busy, else each item cut in as many column blocks as needed.
  if (c.form != Form::single && rows.size() > 1) {
    s.fuse_items = gemm::Fuse::on;
    const int per_item = static_cast<int>(
        std::max<std::int64_t>(1, ceil_div(s.threads, static_cast<std::int64_t>(rows.size()))));
    s.threads_m = 1;
    s.threads_n = per_item;
  }
  // 3. The decode path with too few W rows per thread and a long K: split K instead.
  if (decode_ok(c) && s.threads > 1 && c.p.n < 64 * s.threads && c.p.k >= 1024 &&
      s.fuse_items != gemm::Fuse::on) {
    s.path = Path::decode;
    s.split_k = s.threads;
  }
  (void)mc;
  return s;
}

std::vector<Schedule> candidates(const Call& c, const Machine& mc) {
  std::vector<Schedule> out;
  std::set<std::string> seen;
  const std::vector<std::int64_t> rows = item_rows(c);
  // Two schedules that run the same for this call are one candidate.
  auto add = [&](const Schedule& s) {
    if (seen.insert(describe(c, s)).second) out.push_back(s);
  };
  add(Schedule{});  // the default
  add(heuristic(c, mc));
  const gemm::Isa isa = gemm::detected_isa();
  const gemm::Family fam = gemm::family_of(isa);
  std::vector<int> threads = {c.p.threads};
  for (int t = c.p.threads / 2; t >= 1; t /= 2) threads.push_back(t);
  if (threads.back() != 1) threads.push_back(1);
  const bool many = c.form != Form::single && rows.size() > 1;
  for (int t : threads) {
    for (int fuse = 0; fuse <= (many ? 1 : 0); ++fuse) {
      // Grids: the thread grid (not fused) or the blocks per item (fused).
      std::vector<std::pair<int, int>> grids;
      if (fuse) {
        for (int b = 1; b <= t; b *= 2) grids.emplace_back(1, b);
        if (t > 1) grids.emplace_back(t, 1);
      } else {
        for (int tm = 1; tm <= t; ++tm)
          if (t % tm == 0) grids.emplace_back(tm, t / tm);
      }
      for (const auto& [gm, gn] : grids) {
        Schedule base;
        base.threads = t;
        base.fuse_items = fuse != 0 ? gemm::Fuse::on : gemm::Fuse::off;
        if (decode_ok(c)) {
          for (int split : {1, 2, 4, 8}) {
            if (split > 1 && (gm != 1 || c.p.k < 256 * split)) continue;
            for (int kt : {512, 1024, 2048, 4096})
              for (int st : {1, 2, 3}) {
                Schedule s = base;
                s.path = Path::decode;
                s.threads_m = 1;
                s.threads_n = gn * gm;
                s.split_k = split;
                s.decode_k_tile = kt;
                s.stages = st;
                add(s);
              }
          }
        }
        // The decode path on the swapped operands (few columns: A's rows streamed once).
        Schedule swapped_decode;
        swapped_decode.path = Path::decode;
        swapped_decode.swap = true;
        if (gemm::schedule_fits(c.p, swapped_decode))
          for (int kt : {1024, 4096})
            for (int st : {1, 2}) {
              Schedule s = base;
              s.path = Path::decode;
              s.swap = true;
              s.threads_m = 1;
              s.threads_n = gn * gm;
              s.decode_k_tile = kt;
              s.stages = st;
              add(s);
            }
        // The direct path, and on the swapped operands (C^T = W . A^T) where it applies.
        for (const bool swap : {false, true}) {
          Schedule direct;
          direct.path = Path::direct;
          direct.swap = swap;
          if (!gemm::schedule_fits(c.p, direct)) continue;
          for (int kc : {0, 512, 1024, 2048})
            for (int st : {1, 2}) {
              Schedule s = base;
              s.path = Path::direct;
              s.swap = swap;
              s.threads_m = gm;  // whole panels of A^T
              s.threads_n = gn;
              s.kc = kc;
              s.stages = st;
              add(s);
            }
        }
        for (int kc : {128, 256, 384, 512})
          for (int mcb : {fam.mc / 2, fam.mc, fam.mc * 2})
            for (gemm::Order order : {gemm::Order::mk, gemm::Order::km}) {
              Schedule s = base;
              s.path = Path::packed;
              s.threads_m = gm;
              s.threads_n = gn;
              s.kc = kc;
              s.mc = static_cast<int>(round_up(std::max(mcb, fam.mr), fam.mr));
              s.order = order;
              add(s);
            }
      }
      // The packed path with K split over the threads (small C, long K).
      if (!fuse && t > 1 && c.p.m * c.p.n <= 64 * 1024 && c.p.k >= 256 * t)
        for (int kc : {256, 512}) {
          Schedule s;
          s.threads = t;
          s.path = Path::packed;
          s.threads_m = s.threads_n = 1;
          s.split_k = t;
          s.kc = kc;
          add(s);
        }
    }
  }
  return out;
}

}  // namespace attain::tune
