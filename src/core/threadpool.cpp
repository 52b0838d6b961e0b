#include "attain/threadpool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATTAIN_PAUSE() _mm_pause()
#else
#define ATTAIN_PAUSE() ((void)0)
#endif

namespace attain {

namespace {
// How long an idle worker waits for the next job before it sleeps: it spins (pause) for
// kSpin, then keeps polling but yields its core to any other runnable thread until kYield,
// then sleeps. Waking a sleeping worker costs 50-150 us on a VM (an IPI to a halted vCPU),
// more than many ops take, so the wait spans the gaps of real op sequences (and a benchmark's
// LLC flush, ~3-5 ms); vendor runtimes wait longer (Intel OpenMP: 200 ms, OpenBLAS: ~2^28
// cycles). Yielding keeps the poll from slowing other work on the core.
constexpr auto kSpin = std::chrono::microseconds(200);
constexpr auto kYield = std::chrono::milliseconds(20);
thread_local bool t_inside_pool = false;

// The generation word names the current job: [counter | threads 16 | task job 1]. A worker
// reads everything it needs to decide whether it takes part from that one word (a field
// written beside it could already belong to the next job: a worker that does not take part
// is not waited for).
constexpr int kCounterShift = 17;
std::uint64_t next_generation(std::uint64_t cur, bool tasks, int threads) {
  return (((cur >> kCounterShift) + 1) << kCounterShift) |
         (static_cast<std::uint64_t>(threads & 0xffff) << 1) | (tasks ? 1 : 0);
}
int generation_threads(std::uint64_t g) {
  return static_cast<int>((g >> 1) & 0xffff);
}

// A task job's claim word: [tag 16 | threads 8 | ntasks 20 | next 20]. The tag is the job's
// generation counter, so a worker that woke for an older job can never claim in a newer one;
// a claim is one compare-and-swap on the whole word.
constexpr int kNextBits = 20, kTasksBits = 20, kThreadsBits = 8;
constexpr std::uint64_t kFieldMask = (1u << kNextBits) - 1;
std::uint64_t claim_word(std::uint64_t tag, int threads, std::int64_t ntasks) {
  return ((tag & 0xffff) << (kNextBits + kTasksBits + kThreadsBits)) |
         (static_cast<std::uint64_t>(threads) << (kNextBits + kTasksBits)) |
         (static_cast<std::uint64_t>(ntasks) << kNextBits);
}
}  // namespace

struct ThreadPool::Impl {
  std::mutex call_mutex;  // one job at a time
  std::mutex grow_mutex;
  std::vector<std::thread> threads;
  std::atomic<std::uint64_t> generation{0};
  std::atomic<int> done{0};
  std::atomic<bool> stop{false};
  std::atomic<int> sleepers{0};
  std::atomic<bool> resting{false};  // rest(): idle workers sleep now instead of waiting  //
                                     // workers blocked in wait(): only then is a notify needed
  // The current job (published by the release store of `generation`). Generation bit 0 set:
  // a task job (run_tasks), whose tasks are claimed through `claim`.
  const FunctionRef<void(int, int)>* fn = nullptr;
  std::atomic<std::uint64_t> claim{0};
  std::atomic<std::int64_t> tasks_done{0};
  const FunctionRef<void(std::int64_t, int)>* task_fn = nullptr;
  std::mutex error_mutex;
  std::exception_ptr error;

  void record(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!error) error = e;
  }

  // `seen`: the generation when the thread was created (a job published before the thread
  // first runs must still be picked up).
  void worker(int tid, std::uint64_t seen) {
    t_inside_pool = true;
    for (;;) {
      // Spin, then sleep until the generation moves.
      auto t0 = std::chrono::steady_clock::now();
      std::uint64_t g;
      for (int i = 0;; ++i) {
        g = generation.load(std::memory_order_acquire);
        if (g != seen || stop.load(std::memory_order_relaxed)) break;
        if ((i & 255) != 255) {
          ATTAIN_PAUSE();
          continue;
        }
        const auto waited = std::chrono::steady_clock::now() - t0;
        const bool rest = resting.load(std::memory_order_relaxed);
        if (!rest && waited < kSpin) continue;
        if (!rest && waited < kYield) {
          std::this_thread::yield();
          i = 254;  // poll again right after each yield
          continue;
        }
        sleepers.fetch_add(1);
        generation.wait(seen);
        sleepers.fetch_sub(1);
        t0 = std::chrono::steady_clock::now();
        i = 0;
      }
      if (stop.load(std::memory_order_relaxed)) return;
      seen = g;
      if (g & 1) {
        take_tasks(g >> kCounterShift, tid);
        continue;
      }
      const int nthreads = generation_threads(g);
      if (tid < nthreads) {
        try {
          (*fn)(tid, nthreads);
        } catch (...) {
          record(std::current_exception());
        }
        done.fetch_add(1, std::memory_order_acq_rel);
      }
    }
  }

  // Claims and runs tasks of task job `tag` until none is left (tid: only the job's first
  // `threads` threads take part). The task's code is reached only through a successful claim,
  // and the job cannot end before that task is done, so it is still alive.
  void take_tasks(std::uint64_t tag, int tid) {
    for (;;) {
      std::uint64_t w = claim.load(std::memory_order_acquire);
      if ((w >> (kNextBits + kTasksBits + kThreadsBits)) != (tag & 0xffff)) return;
      const int job_threads = static_cast<int>((w >> (kNextBits + kTasksBits)) & 0xff);
      const std::uint64_t ntasks = (w >> kNextBits) & kFieldMask, next = w & kFieldMask;
      if (tid >= job_threads || next >= ntasks) return;
      if (!claim.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel)) continue;
      try {
        (*task_fn)(static_cast<std::int64_t>(next), tid);
      } catch (...) {
        record(std::current_exception());
      }
      tasks_done.fetch_add(1, std::memory_order_acq_rel);
    }
  }
  // Makes job generation g current and wakes the sleeping workers (only the caller holding
  // call_mutex moves the generation).
  void publish(std::uint64_t g) {
    resting.store(false, std::memory_order_relaxed);
    generation.store(g, std::memory_order_release);
    if (sleepers.load() > 0) generation.notify_all();
  }
  // The caller's wait for its job's counter to reach `target`: spin briefly, then yield.
  template <class T>
  static void await(const std::atomic<T>& counter, T target) {
    for (int i = 0; counter.load(std::memory_order_acquire) < target; ++i) {
      if (i < 4096) {
        ATTAIN_PAUSE();
      } else {
        std::this_thread::yield();
      }
    }
  }
  void grow(int workers) {
    std::lock_guard<std::mutex> lock(grow_mutex);
    while (static_cast<int>(threads.size()) < workers) {
      const int tid = static_cast<int>(threads.size()) + 1;
      const std::uint64_t g = generation.load();
      threads.emplace_back([this, tid, g] { worker(tid, g); });
    }
  }
};

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool;
  return pool;
}

ThreadPool::ThreadPool() : impl_(new Impl) {}

ThreadPool::~ThreadPool() {
  impl_->stop.store(true);
  impl_->generation.fetch_add(1, std::memory_order_release);
  impl_->generation.notify_all();
  for (auto& t : impl_->threads) t.join();
  delete impl_;
}

int ThreadPool::workers() const {
  std::lock_guard<std::mutex> lock(impl_->grow_mutex);
  return static_cast<int>(impl_->threads.size());
}

void ThreadPool::rest() {
  impl_->resting.store(true, std::memory_order_relaxed);
}

void ThreadPool::wake() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.call_mutex);
  // A job for the caller alone: every worker sees the generation move, takes no part (tid >= 1)
  // and waits for the next one.
  if (s.sleepers.load() > 0) s.publish(next_generation(s.generation.load(), false, 1));
}

int ThreadPool::sleeping() const {
  return impl_->sleepers.load(std::memory_order_relaxed);
}

void ThreadPool::run(int nthreads, FunctionRef<void(int, int)> fn) {
  if (nthreads <= 1 || t_inside_pool) {
    for (int t = 0; t < std::max(1, nthreads); ++t) fn(t, std::max(1, nthreads));
    return;
  }
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.call_mutex);
  s.grow(nthreads - 1);
  s.fn = &fn;
  s.error = nullptr;
  s.done.store(0, std::memory_order_relaxed);
  s.publish(next_generation(s.generation.load(), false, nthreads));
  t_inside_pool = true;
  try {
    fn(0, nthreads);
  } catch (...) {
    s.record(std::current_exception());
  }
  t_inside_pool = false;
  Impl::await(s.done, nthreads - 1);
  if (s.error) std::rethrow_exception(s.error);
}

void ThreadPool::run_tasks(int nthreads, std::int64_t ntasks,
                           FunctionRef<void(std::int64_t)> task) {
  run_tasks(nthreads, ntasks, [&](std::int64_t i, int) { task(i); });
}

void ThreadPool::run_tasks(int nthreads, std::int64_t ntasks,
                           FunctionRef<void(std::int64_t, int)> task) {
  if (ntasks <= 0) return;
  if (ntasks >= (std::int64_t{1} << kTasksBits))
    throw std::invalid_argument("ThreadPool::run_tasks: too many tasks");
  nthreads = static_cast<int>(std::min<std::int64_t>({nthreads, ntasks, 255}));
  if (nthreads <= 1 || t_inside_pool) {
    for (std::int64_t i = 0; i < ntasks; ++i) task(i, 0);
    return;
  }
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.call_mutex);
  s.grow(nthreads - 1);
  s.task_fn = &task;
  s.error = nullptr;
  s.tasks_done.store(0, std::memory_order_relaxed);
  // A task job: its tag (the generation counter) goes into the claim word first.
  const std::uint64_t next_g = next_generation(s.generation.load(), true, nthreads);
  s.claim.store(claim_word(next_g >> kCounterShift, nthreads, ntasks), std::memory_order_release);
  s.publish(next_g);
  t_inside_pool = true;
  s.take_tasks(next_g >> kCounterShift, 0);
  t_inside_pool = false;
  Impl::await(s.tasks_done, ntasks);
  if (s.error) std::rethrow_exception(s.error);
}

}  // namespace attain
