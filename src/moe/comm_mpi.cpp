// Dispatch and combine over MPI, DeepEP-style.
//
// Every rank allocates one window once (CommConfig sizes it):
//   control slots (one 64-byte line each): sequence flags per peer, counters
//   region D: dispatch receive buffer   normal [ranks][max_tokens] rows of payload+scales+meta
//                                       low-latency [local_experts][ranks*max_tokens] rows
//   region C: combine receive buffer    normal [ranks][max_tokens][hidden] bf16 partial sums
//                                       low-latency [max_tokens][topk][hidden] bf16 expert outputs
// A sender waits until the receiver has released its previous data (the *_FREE flag of the
// previous sequence number), writes, then raises the *_DATA flag to the new sequence number.
// Every wait polls with a deadline, so a peer that died or hangs turns into a TimeoutError
// naming it. Transports: shm writes straight into the peers' memory (MPI-3 shared-memory
// window); rma uses MPI_Put / MPI_Accumulate / MPI_Fetch_and_op (works across nodes).
//
// Operations run on one communication thread per rank, in call order, so the caller can
// compute while they progress (Handle::wait() joins).
#include <fmt/format.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "attain/moe.hpp"
#include "core/util.hpp"
#include "moe/reduce_kernels.hpp"

namespace attain::moe {

namespace {

using Clock = std::chrono::steady_clock;
std::int64_t align64(std::int64_t x) {
  return align_up(x, 64);
}

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw std::runtime_error(
      fmt::format("{} failed: {}", what, std::string(msg, static_cast<std::size_t>(len))));
}

}  // namespace

// ---------------------------------------------------------------- session

MpiSession::MpiSession() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    owns_ = true;
    if (provided < MPI_THREAD_SERIALIZED)
      throw std::runtime_error(
          "MPI provides no MPI_THREAD_SERIALIZED (the communication thread needs it)");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // Errors come back as codes (turned into exceptions) instead of aborting the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiSession::~MpiSession() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (owns_ && !fin) MPI_Finalize();
}

bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

// ---------------------------------------------------------------- handles

struct Handle::State {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr err;
  OpTiming timing;
  double timeout_s = 30;
  Clock::time_point started;  // when the communication thread began it (under mu)
  std::shared_ptr<std::atomic<int>> waiting_on;
};

void Handle::wait() {
  if (!st_) return;
  std::unique_lock lk(st_->mu);
  // The communication thread times out by itself; this guards against it being stuck inside
  // MPI. Operations queued behind others only count from when they start.
  const double limit = 2 * st_->timeout_s + 5;
  while (!st_->cv.wait_for(lk, std::chrono::milliseconds(200), [&] { return st_->done; })) {
    if (st_->started == Clock::time_point{} || since(st_->started) < limit) continue;
    const int peer = st_->waiting_on ? st_->waiting_on->load() : -1;
    throw TimeoutError(
        peer, fmt::format("rank {} did not answer within {:g} s (communication blocked in MPI)",
                          peer, limit));
  }
  if (st_->err) std::rethrow_exception(st_->err);
}

bool Handle::ready() const {
  if (!st_) return true;
  std::lock_guard lk(st_->mu);
  return st_->done;
}

OpTiming Handle::timing() const {
  if (!st_) return {};
  std::lock_guard lk(st_->mu);
  return st_->timing;
}

// ---------------------------------------------------------------- the communicator

struct ExpertComm::Impl {
  CommConfig cfg;
  int me = 0, R = 1, L = 1;
  Transport transport = Transport::shm;
  MPI_Win win = MPI_WIN_NULL;
  std::byte* base = nullptr;     // my segment
  std::vector<std::byte*> peer;  // shm: every rank's segment
  std::size_t bytes = 0;
  // Geometry
  std::int64_t P = 0, S = 0, kb = 0;    // payload bytes, scale bytes, scale blocks per row
  std::int64_t meta = 0, stride_d = 0;  // dispatch row: meta bytes and stride
  std::size_t off_d = 0, off_c = 0;     // regions
  std::int64_t slots = 0;
  // Sequence numbers (identical on every rank: operations are collective and ordered)
  std::int64_t seq_d = 0, seq_c = 0, seq_b = 0, seq_p = 0;
  std::vector<std::byte> stage;        // rma: rows staged for one MPI_Put
  std::vector<std::uint16_t> partial;  // normal combine: partial sums for one rank
  // Communication thread
  std::thread worker;
  std::mutex qmu;
  std::condition_variable qcv;
  std::deque<std::function<void()>> queue;
  bool stopping = false;
  std::exception_ptr broken;  // after a timeout every later operation fails with it
  std::shared_ptr<std::atomic<int>> waiting_on = std::make_shared<std::atomic<int>>(-1);

  // ---- control slots
  enum : int { kDData, kDFree, kCData, kCFree, kDCount, kBar, kPlanSeq, kNumPerRank };
  std::size_t slot(int kind, int r) const { return static_cast<std::size_t>(kind * R + r) * 64; }
  std::size_t ll_counter(int le) const {
    return static_cast<std::size_t>(kNumPerRank * R + le) * 64;
  }
  std::size_t plan_count(int src, int le) const {
    return static_cast<std::size_t>(kNumPerRank * R + L + src * L + le) * 64;
  }

  // ---- primitive operations on the window
  std::int64_t load(std::size_t off) {
    if (transport == Transport::shm)
      return std::atomic_ref<std::int64_t>(*reinterpret_cast<std::int64_t*>(base + off))
          .load(std::memory_order_acquire);
    std::int64_t dummy = 0, v = 0;
    check_mpi(
        MPI_Fetch_and_op(&dummy, &v, MPI_INT64_T, me, static_cast<MPI_Aint>(off), MPI_NO_OP, win),
        "MPI_Fetch_and_op");
    check_mpi(MPI_Win_flush(me, win), "MPI_Win_flush");
    return v;
  }
  void store(int dest, std::size_t off, std::int64_t v) {
    if (transport == Transport::shm) {
      std::atomic_ref<std::int64_t>(*reinterpret_cast<std::int64_t*>(peer[idx(dest)] + off))
          .store(v, std::memory_order_release);
      return;
    }
    // Data put before this flag must be complete at the target first.
    check_mpi(MPI_Win_flush(dest, win), "MPI_Win_flush");
    check_mpi(MPI_Accumulate(&v, 1, MPI_INT64_T, dest, static_cast<MPI_Aint>(off), 1, MPI_INT64_T,
                             MPI_REPLACE, win),
              "MPI_Accumulate");
    check_mpi(MPI_Win_flush(dest, win), "MPI_Win_flush");
  }
  std::int64_t fetch_add(int dest, std::size_t off, std::int64_t v) {
    if (transport == Transport::shm)
      return std::atomic_ref<std::int64_t>(*reinterpret_cast<std::int64_t*>(peer[idx(dest)] + off))
          .fetch_add(v, std::memory_order_acq_rel);
    std::int64_t old = 0;
    check_mpi(
        MPI_Fetch_and_op(&v, &old, MPI_INT64_T, dest, static_cast<MPI_Aint>(off), MPI_SUM, win),
        "MPI_Fetch_and_op");
    check_mpi(MPI_Win_flush(dest, win), "MPI_Win_flush");
    return old;
  }
  // Bytes into a peer's segment (shm: memcpy; rma: MPI_Put, in pieces below 1 GiB).
  void put(int dest, std::size_t off, const void* src, std::size_t n) {
    if (transport == Transport::shm || dest == me) {
      std::memcpy((transport == Transport::shm ? peer[idx(dest)] : base) + off, src, n);
      return;
    }
    const auto* p = static_cast<const char*>(src);
    for (std::size_t done = 0; done < n;) {
      const std::size_t chunk = std::min<std::size_t>(n - done, std::size_t{1} << 30);
      check_mpi(MPI_Put(p + done, static_cast<int>(chunk), MPI_BYTE, dest,
                        static_cast<MPI_Aint>(off + done), static_cast<int>(chunk), MPI_BYTE, win),
                "MPI_Put");
      done += chunk;
    }
  }
  // Where rows for `dest` are built: straight in its memory (shm) or in the staging buffer.
  std::byte* target(int dest, std::size_t off, std::size_t n) {
    if (transport == Transport::shm) return peer[idx(dest)] + off;
    if (dest == me) return base + off;
    if (stage.size() < n) stage.resize(n);
    return stage.data();
  }
  void commit(int dest, std::size_t off, std::size_t n) {
    if (transport == Transport::shm || dest == me || n == 0) return;
    put(dest, off, stage.data(), n);
    check_mpi(MPI_Win_flush_local(dest, win), "MPI_Win_flush_local");
  }
  void sync_local() {
    if (transport == Transport::rma) MPI_Win_sync(win);
    std::atomic_thread_fence(std::memory_order_acquire);
  }

  // Waits until slot `off` of my segment reaches `v`; the slot belongs to `peer_rank`.
  void wait_for(std::size_t off, std::int64_t v, int peer_rank, const char* what) {
    waiting_on->store(peer_rank);
    const auto t0 = Clock::now();
    // Spin briefly (the data is usually about to arrive), then poll every ~20 us: the thread may
    // run at real-time priority, so it must sleep rather than yield.
    for (long spin = 0;; ++spin) {
      if (load(off) >= v) break;
      if (spin % 64 == 63) {
        const double waited = since(t0);
        if (waited > cfg.timeout_s)
          throw TimeoutError(
              peer_rank, fmt::format("rank {} did not answer within {:g} s ({}): it died or hangs",
                                     peer_rank, cfg.timeout_s, what));
        if (waited > 50e-6) std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
    waiting_on->store(-1);
  }

  // ---- the communication thread
  // Like DeepEP's dedicated communication SMs: the thread runs at real-time priority where
  // allowed (else a raised nice level), so traffic progresses at once while the expert GEMM
  // occupies the same core; it sleeps whenever it waits.
  static void raise_priority() {
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    sched_param sp{};
    sp.sched_priority = 1;
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0)
      setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), -10);
  }
  void loop() {
    raise_priority();
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lk(qmu);
        qcv.wait(lk, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;
        task = std::move(queue.front());
        queue.pop_front();
      }
      task();
    }
  }
  Handle submit(std::function<void(OpTiming&)> fn) {
    auto st = std::make_shared<Handle::State>();
    st->timeout_s = cfg.timeout_s;
    st->waiting_on = waiting_on;
    {
      std::lock_guard lk(qmu);
      queue.push_back([this, st, fn = std::move(fn)] {
        OpTiming t;
        std::exception_ptr err;
        {
          std::lock_guard lk0(st->mu);
          st->started = Clock::now();
        }
        try {
          if (broken) std::rethrow_exception(broken);
          const auto t0 = Clock::now();
          fn(t);
          t.total_s = since(t0);
        } catch (const TimeoutError&) {
          err = broken = std::current_exception();
        } catch (...) {
          err = std::current_exception();
        }
        {
          std::lock_guard lk2(st->mu);
          st->timing = t;
          st->err = err;
          st->done = true;
        }
        st->cv.notify_all();
      });
    }
    qcv.notify_one();
    Handle h;
    h.st_ = st;
    return h;
  }

  // ---- operations (run on the communication thread)
  void barrier_op() {
    const std::int64_t s = ++seq_b;
    for (int r = 0; r < R; ++r)
      if (r != me) store(r, slot(kBar, me), s);
    for (int r = 0; r < R; ++r)
      if (r != me) wait_for(slot(kBar, r), s, r, "barrier");
  }

  std::vector<std::int64_t> plan_op(const Routing& rt) {
    const Layout lay = make_layout(rt, cfg.experts, R);
    const std::int64_t s = ++seq_p;
    std::vector<std::int64_t> cnt(idx(L));
    for (int dest = 0; dest < R; ++dest) {
      for (int le = 0; le < L; ++le) cnt[idx(le)] = lay.tokens_per_expert[idx(dest * L + le)];
      for (int le = 0; le < L; ++le) store(dest, plan_count(me, le), cnt[idx(le)]);
      store(dest, slot(kPlanSeq, me), s);
    }
    std::vector<std::int64_t> rows(idx(L), 0);
    for (int src = 0; src < R; ++src) {
      wait_for(slot(kPlanSeq, src), s, src, "dispatch layout exchange");
      for (int le = 0; le < L; ++le) rows[idx(le)] += load(plan_count(src, le));
    }
    barrier_op();  // everyone has read its counts before the slots are reused
    return rows;
  }

  // A dispatch row: payload, scales, then meta (token id, top-k ids, top-k weights).
  void write_row(std::byte* dst, const Routing& rt, const Tokens& x, std::int64_t t) const {
    std::memcpy(dst, x.data.data() + idx(t * P), idx(P));
    if (S) std::memcpy(dst + P, x.scales.data() + idx(t * kb), idx(S));
    const auto tt = static_cast<std::int32_t>(t);
    std::byte* m = dst + P + S;
    std::memcpy(m, &tt, 4);
    std::memcpy(m + 4, rt.ids.data() + idx(t * rt.topk), idx(4 * rt.topk));
    std::memcpy(m + 4 + 4 * rt.topk, rt.weights.data() + idx(t * rt.topk), idx(4 * rt.topk));
  }

  void check_call(const Routing& rt, const Tokens& x) const {
    if (rt.tokens > cfg.max_tokens)
      throw InputError(
          fmt::format("{} tokens exceed the buffers' max_tokens {}", rt.tokens, cfg.max_tokens));
    if (rt.topk != cfg.topk || x.rows != rt.tokens || x.hidden != cfg.hidden ||
        x.dtype != cfg.dtype)
      throw InputError(fmt::format(
          "dispatch: tokens {}x{} {} / top-{} do not match the communicator ({} {} top-{})", x.rows,
          x.hidden, payload_name(x.dtype), rt.topk, cfg.hidden, payload_name(cfg.dtype), cfg.topk));
    validate_routing(rt, cfg.experts);
  }

  void dispatch_normal(const Routing& rt, const Tokens& x, ExpertRows out, DispatchState* st,
                       OpTiming& tm) {
    const auto t0 = Clock::now();
    const std::int64_t s = ++seq_d;
    const std::int64_t T = cfg.max_tokens, K = rt.topk;
    const Layout lay = make_layout(rt, cfg.experts, R);
    st->mode = Mode::normal;
    st->routing = &rt;
    st->tokens = rt.tokens;
    st->ranks = R;
    st->sent.assign(idx(R), {});
    st->pos.assign(idx(rt.tokens * R), -1);
    for (std::int64_t t = 0; t < rt.tokens; ++t)
      for (int r = 0; r < R; ++r)
        if (lay.goes_to(t, r)) {
          st->pos[idx(t * R + r)] = static_cast<std::int32_t>(st->sent[idx(r)].size());
          st->sent[idx(r)].push_back(static_cast<std::int32_t>(t));
        }
    // 1. Each token once to each other rank hosting one of its experts, into region D [me].
    for (int k = 1; k < R; ++k) {
      const int dest = (me + k) % R;  // staggered, so not everyone writes to rank 0 first
      wait_for(slot(kDFree, dest), s - 1, dest, "dispatch: receiver releasing its buffer");
      const auto& list = st->sent[idx(dest)];
      const std::size_t off = off_d + idx(me * T * stride_d);
      const std::size_t n = list.size() * idx(stride_d);
      std::byte* dst = target(dest, off, n);
      for (std::size_t i = 0; i < list.size(); ++i)
        write_row(dst + i * idx(stride_d), rt, x, list[i]);
      commit(dest, off, n);
      store(dest, slot(kDCount, me), static_cast<std::int64_t>(list.size()));
      store(dest, slot(kDData, me), s);
      tm.bytes_out += static_cast<double>(list.size()) * static_cast<double>(P + S + meta);
    }
    std::vector<std::int64_t> n_from(idx(R));
    for (int src = 0; src < R; ++src) {
      if (src == me) {
        n_from[idx(src)] = static_cast<std::int64_t>(st->sent[idx(me)].size());
        continue;
      }
      wait_for(slot(kDData, src), s, src, "dispatch: waiting for tokens");
      n_from[idx(src)] = load(slot(kDCount, src));
    }
    sync_local();
    tm.transfer_s = since(t0);
    const auto t1 = Clock::now();
    // 2. Expand into the contiguous layout: rows grouped by local expert, groups aligned.
    struct Src {
      const std::byte* payload;
      const float* scales;
      const std::int32_t* ids;
      const float* w;
    };
    auto source = [&](int src, std::int64_t i) -> Src {
      if (src == me) {
        const std::int64_t t = st->sent[idx(me)][idx(i)];
        return {reinterpret_cast<const std::byte*>(x.data.data()) + t * P,
                S ? x.scales.data() + t * kb : nullptr, rt.ids.data() + t * K,
                rt.weights.data() + t * K};
      }
      const std::byte* row = base + off_d + idx((src * T + i) * stride_d);
      return {row, reinterpret_cast<const float*>(row + P),
              reinterpret_cast<const std::int32_t*>(row + P + S + 4),
              reinterpret_cast<const float*>(row + P + S + 4 + 4 * K)};
    };
    const int first = me * L;
    std::vector<std::int64_t> per_expert(idx(L), 0);
    std::int64_t recv_total = 0;
    for (int src = 0; src < R; ++src) {
      recv_total += n_from[idx(src)];
      for (std::int64_t i = 0; i < n_from[idx(src)]; ++i) {
        const Src sr = source(src, i);
        for (std::int64_t k = 0; k < K; ++k)
          if (sr.ids[k] >= first && sr.ids[k] < first + L) ++per_expert[idx(sr.ids[k] - first)];
      }
    }
    out.offsets[0] = 0;
    for (int le = 0; le < L; ++le)
      out.offsets[le + 1] =
          static_cast<std::int32_t>(out.offsets[le] + align_up(per_expert[idx(le)], cfg.align));
    if (out.offsets[L] > out.capacity)
      throw std::runtime_error(
          fmt::format("dispatch: {} expert rows needed on rank {}, capacity {} (size from plan())",
                      out.offsets[L], me, out.capacity));
    st->rows = out;
    st->origin.assign(idx(out.offsets[L]), RowOrigin{});
    st->row_weight.assign(idx(out.offsets[L]), 0.0f);
    st->recv_begin.assign(idx(R + 1), 0);
    st->tok_rows_ptr.assign(idx(recv_total + 1), 0);
    st->tok_rows.clear();
    st->tok_rows.reserve(idx(recv_total * std::min<std::int64_t>(K, L)));
    std::vector<std::int64_t> cursor(out.offsets, out.offsets + L);
    std::int64_t tok = 0;
    for (int src = 0; src < R; ++src) {
      st->recv_begin[idx(src)] = tok;
      for (std::int64_t i = 0; i < n_from[idx(src)]; ++i, ++tok) {
        const Src sr = source(src, i);
        for (std::int64_t k = 0; k < K; ++k) {
          const int e = sr.ids[k];
          if (e < first || e >= first + L) continue;
          const std::int64_t row = cursor[idx(e - first)]++;
          std::memcpy(out.data + row * P, sr.payload, idx(P));
          if (S) std::memcpy(out.scales + row * kb, sr.scales, idx(S));
          st->origin[idx(row)] = {src, static_cast<std::int32_t>(i), static_cast<std::int32_t>(k)};
          st->row_weight[idx(row)] = sr.w[k];
          st->tok_rows.push_back(static_cast<std::int32_t>(row));
        }
        st->tok_rows_ptr[idx(tok + 1)] = static_cast<std::int64_t>(st->tok_rows.size());
      }
    }
    st->recv_begin[idx(R)] = tok;
    st->recv_tokens = n_from;
    for (int src = 0; src < R; ++src)
      if (src != me) store(src, slot(kDFree, me), s);
    tm.local_s = since(t1);
  }

  // Normal combine, DeepEP's decomposition: (1) each received token's local expert outputs,
  // weighted and summed into one partial row (local work); (2) the partials go back to their
  // source rank, once per (token, rank) (the transfer); (3) the source sums its partials.
  void combine_normal(const DispatchState& st, const std::uint16_t* y, std::uint16_t* out,
                      OpTiming& tm) {
    const auto t0 = Clock::now();
    const std::int64_t c = ++seq_c;
    const std::int64_t T = cfg.max_tokens, H = cfg.hidden;
    const auto& ops = detail::row_ops();
    std::vector<const std::uint16_t*> rows;
    std::vector<float> wts;
    partial.resize(idx(T * H));
    double local = 0;
    for (int k = 0; k < R; ++k) {
      const int dest = (me + R - k) % R;  // my own tokens first, then the others staggered
      const auto tr = Clock::now();
      const std::int64_t n = st.recv_tokens[idx(dest)];
      const std::size_t off = off_c + idx(me * T * H * 2);
      // My own partials go straight to my region C; the others' are staged, then sent.
      auto* dst = dest == me ? reinterpret_cast<std::uint16_t*>(base + off) : partial.data();
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t tok = st.recv_begin[idx(dest)] + i;
        rows.clear();
        wts.clear();
        for (std::int64_t q = st.tok_rows_ptr[idx(tok)]; q < st.tok_rows_ptr[idx(tok + 1)]; ++q) {
          const std::int32_t row = st.tok_rows[idx(q)];
          rows.push_back(y + idx(row * H));
          wts.push_back(st.row_weight[idx(row)]);
        }
        ops.weighted_sum(dst + idx(i * H), rows.data(), wts.data(), static_cast<int>(rows.size()),
                         H);
      }
      local += since(tr);
      if (dest == me) continue;
      wait_for(slot(kCFree, dest), c - 1, dest, "combine: receiver releasing its buffer");
      put(dest, off, partial.data(), idx(n * H * 2));
      store(dest, slot(kCData, me), c);
      tm.bytes_out += static_cast<double>(n * H * 2);
    }
    for (int src = 0; src < R; ++src)
      if (src != me) wait_for(slot(kCData, src), c, src, "combine: waiting for expert outputs");
    sync_local();
    tm.transfer_s = since(t0) - local;
    const auto t1 = Clock::now();
    wts.assign(idx(R), 1.0f);
    for (std::int64_t t = 0; t < st.tokens; ++t) {
      rows.clear();
      for (int r = 0; r < R; ++r) {
        const std::int32_t i = st.pos[idx(t * R + r)];
        if (i < 0) continue;
        rows.push_back(
            reinterpret_cast<const std::uint16_t*>(base + off_c + idx((r * T + i) * H * 2)));
      }
      ops.weighted_sum(out + idx(t * H), rows.data(), wts.data(), static_cast<int>(rows.size()), H);
    }
    for (int src = 0; src < R; ++src)
      if (src != me) store(src, slot(kCFree, me), c);
    tm.local_s = local + since(t1);
  }

  void dispatch_ll(const Routing& rt, const Tokens& x, ExpertRows out, DispatchState* st,
                   OpTiming& tm) {
    const auto t0 = Clock::now();
    const std::int64_t s = ++seq_d;
    const std::int64_t K = rt.topk, cap = R * cfg.max_tokens;
    const std::int64_t stride = stride_d;
    if (out.layout != GroupedLayout::masked || out.capacity != cap || out.local_experts != L)
      throw std::runtime_error(
          fmt::format("low-latency dispatch needs masked rows [{}, {}] (got [{}, {}])", L, cap,
                      out.local_experts, out.capacity));
    st->mode = Mode::low_latency;
    st->routing = &rt;
    st->tokens = rt.tokens;
    st->ranks = R;
    // Rows for each (rank, local expert), in token order.
    std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>> bucket(idx(R * L));
    for (std::int64_t t = 0; t < rt.tokens; ++t)
      for (std::int64_t k = 0; k < K; ++k) {
        const int e = rt.id(t, static_cast<int>(k));
        if (e >= 0)
          bucket[idx(e)].push_back({static_cast<std::int32_t>(t), static_cast<std::int32_t>(k)});
      }
    for (int q = 0; q < R; ++q) {
      const int dest = (me + q) % R;
      if (dest != me)
        wait_for(slot(kDFree, dest), s - 1, dest, "dispatch: receiver releasing its buffer");
      for (int le = 0; le < L; ++le) {
        const auto& b = bucket[idx(dest * L + le)];
        if (b.empty()) continue;
        const auto n = static_cast<std::int64_t>(b.size());
        const std::int64_t at = fetch_add(dest, ll_counter(le), n);  // reserve rows in its buffer
        const std::size_t off = off_d + idx((le * cap + at) * stride);
        std::byte* dst = target(dest, off, idx(n * stride));
        for (std::int64_t j = 0; j < n; ++j) {
          const auto [t, k] = b[idx(j)];
          std::byte* row = dst + j * stride;
          std::memcpy(row, x.data.data() + idx(t * P), idx(P));
          if (S) std::memcpy(row + P, x.scales.data() + idx(t * kb), idx(S));
          const std::int32_t m[3] = {me, t, k};
          std::memcpy(row + P + S, m, sizeof m);
        }
        commit(dest, off, idx(n * stride));
        if (dest != me) tm.bytes_out += static_cast<double>(n * (P + S + 12));
      }
      if (dest != me) store(dest, slot(kDData, me), s);
    }
    for (int src = 0; src < R; ++src)
      if (src != me) wait_for(slot(kDData, src), s, src, "dispatch: waiting for tokens");
    sync_local();
    tm.transfer_s = since(t0);
    const auto t1 = Clock::now();
    // The masked layout: counts per expert, rows copied out of the window.
    st->rows = out;
    st->origin.assign(idx(L * cap), RowOrigin{});
    for (int le = 0; le < L; ++le) {
      const std::int64_t n = load(ll_counter(le));
      out.counts[le] = static_cast<std::int32_t>(n);
      for (std::int64_t j = 0; j < n; ++j) {
        const std::byte* row = base + off_d + idx((le * cap + j) * stride);
        const std::int64_t dst = le * cap + j;
        std::memcpy(out.data + dst * P, row, idx(P));
        if (S) std::memcpy(out.scales + dst * kb, row + P, idx(S));
        std::int32_t m[3];
        std::memcpy(m, row + P + S, sizeof m);
        st->origin[idx(dst)] = {m[0], m[1], m[2]};
      }
      store(me, ll_counter(le), 0);
    }
    for (int src = 0; src < R; ++src)
      if (src != me) store(src, slot(kDFree, me), s);
    tm.local_s = since(t1);
  }

  void combine_ll(const DispatchState& st, const std::uint16_t* y, std::uint16_t* out,
                  OpTiming& tm) {
    const auto t0 = Clock::now();
    const std::int64_t c = ++seq_c;
    const std::int64_t H = cfg.hidden, K = cfg.topk, cap = st.rows.capacity;
    for (int r = 0; r < R; ++r)
      if (r != me) wait_for(slot(kCFree, r), c - 1, r, "combine: receiver releasing its buffer");
    // Each expert output row straight into its token's top-k slot at the source rank.
    for (int le = 0; le < L; ++le)
      for (std::int64_t j = 0; j < st.rows.counts[le]; ++j) {
        const RowOrigin& o = st.origin[idx(le * cap + j)];
        const std::size_t off = off_c + idx((o.token * K + o.slot) * H * 2);
        put(o.rank, off, y + idx((le * cap + j) * H), idx(H * 2));
        if (o.rank != me) tm.bytes_out += static_cast<double>(H * 2);
      }
    for (int r = 0; r < R; ++r)
      if (r != me) store(r, slot(kCData, me), c);
    for (int r = 0; r < R; ++r)
      if (r != me) wait_for(slot(kCData, r), c, r, "combine: waiting for expert outputs");
    sync_local();
    tm.transfer_s = since(t0);
    const auto t1 = Clock::now();
    const Routing& rt = *st.routing;
    const auto& ops = detail::row_ops();
    std::vector<const std::uint16_t*> rows;
    std::vector<float> wts;
    for (std::int64_t t = 0; t < st.tokens; ++t) {
      rows.clear();
      wts.clear();
      for (std::int64_t k = 0; k < K; ++k) {
        if (rt.id(t, static_cast<int>(k)) < 0) continue;
        rows.push_back(
            reinterpret_cast<const std::uint16_t*>(base + off_c + idx((t * K + k) * H * 2)));
        wts.push_back(rt.weight(t, static_cast<int>(k)));
      }
      ops.weighted_sum(out + idx(t * H), rows.data(), wts.data(), static_cast<int>(rows.size()), H);
    }
    for (int r = 0; r < R; ++r)
      if (r != me) store(r, slot(kCFree, me), c);
    tm.local_s = since(t1);
  }
};

ExpertComm::ExpertComm(const CommConfig& cfg) : impl_(std::make_unique<Impl>()) {
  auto& s = *impl_;
  s.cfg = cfg;
  MPI_Comm_rank(MPI_COMM_WORLD, &s.me);
  MPI_Comm_size(MPI_COMM_WORLD, &s.R);
  if (cfg.experts <= 0 || cfg.experts % s.R != 0)
    throw InputError(
        fmt::format("{} experts cannot be split evenly over {} ranks", cfg.experts, s.R));
  if (cfg.topk <= 0 || cfg.topk > cfg.experts || cfg.hidden <= 0 || cfg.max_tokens <= 0 ||
      cfg.align <= 0)
    throw InputError(
        fmt::format("communicator: top-k {}, hidden {}, max tokens {}, align {} out of range",
                    cfg.topk, cfg.hidden, cfg.max_tokens, cfg.align));
  if (!(cfg.timeout_s > 0)) throw InputError("timeout must be positive");
  s.L = cfg.experts / s.R;
  s.P = cfg.hidden * (cfg.dtype == Payload::fp8 ? 1 : 2);
  s.kb = cfg.dtype == Payload::fp8 ? (cfg.hidden + kFp8Block - 1) / kFp8Block : 0;
  s.S = 4 * s.kb;
  const std::int64_t T = cfg.max_tokens, H = cfg.hidden, R = s.R, L = s.L;
  s.meta = cfg.mode == Mode::normal ? 4 + 8 * cfg.topk : 12;
  s.stride_d = align64(s.P + s.S + s.meta);
  s.slots = Impl::kNumPerRank * R + L + R * L;
  s.off_d = idx(align_up(s.slots * 64, 4096));
  const std::int64_t d_rows = cfg.mode == Mode::normal ? R * T : L * R * T;
  s.off_c = s.off_d + idx(align_up(d_rows * s.stride_d, 4096));
  const std::int64_t c_bytes = (cfg.mode == Mode::normal ? R * T : T * cfg.topk) * H * 2;
  s.bytes = s.off_c + idx(c_bytes);

  // One node: a shared-memory window; otherwise (or when asked) one-sided puts.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, s.me, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  s.transport = cfg.transport;
  if (s.transport == Transport::automatic)
    s.transport = node_size == s.R ? Transport::shm : Transport::rma;
  if (s.transport == Transport::shm && node_size != s.R) {
    MPI_Comm_free(&node);
    throw InputError("transport shm needs every rank on one node; use --transport rma");
  }
  MPI_Comm_free(&node);
  int rc;
  if (s.transport == Transport::shm) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(s.bytes), 1, info, MPI_COMM_WORLD, &s.base,
                                 &s.win);
    MPI_Info_free(&info);
    check_mpi(rc, "MPI_Win_allocate_shared");
    s.peer.resize(idx(R));
    for (int r = 0; r < s.R; ++r) {
      MPI_Aint sz = 0;
      int disp = 0;
      check_mpi(MPI_Win_shared_query(s.win, r, &sz, &disp, &s.peer[idx(r)]),
                "MPI_Win_shared_query");
    }
  } else {
    check_mpi(MPI_Win_allocate(static_cast<MPI_Aint>(s.bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                               &s.base, &s.win),
              "MPI_Win_allocate");
  }
  MPI_Win_set_errhandler(s.win, MPI_ERRORS_RETURN);
  std::memset(s.base, 0, idx(align_up(s.slots * 64, 4096)));
  // Touch the buffers so the first timed transfer does not pay for page faults.
  std::memset(s.base + s.off_d, 0, s.bytes - s.off_d);
  check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, s.win), "MPI_Win_lock_all");
  MPI_Win_sync(s.win);
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  s.worker = std::thread([&s] { s.loop(); });
}

ExpertComm::~ExpertComm() {
  auto& s = *impl_;
  {
    std::lock_guard lk(s.qmu);
    s.stopping = true;
  }
  s.qcv.notify_all();
  if (s.worker.joinable()) s.worker.join();
  if (s.broken) return;  // a peer is gone: freeing the window (collective) would hang
  MPI_Win_unlock_all(s.win);
  MPI_Win_free(&s.win);
}

int ExpertComm::rank() const {
  return impl_->me;
}
int ExpertComm::ranks() const {
  return impl_->R;
}
int ExpertComm::local_experts() const {
  return impl_->L;
}
Transport ExpertComm::transport() const {
  return impl_->transport;
}
const CommConfig& ExpertComm::config() const {
  return impl_->cfg;
}
std::size_t ExpertComm::buffer_bytes() const {
  return impl_->bytes;
}
std::int64_t ExpertComm::ll_capacity() const {
  return impl_->R * impl_->cfg.max_tokens;
}

std::vector<std::int64_t> ExpertComm::plan(const Routing& r) {
  if (impl_->cfg.mode != Mode::normal) throw std::logic_error("plan() is for normal mode");
  impl_->check_call(r, Tokens{impl_->cfg.dtype, r.tokens, impl_->cfg.hidden, {}, {}});
  std::vector<std::int64_t> rows;
  impl_->submit([&](OpTiming&) { rows = impl_->plan_op(r); }).wait();
  return rows;
}

void ExpertComm::barrier() {
  impl_->submit([this](OpTiming&) { impl_->barrier_op(); }).wait();
}

Handle ExpertComm::dispatch(const Routing& r, const Tokens& x, ExpertRows out, DispatchState* st) {
  impl_->check_call(r, x);
  if (impl_->cfg.mode == Mode::normal)
    return impl_->submit(
        [this, &r, &x, out, st](OpTiming& t) { impl_->dispatch_normal(r, x, out, st, t); });
  return impl_->submit(
      [this, &r, &x, out, st](OpTiming& t) { impl_->dispatch_ll(r, x, out, st, t); });
}

Handle ExpertComm::combine(const DispatchState& st, const std::uint16_t* y, std::uint16_t* out) {
  if (impl_->cfg.mode == Mode::normal)
    return impl_->submit(
        [this, &st, y, out](OpTiming& t) { impl_->combine_normal(st, y, out, t); });
  return impl_->submit([this, &st, y, out](OpTiming& t) { impl_->combine_ll(st, y, out, t); });
}

}  // namespace attain::moe
