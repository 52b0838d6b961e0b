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
#include "bench/moe_measure.hpp"
#include "core/util.hpp"

namespace attain::moe {

using Clock = std::chrono::steady_clock;
using namespace measure;  // the measurements and checks this driver is made of

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
