// MoE dispatch/combine under mpirun (2 and 4 ranks, shared memory and TCP): sentinel rows
// prove every token reached exactly the right experts and came back; combine is compared with
// a single-process reference; both modes, both payload dtypes, both transports; two
// operations in flight at once; ragged token counts, tokens without experts, skewed routing;
// and the sharded bench gathers every rank's results on rank 0.
//
// A plain program (no GoogleTest under MPI): prints each failure with its rank, exits 1 if any
// rank failed.
#include <fmt/format.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "attain/moe.hpp"

using namespace attain;
using namespace attain::moe;

namespace {

int g_rank = 0, g_ranks = 1, g_failures = 0;
std::size_t ix(std::int64_t i) {
  return static_cast<std::size_t>(i);
}

#define CHECK(cond, ...)                                                          \
  do {                                                                            \
    if (!(cond)) {                                                                \
      ++g_failures;                                                               \
      fmt::print(stderr, "rank {}: FAIL {}:{}: {}\n", g_rank, __FILE__, __LINE__, \
                 fmt::format(__VA_ARGS__));                                       \
      return;                                                                     \
    }                                                                             \
  } while (0)

constexpr int kExperts = 8, kTopk = 3;
constexpr std::int64_t kHidden = 160;  // not a multiple of 128: the fp8 scale tail block
constexpr std::int64_t kMaxTokens = 24;

// Rank r's input for micro-batch `mb` of iteration `it`: ragged token counts, skewed routing,
// some slots without an expert (-1) and one token with none at all.
struct Input {
  Routing routing;
  Tokens x;
};
Input make_input(int rank, int it, int mb, Payload dt) {
  const std::int64_t T = kMaxTokens - 5 * ((rank + it + mb) % 3);
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(it) +
                             100 * static_cast<std::uint64_t>(mb) +
                             static_cast<std::uint64_t>(rank);
  GateConfig g;
  g.experts = kExperts;
  g.topk = kTopk;
  Input in;
  in.routing = route(g, random_scores(T, kExperts, seed, 1.5), {});
  for (std::int64_t t = 0; t < T; ++t)
    if (t % 5 == 2) in.routing.ids[ix(t * kTopk + 1)] = -1;
  for (int k = 0; k < kTopk; ++k) in.routing.ids[ix(kTopk + k)] = -1;  // token 1 goes nowhere
  in.x = make_tokens(sentinel_rows(T, kHidden, rank, seed), T, kHidden, dt);
  return in;
}

std::vector<float> expert_scales() {
  std::vector<float> s(kExperts);
  for (int e = 0; e < kExperts; ++e) s[ix(e)] = 0.75f + 0.125f * static_cast<float>(e);
  return s;
}

// Every row that arrived here against what its source sent (rebuilt locally).
void check_rows(const ExpertComm& comm, const DispatchState& st, const std::vector<Input>& all) {
  const int L = comm.local_experts(), first = comm.first_expert(), me = comm.rank();
  const ExpertRows& r = st.rows;
  std::set<std::tuple<int, int, int>> seen;
  for (int g = 0; g < L; ++g) {
    const std::int64_t r0 = r.layout == GroupedLayout::contiguous ? r.offsets[g] : g * r.capacity;
    const std::int64_t r1 =
        r.layout == GroupedLayout::contiguous ? r.offsets[g + 1] : r0 + r.counts[g];
    if (r.layout == GroupedLayout::contiguous)
      CHECK(r0 % 4 == 0, "group {} starts at unaligned row {}", g, r0);
    for (std::int64_t row = r0; row < r1; ++row) {
      const RowOrigin o = st.origin[ix(row)];
      if (o.rank < 0) continue;
      CHECK(o.rank < comm.ranks(), "row {}: rank {}", row, o.rank);
      const Input& in = all[ix(o.rank)];
      std::int64_t t = o.token;
      if (st.mode == Mode::normal) {
        // Position in the source's send list to this rank -> token id.
        std::int64_t pos = -1;
        for (t = 0; t < in.routing.tokens; ++t) {
          bool here = false;
          for (int k = 0; k < kTopk; ++k)
            here |= in.routing.id(t, k) >= first && in.routing.id(t, k) < first + L;
          if (here && ++pos == o.token) break;
        }
      }
      CHECK(t >= 0 && t < in.routing.tokens, "row {}: token {} of rank {}", row, t, o.rank);
      CHECK(in.routing.id(t, o.slot) == first + g,
            "row {}: rank {} token {} slot {} routed to {}, found in expert {}", row, o.rank, t,
            o.slot, in.routing.id(t, o.slot), first + g);
      const std::int64_t P = r.row_bytes(), kb = r.scale_blocks();
      CHECK(std::memcmp(r.data + row * P, in.x.data.data() + t * P, ix(P)) == 0,
            "row {}: payload is not rank {} token {}'s", row, o.rank, t);
      if (kb)
        CHECK(std::memcmp(r.scales + row * kb, in.x.scales.data() + t * kb, ix(4 * kb)) == 0,
              "row {}: scales", row);
      CHECK(seen.insert({o.rank, static_cast<int>(t), o.slot}).second,
            "rank {} token {} slot {} twice", o.rank, t, o.slot);
    }
  }
  std::size_t expected = 0;
  for (const Input& in : all)
    for (std::int64_t t = 0; t < in.routing.tokens; ++t)
      for (int k = 0; k < kTopk; ++k)
        expected += in.routing.id(t, k) >= first && in.routing.id(t, k) < first + L;
  CHECK(seen.size() == expected, "rank {} received {} rows, {} were routed here", me, seen.size(),
        expected);
}

void check_combined(const Input& in, const std::vector<std::uint16_t>& out,
                    const std::vector<float>& scale) {
  const auto ref = reference_combine(in.routing, in.x, scale);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double v = bf16_to_f32(out[i]);
    CHECK(std::isfinite(v), "output {} is {}", i, v);
    num += (v - ref[i]) * (v - ref[i]);
    den += ref[i] * ref[i];
  }
  CHECK(std::sqrt(num / den) < 1e-2, "combine error {:.3g} vs the reference", std::sqrt(num / den));
  for (std::int64_t j = 0; j < kHidden; ++j)  // token 1 has no expert: exactly zero
    CHECK(out[ix(kHidden + j)] == 0, "token without experts got {}",
          bf16_to_f32(out[ix(kHidden + j)]));
}

void run_case(Mode mode, Payload dt, Transport tr) {
  CommConfig cc;
  cc.mode = mode;
  cc.dtype = dt;
  cc.experts = kExperts;
  cc.topk = kTopk;
  cc.hidden = kHidden;
  cc.max_tokens = kMaxTokens;
  cc.align = 4;
  cc.timeout_s = 20;
  cc.transport = tr;
  ExpertComm comm(cc);
  const auto scale = expert_scales();
  const GroupedLayout lay =
      mode == Mode::normal ? GroupedLayout::contiguous : GroupedLayout::masked;
  for (int it = 0; it < 3; ++it) {
    // Two micro-batches in flight at once, as the overlap schedule runs them.
    std::vector<Input> all[2];
    for (int mb = 0; mb < 2; ++mb)
      for (int r = 0; r < comm.ranks(); ++r) all[mb].push_back(make_input(r, it, mb, dt));
    std::unique_ptr<RowBuffer> buf[2];
    for (int mb = 0; mb < 2; ++mb) {
      std::int64_t cap = comm.ll_capacity();
      if (mode == Mode::normal) {
        cap = 0;
        for (auto n : comm.plan(all[mb][ix(comm.rank())].routing)) cap += align_up(n, cc.align);
      }
      buf[mb] = std::make_unique<RowBuffer>(lay, dt, comm.local_experts(), kHidden,
                                            std::max<std::int64_t>(cap, 1));
    }
    DispatchState st[2];
    std::vector<std::uint16_t> out[2];
    Handle h[2];
    for (int mb = 0; mb < 2; ++mb) {
      const Input& mine = all[mb][ix(comm.rank())];
      h[mb] = comm.dispatch(mine.routing, mine.x, buf[mb]->rows(), &st[mb]);
    }
    for (int mb = 0; mb < 2; ++mb) {
      h[mb].wait();
      check_rows(comm, st[mb], all[mb]);
      apply_scale_experts(st[mb].rows, comm.first_expert(), scale, buf[mb]->output());
      out[mb].assign(ix(all[mb][ix(comm.rank())].routing.tokens * kHidden), 0xffff);
      h[mb] = comm.combine(st[mb], buf[mb]->output(), out[mb].data());
    }
    for (int mb = 0; mb < 2; ++mb) {
      h[mb].wait();
      check_combined(all[mb][ix(comm.rank())], out[mb], scale);
    }
  }
  comm.barrier();
}

void check_bad_input() {
  CommConfig cc;
  cc.experts = kExperts;
  cc.topk = kTopk;
  cc.hidden = kHidden;
  cc.max_tokens = kMaxTokens;
  ExpertComm comm(cc);
  Input in = make_input(comm.rank(), 0, 0, Payload::bf16);
  in.routing.ids[0] = kExperts;  // out of range: rejected before anything is sent
  RowBuffer buf(GroupedLayout::contiguous, Payload::bf16, comm.local_experts(), kHidden, 1024);
  DispatchState st;
  bool threw = false;
  try {
    comm.dispatch(in.routing, in.x, buf.rows(), &st).wait();
  } catch (const InputError& e) {
    threw = std::string(e.what()).find("expert id 8") != std::string::npos;
  }
  CHECK(threw, "an out-of-range expert id was not rejected");
}

void check_sharded_bench() {
  std::vector<CatalogOp> ops;
  for (int i = 0; i < 5; ++i)
    ops.push_back({Op::parse(fmt::format("gemm:m={},n=16,k=32,dtype=fp32", 1 + i)), {}});
  BenchConfig cfg;
  cfg.backends = {"reference"};
  cfg.timing.max_seconds = 0.01;
  cfg.timing.min_reps = 1;
  Roofline roof;
  roof.peak_tflops = 1;
  roof.bw_gbps = 10;
  std::map<std::string, std::string> libs;
  const auto res = run_bench_sharded(ops, cfg, roof, &libs);
  if (g_rank != 0) {
    CHECK(res.empty(), "rank {} got {} results", g_rank, res.size());
    return;
  }
  CHECK(res.size() == ops.size(), "rank 0 gathered {} results for {} ops", res.size(), ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i)
    CHECK(res[i].op.op == ops[i].op && res[i].status == "ok", "result {} is {} ({})", i,
          res[i].op.op.spec(), res[i].status);
  CHECK(libs.count("reference") == 1, "libraries not gathered");
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi;
  g_rank = mpi.rank();
  g_ranks = mpi.size();
  std::vector<Transport> transports = {Transport::shm, Transport::rma};
  if (argc > 1 && std::string(argv[1]) == "--rma-only") transports = {Transport::rma};
  try {
    for (Transport tr : transports)
      for (Mode m : {Mode::normal, Mode::low_latency})
        for (Payload dt : {Payload::bf16, Payload::fp8}) {
          const int before = g_failures;
          run_case(m, dt, tr);
          if (g_rank == 0)
            fmt::print("{} {} {} on {} ranks: {}\n", mode_name(m), payload_name(dt),
                       transport_name(tr), g_ranks, g_failures == before ? "ok" : "FAILED");
        }
    check_bad_input();
    check_sharded_bench();
  } catch (const std::exception& e) {
    fmt::print(stderr, "rank {}: error: {}\n", g_rank, e.what());
    abort_job(1);
  }
  int failed = g_failures;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) fmt::print("{}\n", failed ? "MPI MoE tests FAILED" : "MPI MoE tests passed");
  return failed ? 1 : 0;
}
