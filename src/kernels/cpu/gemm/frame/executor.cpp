// The executor: a call (or run_together's calls) as Problems, their blocks shared out to the
// thread pool in one parallel region, each block claimed once from a shared counter. Each path's
// work goes through its PathImpl (paths/path.hpp).
#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "attain/threadpool.hpp"
#include "kernels/cpu/gemm/frame/frame.hpp"
#include "kernels/cpu/gemm/paths/path.hpp"

namespace attain::gemm {

namespace detail {

const PathImpl& path_impl(Path p) {
  switch (p) {
    case Path::decode:
      return kDecodePath;
    case Path::direct:
      return kDirectPath;
    case Path::packed:
    case Path::automatic:
      break;
  }
  return kPackedPath;
}

std::string path_refusal(const Params& p, const Schedule& s, const KernelFamily& f) {
  if (s.path == Path::automatic && !s.swap) return "";
  return path_impl(s.path == Path::automatic ? Path::direct : s.path).accepts(p, f, s.swap);
}

namespace {

std::atomic<void (*)(const Block&)> g_block_observer{nullptr};

}  // namespace

void set_block_observer(void (*observer)(const Block& b)) {
  g_block_observer.store(observer, std::memory_order_relaxed);
}

namespace {

// A spin-wait hint for the core (x86 `pause`), nothing elsewhere.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Below these single-thread times a job runs on the caller alone: waking a sleeping worker costs
// 50-150 us on a VM (a futex wake, and a worker put to sleep by an LLC flush); a spinning worker
// joins in about a microsecond.
constexpr double kMinParallelNsSleeping = 300e3, kMinParallelNsSpinning = 4e3;
// ...and a job that ran alone because the workers slept wakes them after it only from this
// single-thread time: the wake itself costs the caller 5-12 us, and 36-50 us once an LLC's worth of
// other data has evicted the kernel's (cold 8 x 8 x 4096 fp32, 10 us of work, ran 98 us at 2
// threads against 40 at one).
constexpr double kMinWakeNs = 30e3;

// The threads of a region: `work_ns` >= 0: the thread count was not fixed by the schedule, so a
// job (or a sequence of jobs of this total rough time) too small to pay for waking the workers
// runs on the caller.
int region_threads(int threads, double work_ns) {
  if (work_ns >= 0 && threads > 1) {
    const bool asleep = ThreadPool::instance().sleeping() > 0;
    if (work_ns < (asleep ? kMinParallelNsSleeping : kMinParallelNsSpinning)) return 1;
  }
  return threads;
}

// Runs the blocks in one parallel region of at most `threads` threads, each block claimed once from
// a shared counter: block t goes to the t-th thread to arrive (with as many blocks as threads, the
// engine's thread grid), more blocks are taken largest first. A worker that is slow to wake finds
// its block already done by the caller instead of holding it up. The direct path's A^T pieces run
// first, in the same region: tasks are claimed in order from one counter, so once a thread claims a
// block every piece has been claimed by a thread running it (a piece never waits), and the block
// waits only for them to finish - one fork/join per call instead of two, which a batch of small
// products would otherwise pay per item.
void execute(std::vector<Block>& blocks, const std::vector<Pack>& packs, int threads) {
  if (blocks.empty() && packs.empty()) return;
  // Largest first; equal costs in the order add_blocks made them (problem, then rows, columns,
  // slice). Not std::stable_sort: its temporary buffer was a heap allocation per fused call.
  if (blocks.size() > static_cast<std::size_t>(std::max(1, threads)))
    std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) {
      if (a.cost != b.cost) return a.cost > b.cost;
      return std::tie(a.pr, a.m0, a.n0, a.slice) < std::tie(b.pr, b.m0, b.n0, b.slice);
    });
  const auto np = static_cast<std::int64_t>(packs.size());
  std::atomic<std::int64_t> packed{0};
  struct Count {  // counted even if the piece throws, so no block waits forever
    std::atomic<std::int64_t>& n;
    ~Count() { n.fetch_add(1, std::memory_order_release); }
  };
  auto task = [&](std::int64_t i) {
    if (i < np) {
      const Count done{packed};
      const Pack& a = packs[static_cast<std::size_t>(i)];
      return a.run(a);
    }
    while (packed.load(std::memory_order_acquire) < np) spin_pause();
    const Block& b = blocks[static_cast<std::size_t>(i - np)];
    if (auto* observe = g_block_observer.load(std::memory_order_relaxed)) observe(b);
    path_impl(b.pr->s.path).run_block(b);
  };
  ThreadPool::instance().run_tasks(threads, np + static_cast<std::int64_t>(blocks.size()), task);
}

struct Batch {
  std::vector<Params> params;
  // Schedule::swap: the swapped operands problems point into (reserved for every problem of the
  // execution before the first is made, so it never reallocates; grow-only like the rest).
  std::vector<Params> swapped;
  std::vector<Problem> problems;
  std::vector<Block> blocks;
  std::vector<Pack> packs;
  std::vector<std::size_t> counts;  // items per call
  Buffer a32, partial;
};
Batch& batch_scratch() {
  thread_local Batch b;
  return b;
}

// The problem of p under its resolved schedule s: with s.swap, of p's operands swapped (kept
// in bt.swapped, reserved by the caller), unless A and B are not read (K = 0, alpha = 0:
// C = beta * C as the caller's problem).
Problem problem_of(Batch& bt, const Params& p, const Schedule& s) {
  if (!s.swap || !reads_operands(p)) {
    Schedule t = s;
    t.swap = false;
    return make_problem(p, t);
  }
  if (bt.swapped.size() == bt.swapped.capacity())
    throw std::logic_error("gemm: swapped operands not reserved");  // would move the others
  bt.swapped.push_back(swapped(p));
  Problem pr = make_problem(bt.swapped.back(), s);
  pr.ct = true;
  return pr;
}

// The region's scratch for every problem that reads A and B: each path's converted operands, and
// the split-K partial sums.
void reserve_scratch(Batch& bt, int threads) {
  std::int64_t conv = 0, part = 0;
  for (Problem& pr : bt.problems) {
    const Params& p = *pr.p;
    if (!reads_operands(p)) continue;
    pr.scratch = path_impl(pr.s.path).scratch_floats(pr);
    conv += pr.scratch;
    if (pr.slices > 1) part += round_up(pr.slices * p.m * p.n, 16);
  }
  float* conv_buf = conv > 0 ? bt.a32.get(conv) : nullptr;
  float* part_buf = part > 0 ? bt.partial.get(part) : nullptr;
  bt.blocks.clear();
  bt.packs.clear();
  for (Problem& pr : bt.problems) {
    const Params& p = *pr.p;
    if (!reads_operands(p)) {  // C = beta * C: A and B are not read
      scale_c(pr);
      continue;
    }
    const PathImpl& path = path_impl(pr.s.path);
    path.prepare(pr, conv_buf, threads, bt.packs);
    conv_buf += pr.scratch;
    if (pr.slices > 1) {
      pr.partial = part_buf;
      part_buf += round_up(pr.slices * p.m * p.n, 16);
    }
    path.plan(pr, bt.blocks);
  }
}

// Runs every problem of the batch (already resolved) in one region: the paths' work on A first
// (converted A, A^T), then the blocks; sums the split-K partials.
// `seq_ns` >= 0: the threads are the engine's choice (see execute), for a job that is part of
// a sequence of this total rough time (0: the job alone); < 0: the schedule fixed them.
void execute_problems(Batch& bt, int threads, double seq_ns) {
  reserve_scratch(bt, threads);
  double work_ns = seq_ns;  // the job's own rough time, or its sequence's when larger
  if (seq_ns >= 0) {
    double own = 0;
    for (const Problem& pr : bt.problems) own += rough_ns(pr.p->b_type, pr.p->m, pr.p->n, pr.p->k);
    work_ns = std::max(seq_ns, own);
  }
  const int wanted = threads;
  threads = region_threads(threads, work_ns);
  execute(bt.blocks, bt.packs, threads);
  for (const Problem& pr : bt.problems)
    if (pr.slices > 1 && reads_operands(*pr.p)) finish_split(pr);
  // Ran alone because the workers slept: wake them now, after the work, so that the jobs that
  // follow find them waiting. Otherwise a run of small jobs after a pause (or after a benchmark
  // rested the pool) stayed on one thread to its end, each job finding the workers asleep. A job
  // (or sequence) under kMinWakeNs leaves them asleep: the wake would cost it more than the
  // second thread saves it. (Alone while worth two threads: the workers slept when
  // region_threads looked; wake() checks again.)
  if (threads < wanted && work_ns >= kMinWakeNs) ThreadPool::instance().wake();
}

// One call in one region; `seq_ns`: as execute_problems (the rough time of the sequence of
// calls it belongs to); `call_c_bytes`: the C its call writes in all (streams_c).
void gemm_in(const Params& p, double seq_ns, std::int64_t call_c_bytes) {
  check_params(p, false);
  if (p.m == 0 || p.n == 0) return;
  Batch& bt = batch_scratch();
  // A nested call (from inside a region) must not clobber the caller's scratch.
  Batch local;
  Batch& use = bt.problems.empty() ? bt : local;
  use.problems.clear();
  use.swapped.clear();
  use.swapped.reserve(1);
  use.problems.push_back(problem_of(use, p, resolve(p)));
  use.problems.back().stream_c = streams_c(call_c_bytes);
  execute_problems(use, use.problems.front().s.threads, p.schedule.threads == 0 ? seq_ns : -1.0);
  use.problems.clear();
}

}  // namespace

std::int64_t& stream_c_min_bytes() {
  static std::int64_t bytes = 2 * std::max<std::int64_t>(cpu_info().l3_bytes, 8 << 20);
  return bytes;
}
bool streams_c(std::int64_t c_bytes) {
  return c_bytes >= stream_c_min_bytes();
}
std::int64_t c_bytes(std::span<const Params> items) {
  std::int64_t bytes = 0;
  for (const Params& p : items)
    bytes += p.m * p.n * static_cast<std::int64_t>(dtype_size(p.c_type));
  return bytes;
}

}  // namespace detail

void gemm(const Params& p) {
  detail::gemm_in(p, 0.0, detail::c_bytes({&p, 1}));
}

void run(const Call& c) {
  detail::check_call(c);
  if (c.form == Form::single) return gemm(c.p);
  thread_local std::vector<Params> items;
  items.clear();
  if (c.p.schedule.fuse_items != Fuse::on) detail::expand_items(c, items);
  if (c.p.schedule.fuse_items == Fuse::off ||
      (c.p.schedule.fuse_items == Fuse::automatic &&
       !detail::fuse_pays(items, detail::call_threads(c)))) {
    // One region per item, each with all threads.
    double seq_ns = 0;  // the items follow each other: worth waking the workers for all
    for (const Params& q : items) seq_ns += detail::rough_ns(q.b_type, q.m, q.n, q.k);
    const std::int64_t call_c = detail::c_bytes(items);
    for (const Params& q : items) detail::gemm_in(q, seq_ns, call_c);
    return;
  }
  run_together(&c, 1, detail::call_threads(c));
}

void run_together(const Call* calls, std::size_t count, int threads) {
  if (threads < 1) throw std::invalid_argument("gemm: threads < 1");
  detail::Batch local;
  detail::Batch& scratch = detail::batch_scratch();
  detail::Batch& bt = scratch.problems.empty() ? scratch : local;
  bt.params.clear();
  bt.problems.clear();
  bt.swapped.clear();
  bt.counts.clear();
  for (std::size_t i = 0; i < count; ++i) {
    detail::check_call(calls[i]);
    const std::size_t first = bt.params.size();
    detail::expand_items(calls[i], bt.params);
    detail::drop_empty(bt.params, first);
    bt.counts.push_back(bt.params.size() - first);
  }
  // Problems point into bt.params, complete by now. An item without a grid of its own gets
  // its share of the region's threads as blocks.
  bt.problems.reserve(bt.params.size());
  bt.swapped.reserve(bt.params.size());
  std::size_t j = 0;
  for (const std::size_t items : bt.counts) {
    const int share = static_cast<int>(std::max<std::int64_t>(
        1, threads / static_cast<std::int64_t>(std::max<std::size_t>(1, items))));
    const bool stream = detail::streams_c(detail::c_bytes({bt.params.data() + j, items}));
    for (std::size_t e = j + items; j < e; ++j) {
      detail::check_params(bt.params[j], true);
      bt.problems.push_back(
          detail::problem_of(bt, bt.params[j], detail::resolve_with(bt.params[j], share)));
      bt.problems.back().stream_c = stream;
    }
  }
  bool adaptive = true;  // no call fixed its thread count
  for (std::size_t i = 0; i < count; ++i) adaptive = adaptive && calls[i].p.schedule.threads == 0;
  detail::execute_problems(bt, threads, adaptive ? 0.0 : -1.0);
  bt.problems.clear();
  bt.params.clear();
}

void batched_gemm(const Params& p, std::int64_t batch, const BatchStrides& s) {
  Call c;
  c.p = p;
  c.form = Form::batched;
  c.items = batch;
  c.strides = s;
  run(c);
}

void grouped_gemm_contiguous(const Params& p, std::int64_t groups, const std::int32_t* offsets) {
  Call c;
  c.p = p;
  c.form = Form::grouped_contiguous;
  c.items = groups;
  c.index = offsets;
  run(c);
}

void grouped_gemm_masked(const Params& p, std::int64_t groups, const std::int32_t* counts) {
  Call c;
  c.p = p;
  c.form = Form::grouped_masked;
  c.items = groups;
  c.index = counts;
  run(c);
}

}  // namespace attain::gemm
