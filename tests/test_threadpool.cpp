// The persistent pool: every tid runs exactly once per call, the caller is tid 0, workers are
// reused across calls (no spawn per call), nesting runs serially, exceptions reach the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "attain/threadpool.hpp"

namespace attain {
namespace {

TEST(ThreadPool, EveryTidOnceCallerIsZero) {
  auto& pool = ThreadPool::instance();
  for (int n : {1, 2, 3, 5}) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    std::atomic<bool> caller_was_zero{false};
    const auto me = std::this_thread::get_id();
    pool.run(n, [&](int tid, int nt) {
      EXPECT_EQ(nt, n);
      hits[static_cast<std::size_t>(tid)]++;
      if (tid == 0) caller_was_zero = std::this_thread::get_id() == me;
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    EXPECT_TRUE(caller_was_zero.load());
  }
}

TEST(ThreadPool, WorkersPersistAcrossManyCalls) {
  auto& pool = ThreadPool::instance();
  pool.run(3, [](int, int) {});
  const int workers = pool.workers();
  EXPECT_GE(workers, 2);
  std::atomic<long> sum{0};
  for (int i = 0; i < 20000; ++i) pool.run(2, [&](int tid, int) { sum += tid + 1; });
  EXPECT_EQ(sum.load(), 20000L * 3);
  EXPECT_EQ(pool.workers(), workers);  // no thread created per call
}

TEST(ThreadPool, NestedCallsRunSerially) {
  std::atomic<int> inner{0};
  ThreadPool::instance().run(2, [&](int, int) {
    ThreadPool::instance().run(3, [&](int, int nt) {
      EXPECT_EQ(nt, 3);
      inner++;
    });
  });
  EXPECT_EQ(inner.load(), 6);
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  EXPECT_THROW(ThreadPool::instance().run(2,
                                          [](int tid, int) {
                                            if (tid == 1) throw std::runtime_error("worker failed");
                                          }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int> n{0};
  ThreadPool::instance().run(2, [&](int, int) { n++; });
  EXPECT_EQ(n.load(), 2);
}

TEST(ThreadPool, WakesSleepingWorkers) {
  std::atomic<int> n{0};
  ThreadPool::instance().run(2, [&](int, int) { n++; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin: workers sleep
  ThreadPool::instance().run(2, [&](int, int) { n++; });
  EXPECT_EQ(n.load(), 4);
}

}  // namespace
}  // namespace attain
