#include "attain/threadpool.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
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
// How long an idle worker spins before it sleeps: long enough to catch the next call of a
// sequence of small ops, short enough not to steal a core from other work for long.
constexpr auto kSpin = std::chrono::microseconds(200);
thread_local bool t_inside_pool = false;
}  // namespace

struct ThreadPool::Impl {
  std::mutex call_mutex;  // one job at a time
  std::mutex grow_mutex;
  std::vector<std::thread> threads;
  std::atomic<std::uint64_t> generation{0};
  std::atomic<int> done{0};
  std::atomic<bool> stop{false};
  std::atomic<int> sleepers{0};  // workers blocked in wait(): only then is a notify needed
  // The current job (published by the release store of `generation`).
  const std::function<void(int, int)>* fn = nullptr;
  int nthreads = 1;
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
        ATTAIN_PAUSE();
        if ((i & 255) == 255 && std::chrono::steady_clock::now() - t0 > kSpin) {
          sleepers.fetch_add(1);
          generation.wait(seen);
          sleepers.fetch_sub(1);
          t0 = std::chrono::steady_clock::now();
        }
      }
      if (stop.load(std::memory_order_relaxed)) return;
      seen = g;
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

void ThreadPool::run(int nthreads, const std::function<void(int, int)>& fn) {
  if (nthreads <= 1 || t_inside_pool) {
    for (int t = 0; t < std::max(1, nthreads); ++t) fn(t, std::max(1, nthreads));
    return;
  }
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.call_mutex);
  s.grow(nthreads - 1);
  s.fn = &fn;
  s.nthreads = nthreads;
  s.error = nullptr;
  s.done.store(0, std::memory_order_relaxed);
  s.generation.fetch_add(1);
  if (s.sleepers.load() > 0) s.generation.notify_all();
  t_inside_pool = true;
  try {
    fn(0, nthreads);
  } catch (...) {
    s.record(std::current_exception());
  }
  t_inside_pool = false;
  const int others = nthreads - 1;
  for (int i = 0; s.done.load(std::memory_order_acquire) < others; ++i) {
    if (i < 4096) {
      ATTAIN_PAUSE();
    } else {
      std::this_thread::yield();
    }
  }
  if (s.error) std::rethrow_exception(s.error);
}

}  // namespace attain
