// attain moe: verification with sentinel rows, dispatch/combine bandwidth and latency,
// overlap of two micro-batches, and the expert GEMM's slowdown under communication traffic.
#include <fmt/format.h>
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <set>
#include <tuple>

#include "attain/backend.hpp"
#include "attain/device.hpp"
#include "attain/moe.hpp"
#include "core/util.hpp"

namespace attain::moe {

namespace {

using Clock = std::chrono::steady_clock;
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Element-wise max (or sum) over ranks, in place.
void all_max(std::vector<double>& v) {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX,
                MPI_COMM_WORLD);
}
double all_sum(double x) {
  MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return x;
}
bool all_true(bool b) {
  int v = b ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return v != 0;
}

// Appends a reason to a "; "-separated list of them.
void add_note(std::string& notes, const std::string& note) {
  notes += (notes.empty() ? "" : "; ") + note;
}

std::string default_backend() {
  for (const auto& b : backend_registry())
    if (b.name == "attain") return "attain";
  return "reference";
}

// The per-rank inputs of the benchmark: a pure function of (config, rank), so every rank can
// rebuild what any other rank sent.
struct RankInput {
  Routing routing;
  Tokens x;
};
RankInput make_input(const MoeBenchConfig& c, int rank, std::uint64_t salt) {
  RankInput in;
  const auto scores = random_scores(
      c.tokens, c.gate.experts, c.seed + 7919 * static_cast<std::uint64_t>(rank) + salt, c.skew);
  std::vector<float> bias;
  if (c.gate.sigmoid) {
    bias.resize(idx(c.gate.experts));
    for (int e = 0; e < c.gate.experts; ++e) bias[idx(e)] = 0.01f * static_cast<float>(e % 7);
  }
  in.routing = route(c.gate, scores, bias);
  in.x = make_tokens(sentinel_rows(c.tokens, c.hidden, rank, c.seed + salt), c.tokens, c.hidden,
                     c.dtype);
  return in;
}

ExpertRows rows_of(RowBuffer& b) {
  return b.rows();
}

// Sentinel check of one dispatch: every row that reached this rank is byte-identical to the
// row its origin sent, sits in the group of the expert it was routed to, and every (rank,
// token, slot) routed here arrived exactly once.
std::string check_dispatch(const MoeBenchConfig& c, const ExpertComm& comm, const DispatchState& st,
                           const std::vector<RankInput>& all) {
  const int me = comm.rank(), R = comm.ranks(), L = comm.local_experts(),
            first = comm.first_expert();
  const ExpertRows& rows = st.rows;
  const std::int64_t P = rows.row_bytes(), kb = rows.scale_blocks();
  // Token index of each normal-mode send position, per source rank.
  std::vector<std::vector<std::int32_t>> sent_to_me(idx(R));
  for (int src = 0; src < R; ++src) {
    const Layout lay = make_layout(all[idx(src)].routing, c.gate.experts, R);
    for (std::int64_t t = 0; t < c.tokens; ++t)
      if (lay.goes_to(t, me)) sent_to_me[idx(src)].push_back(static_cast<std::int32_t>(t));
  }
  std::set<std::tuple<int, int, int>> seen;
  for (int g = 0; g < L; ++g) {
    std::int64_t r0, r1;
    if (rows.layout == GroupedLayout::contiguous) {
      r0 = rows.offsets[g];
      r1 = rows.offsets[g + 1];
    } else {
      r0 = g * rows.capacity;
      r1 = r0 + rows.counts[g];
    }
    for (std::int64_t row = r0; row < r1; ++row) {
      const RowOrigin o = st.origin[idx(row)];
      if (o.rank < 0) continue;  // alignment padding
      if (o.rank >= R) return fmt::format("row {} names source rank {}", row, o.rank);
      std::int64_t t = o.token;
      if (st.mode == Mode::normal) {
        if (o.token >= static_cast<std::int32_t>(sent_to_me[idx(o.rank)].size()))
          return fmt::format("row {}: send position {} beyond what rank {} sent", row, o.token,
                             o.rank);
        t = sent_to_me[idx(o.rank)][idx(o.token)];
      }
      const RankInput& in = all[idx(o.rank)];
      if (t < 0 || t >= c.tokens || o.slot < 0 || o.slot >= c.gate.topk)
        return fmt::format("row {}: token {} slot {} out of range", row, t, o.slot);
      const int e = in.routing.id(t, o.slot);
      if (e != first + g)
        return fmt::format(
            "row {} (rank {} token {} slot {}) is in expert {}'s group, routed to {}", row, o.rank,
            t, o.slot, first + g, e);
      if (std::memcmp(rows.data + row * P, in.x.data.data() + t * P, idx(P)) != 0 ||
          (kb &&
           std::memcmp(rows.scales + row * kb, in.x.scales.data() + t * kb, idx(4 * kb)) != 0))
        return fmt::format("row {}: payload differs from rank {} token {}", row, o.rank, t);
      if (!seen.insert({o.rank, static_cast<int>(t), o.slot}).second)
        return fmt::format("rank {} token {} slot {} arrived twice", o.rank, t, o.slot);
    }
  }
  std::size_t expected = 0;
  for (int src = 0; src < R; ++src)
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (int k = 0; k < c.gate.topk; ++k) {
        const int e = all[idx(src)].routing.id(t, k);
        expected += e >= first && e < first + L ? 1 : 0;
      }
  if (seen.size() != expected)
    return fmt::format("{} rows arrived, {} routed here", seen.size(), expected);
  return {};
}

std::string check_combine(const std::vector<std::uint16_t>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double v = bf16_to_f32(out[i]);
    if (!std::isfinite(v)) return fmt::format("combined value {} is {}", i, v);
    num += (v - ref[i]) * (v - ref[i]);
    den += ref[i] * ref[i];
  }
  const double err = std::sqrt(num / std::max(den, 1e-300));
  // Expert outputs and the per-rank partial sums are bf16: a few units of 2^-8.
  if (err > 1e-2) return fmt::format("combine relative error {:.3g} > 1e-2", err);
  return {};
}

TransferStats stats(const std::vector<double>& total, const std::vector<double>& transfer,
                    const std::vector<double>& local, double bytes, double copy_gbps) {
  TransferStats s;
  s.latency_us = median(total) * 1e6;
  s.transfer_us = median(transfer) * 1e6;
  s.layout_us = median(local) * 1e6;
  s.bytes = bytes;
  if (s.transfer_us > 0) s.gbps = bytes / (s.transfer_us * 1e-6) / 1e9;
  if (copy_gbps > 0 && s.transfer_us > 0) s.bandwidth_fraction = 2 * s.gbps / copy_gbps;
  if (copy_gbps > 0 && s.latency_us > 0)
    s.end_to_end_fraction = 2 * bytes / (s.latency_us * 1e-6) / 1e9 / copy_gbps;
  return s;
}

// The machine's all-core copy bandwidth. mpirun binds each rank to a core, and the probe counts
// the CPUs a process may use: rank 0 probes with the whole machine's CPUs (cached after the first
// time) while the others sleep, so they do not steal the cores it measures.
double machine_copy_gbps(int me) {
  double v = 0;
  if (me == 0) {
    cpu_set_t old, every;
    CPU_ZERO(&every);
    for (long i = 0, n = sysconf(_SC_NPROCESSORS_ONLN); i < n && i < CPU_SETSIZE; ++i)
      CPU_SET(i, &every);
    const bool widened = sched_getaffinity(0, sizeof old, &old) == 0 &&
                         sched_setaffinity(0, sizeof every, &every) == 0;
    v = probe_host(false, false).copy_gbps_all;
    if (widened) sched_setaffinity(0, sizeof old, &old);
  }
  MPI_Request rq;
  MPI_Ibcast(&v, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &rq);
  for (int done = 0;;) {
    MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    if (done) break;
    usleep(1000);
  }
  return v;
}

// Evicts the LLC (cold-cache timing, as everywhere in attain): every rank rewrites 96 MiB.
void flush_llc() {
  static std::vector<unsigned char> junk(std::size_t{96} << 20, 1);
  unsigned sum = 0;
  for (std::size_t i = 0; i < junk.size(); i += 64) sum += ++junk[i];
  static std::atomic<unsigned> sink;  // keeps the loop from being optimized away
  sink.fetch_add(sum, std::memory_order_relaxed);
}

// Every rank copies at once, as in a transfer: what the memory system gives this job now (read +
// write counted). Two ways, the faster counts: one large memcpy (glibc streams it with
// non-temporal stores) and the same bytes in rows of the transfer's row size (ordinary
// stores, as the transfer's copies). Buffers of 64-256 MiB: far beyond the LLC, so cold.
double concurrent_copy_gbps(double bytes_per_rank, std::size_t row, int reps) {
  const auto n =
      static_cast<std::size_t>(std::clamp(bytes_per_rank, 64.0 * (1 << 20), 256.0 * (1 << 20)));
  std::vector<char> a(n, 1), b(n, 2);
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  double best = 1e30;
  for (int i = 0; i < 2 * reps; ++i) {
    flush_llc();
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    if (i % 2 == 0) {
      std::memcpy(b.data(), a.data(), n);
    } else {
      for (std::size_t o = 0; o < n; o += row)
        std::memcpy(b.data() + o, a.data() + o, std::min(row, n - o));
    }
    double t = since(t0);
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    best = std::min(best, t);
    a.swap(b);
  }
  return 2.0 * static_cast<double>(n) * ranks / best / 1e9;
}

void inject_fault(const std::string& fault, int me) {
  if (fault.empty()) return;
  const auto colon = fault.find(':');
  const std::string kind = fault.substr(0, colon);
  const int who = colon == std::string::npos ? 1 : std::stoi(fault.substr(colon + 1));
  if (who != me) return;
  std::fflush(stdout);
  std::fflush(stderr);
  std::raise(kind == "kill" ? SIGKILL : SIGSTOP);
}

}  // namespace

MoeBenchResult run_moe_bench(const MoeBenchConfig& c) {
  c.gate.validate();
  if (c.tokens <= 0 || c.hidden <= 0 || c.inter <= 0 || c.reps <= 0)
    throw InputError("tokens, hidden, inter and reps must be positive");
  if (!c.fault.empty() && c.fault.rfind("kill:", 0) != 0 && c.fault.rfind("stop:", 0) != 0)
    throw InputError(fmt::format("fault '{}' (known: kill:RANK, stop:RANK)", c.fault));
  const double copy_gbps = machine_copy_gbps([] {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }());
  CommConfig cc;
  cc.mode = c.mode;
  cc.dtype = c.dtype;
  cc.experts = c.gate.experts;
  cc.topk = c.gate.topk;
  cc.hidden = c.hidden;
  cc.max_tokens = c.tokens;
  cc.align = c.align;
  cc.timeout_s = c.timeout_s;
  cc.transport = c.transport;
  ExpertComm comm(cc);
  const int me = comm.rank(), R = comm.ranks(), L = comm.local_experts();
  const GroupedLayout layout =
      c.mode == Mode::normal ? GroupedLayout::contiguous : GroupedLayout::masked;

  // Progress in steps: verification, each timed repetition of each measurement, contention.
  const int n = c.reps;
  const bool mlp_part = c.overlap || c.contention;
  const std::size_t steps = static_cast<std::size_t>(
      1 + n + (mlp_part ? n : 0) + (c.overlap ? n + 1 : 0) + (c.contention ? 1 : 0));
  ProgressBar bar(c.progress && me == 0, steps, -1, "steps");
  std::size_t done = 0;
  auto step = [&](const char* next) { bar.update(++done, next); };
  bar.update(0, "verification");

  MoeBenchResult res;
  res.ranks = R;
  res.transport = std::string(transport_name(comm.transport()));
  res.expert_backend = c.expert_backend.empty() ? default_backend() : c.expert_backend;
  res.copy_gbps_probe = copy_gbps;
  {
    // Sized like this rank's dispatch traffic.
    const double per_rank = static_cast<double>(c.tokens) * static_cast<double>(c.hidden) *
                            (c.dtype == Payload::fp8 ? 1.0 : 2.0) * (R - 1);
    res.copy_gbps_memcpy = concurrent_copy_gbps(
        per_rank, static_cast<std::size_t>(c.hidden * (c.dtype == Payload::fp8 ? 1 : 2)), 4);
  }
  res.copy_gbps = std::max(res.copy_gbps_probe, res.copy_gbps_memcpy);

  // ---- inputs of every rank (each rank rebuilds all, to check what arrived)
  std::vector<RankInput> all;
  for (int r = 0; r < R; ++r) all.push_back(make_input(c, r, 0));
  const RankInput& mine = all[idx(me)];
  auto capacity_for = [&](const Routing& rt, double* notify_s) {
    if (c.mode == Mode::low_latency) return comm.ll_capacity();
    const auto t0 = Clock::now();
    const auto rows = comm.plan(rt);
    if (notify_s) *notify_s = since(t0);
    std::int64_t cap = 0;
    for (auto rows_e : rows) cap += align_up(rows_e, c.align);
    return std::max<std::int64_t>(cap, 1);
  };
  double notify_s = 0;
  const std::int64_t cap = capacity_for(mine.routing, &notify_s);
  std::vector<double> nv = {notify_s};
  all_max(nv);
  res.notify_us = nv[0] * 1e6;
  RowBuffer buf(layout, c.dtype, L, c.hidden, cap);

  // ---- verification: sentinel rows through dispatch, scale experts, combine vs the reference
  std::vector<float> scale(idx(c.gate.experts));
  for (int e = 0; e < c.gate.experts; ++e)
    scale[idx(e)] = 0.5f + static_cast<float>(e) / static_cast<float>(c.gate.experts);
  DispatchState st;
  std::vector<std::uint16_t> out(idx(c.tokens * c.hidden));
  comm.dispatch(mine.routing, mine.x, rows_of(buf), &st).wait();
  std::string why = check_dispatch(c, comm, st, all);
  apply_scale_experts(st.rows, comm.first_expert(), scale, buf.output());
  comm.combine(st, buf.output(), out.data()).wait();
  if (why.empty()) why = check_combine(out, reference_combine(mine.routing, mine.x, scale));
  res.verified = all_true(why.empty());
  res.verification =
      why.empty() ? (res.verified ? "sentinel rows reached exactly their experts on every rank; "
                                    "combine matches the single-process reference"
                                  : "another rank's check failed")
                  : fmt::format("rank {}: {}", me, why);

  step("dispatch and combine");

  // ---- bandwidth and latency
  std::vector<double> dt(idx(n)), dx(idx(n)), dl(idx(n)), ct(idx(n)), cx(idx(n)), cl(idx(n));
  double dbytes = 0, cbytes = 0;
  for (int i = -1; i < n; ++i) {  // i = -1: warm-up
    flush_llc();
    comm.barrier();
    if (i == 0) inject_fault(c.fault, me);  // testing aid: a rank dies or hangs mid-run
    auto h = comm.dispatch(mine.routing, mine.x, rows_of(buf), &st);
    h.wait();
    flush_llc();
    comm.barrier();
    auto g = comm.combine(st, buf.output(), out.data());
    g.wait();
    if (i < 0) continue;
    step(i + 1 < n ? "dispatch and combine" : "expert MLP");
    const OpTiming a = h.timing(), b = g.timing();
    dt[idx(i)] = a.total_s, dx[idx(i)] = a.transfer_s, dl[idx(i)] = a.local_s, dbytes = a.bytes_out;
    ct[idx(i)] = b.total_s, cx[idx(i)] = b.transfer_s, cl[idx(i)] = b.local_s, cbytes = b.bytes_out;
  }
  for (auto* v : {&dt, &dx, &dl, &ct, &cx, &cl}) all_max(*v);
  res.dispatch = stats(dt, dx, dl, all_sum(dbytes), res.copy_gbps);
  res.combine = stats(ct, cx, cl, all_sum(cbytes), res.copy_gbps);

  if (!c.overlap && !c.contention) return res;

  // ---- the expert MLP for two micro-batches
  const RankInput mb_b = make_input(c, me, 1000);
  std::unique_ptr<ExpertMLP> mlp[2];
  std::string skip;
  try {
    const std::int64_t cap_b = capacity_for(mb_b.routing, nullptr);
    ExpertConfig ec;
    ec.local_experts = L;
    ec.hidden = c.hidden;
    ec.inter = c.inter;
    ec.dtype = c.dtype;
    ec.layout = layout;
    ec.backend = res.expert_backend;
    ec.threads = c.threads;
    ec.seed = c.seed + 17 * static_cast<std::uint64_t>(me);
    ec.capacity = cap;
    mlp[0] = std::make_unique<ExpertMLP>(ec);
    ec.capacity = cap_b;
    mlp[1] = std::make_unique<ExpertMLP>(ec);
  } catch (const InputError& e) {
    skip = e.what();
  }
  if (!all_true(skip.empty())) {
    res.skipped = skip.empty() ? "the expert MLP could not be built on another rank" : skip;
    return res;
  }
  const RankInput* mb[2] = {&mine, &mb_b};
  DispatchState sts[2];
  std::vector<std::uint16_t> outs[2] = {out, out};

  // GEMM alone
  std::vector<double> gemm(idx(n));
  comm.dispatch(mine.routing, mine.x, mlp[0]->input(), &sts[0]).wait();
  comm.dispatch(mb_b.routing, mb_b.x, mlp[1]->input(), &sts[1]).wait();
  mlp[0]->run();  // warm-up
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    mlp[0]->run();
    gemm[idx(i)] = since(t0);
    step(i + 1 < n ? "expert MLP" : c.overlap ? "overlap" : "contention");
  }
  const double gemm_alone = median(gemm);
  res.gemm_gflops = mlp[0]->flops() / gemm_alone / 1e9;

  if (c.overlap) {
    std::vector<double> ser(idx(n)), ovl(idx(n)), comm_b(idx(n));
    for (int i = -1; i < n; ++i) {
      comm.barrier();
      auto t0 = Clock::now();
      double cb = 0;
      for (int m = 0; m < 2; ++m) {
        auto h = comm.dispatch(mb[m]->routing, mb[m]->x, mlp[m]->input(), &sts[m]);
        h.wait();
        mlp[m]->run();
        auto g = comm.combine(sts[m], mlp[m]->output(), outs[m].data());
        g.wait();
        if (m == 1) cb = h.timing().total_s + g.timing().total_s;
      }
      const double ts = since(t0);
      comm.barrier();
      t0 = Clock::now();
      auto d0 = comm.dispatch(mb[0]->routing, mb[0]->x, mlp[0]->input(), &sts[0]);
      auto d1 = comm.dispatch(mb[1]->routing, mb[1]->x, mlp[1]->input(), &sts[1]);
      d0.wait();
      mlp[0]->run();  // micro-batch 1's dispatch is in flight meanwhile
      auto c0 = comm.combine(sts[0], mlp[0]->output(), outs[0].data());
      d1.wait();
      mlp[1]->run();  // micro-batch 0's combine is in flight meanwhile
      auto c1 = comm.combine(sts[1], mlp[1]->output(), outs[1].data());
      c0.wait();
      c1.wait();
      const double to = since(t0);
      step(i + 1 < n ? "overlap" : "contention");
      if (i < 0) continue;
      ser[idx(i)] = ts, ovl[idx(i)] = to, comm_b[idx(i)] = cb;
    }
    for (auto* v : {&ser, &ovl, &comm_b}) all_max(*v);
    res.serial_ms = median(ser) * 1e3;
    res.overlapped_ms = median(ovl) * 1e3;
    res.comm_ms = median(comm_b) * 1e3;
    const double hidden = (*res.serial_ms - *res.overlapped_ms) / *res.comm_ms;
    if (hidden >= 0 && hidden <= 1) {
      res.hidden_fraction = hidden;
    } else {  // the runs' noise is larger than the communication they could hide
      add_note(res.skipped,
               fmt::format("overlap not measurable here: a hidden fraction of {:.2f} is outside "
                           "0..1 (serial {:.2f} ms, overlapped {:.2f} ms, communication {:.2f} ms)",
                           hidden, *res.serial_ms, *res.overlapped_ms, *res.comm_ms));
    }
  }

  if (c.contention) {
    // Traffic: dispatch+combine pairs on the verification buffers, long enough to cover
    // several GEMM runs; the GEMM runs meanwhile on the main thread.
    const double pair_s = (res.dispatch.latency_us + res.combine.latency_us) * 1e-6;
    std::vector<double> np = {
        std::clamp(std::ceil(4 * gemm_alone / std::max(pair_s, 1e-6)), 3.0, 2000.0)};
    all_max(np);
    const int pairs = static_cast<int>(np[0]);
    comm.barrier();
    std::vector<Handle> hs;
    for (int i = 0; i < pairs; ++i) {
      hs.push_back(comm.dispatch(mine.routing, mine.x, rows_of(buf), &st));
      hs.push_back(comm.combine(st, buf.output(), out.data()));
    }
    std::vector<double> runs;
    while (true) {
      const auto t0 = Clock::now();
      mlp[0]->run();
      const double tr = since(t0);
      const bool over = hs.back().ready();
      if (!over || runs.empty())
        runs.push_back(tr);  // a run that outlasted the traffic counts only if alone
      if (over) break;
    }
    double traffic = 0;
    for (auto& h : hs) {
      h.wait();
      traffic += h.timing().total_s;
    }
    step("results");
    std::vector<double> v = {median(runs), gemm_alone, traffic / pairs};
    all_max(v);
    res.gemm_alone_ms = v[1] * 1e3;
    res.gemm_contended_ms = v[0] * 1e3;
    if (v[0] / v[1] >= 1 && v[2] / pair_s >= 1) {
      res.gemm_slowdown = v[0] / v[1];
      res.comm_slowdown = v[2] / pair_s;
    } else {  // one ran faster beside the other than alone: noise, not a slowdown
      add_note(res.skipped,
               fmt::format("contention not measurable here: slowdowns below 1 (expert MLP "
                           "{:.2f}x, traffic {:.2f}x)",
                           v[0] / v[1], v[2] / pair_s));
    }
  }
  return res;
}

}  // namespace attain::moe
