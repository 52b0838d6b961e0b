// The measurements and checks `attain moe` is made of (MPI): the sentinel checks of dispatch
// and combine, the machine's copy bandwidth, the LLC flush, medians over ranks, fault injection.
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
#include "bench/moe_measure.hpp"
#include "core/util.hpp"

namespace attain::moe::measure {

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
    const auto [r0, r1] = rows.group_rows(g);
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

}  // namespace attain::moe::measure
