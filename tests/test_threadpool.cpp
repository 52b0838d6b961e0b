// The persistent pool: every tid runs exactly once per call, the caller is tid 0, workers are
// reused across calls (no spawn per call), nesting runs serially, exceptions reach the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
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
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // past the wait: workers sleep
  ThreadPool::instance().run(2, [&](int, int) { n++; });
  EXPECT_EQ(n.load(), 4);
}

TEST(ThreadPool, RunTasksRunsEveryTaskOnce) {
  auto& pool = ThreadPool::instance();
  for (int n : {1, 2, 3, 4})
    for (std::int64_t tasks : {0, 1, 2, 3, 7, 64, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(tasks));
      pool.run_tasks(n, tasks, [&](std::int64_t i) { hits[static_cast<std::size_t>(i)]++; });
      for (auto& h : hits) EXPECT_EQ(h.load(), 1) << n << " threads, " << tasks << " tasks";
    }
}

TEST(ThreadPool, RunTasksUsesAtMostTheThreadsAsked) {
  auto& pool = ThreadPool::instance();
  pool.run(4, [](int, int) {});  // at least 3 workers exist
  for (int n : {1, 2, 3}) {
    std::mutex m;
    std::set<std::thread::id> ids;
    pool.run_tasks(n, 200, [&](std::int64_t) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    });
    EXPECT_LE(static_cast<int>(ids.size()), n);
  }
}

// Task jobs and static jobs alternate quickly, with workers late or early: a worker that woke
// for an old job must never run a task of a newer one (each task exactly once, every time).
TEST(ThreadPool, RunTasksAndRunInterleaveWithoutCrossTalk) {
  auto& pool = ThreadPool::instance();
  long expected = 0;
  std::atomic<long> sum{0};
  for (int round = 0; round < 3000; ++round) {
    const std::int64_t tasks = 1 + round % 5;
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(tasks));
    pool.run_tasks(2 + round % 2, tasks, [&](std::int64_t i) {
      hits[static_cast<std::size_t>(i)]++;
      sum += i + 1;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "round " << round;
    expected += tasks * (tasks + 1) / 2;
    if (round % 3 == 0) {
      pool.run(2, [&](int tid, int) { sum += tid; });
      expected += 1;
    }
    if (round % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(sum.load(), expected);
}

TEST(ThreadPool, RunTasksExceptionsReachTheCallerAndNestingIsSerial) {
  auto& pool = ThreadPool::instance();
  EXPECT_THROW(pool.run_tasks(2, 8,
                              [](std::int64_t i) {
                                if (i == 5) throw std::runtime_error("task failed");
                              }),
               std::runtime_error);
  std::atomic<int> inner{0};
  pool.run_tasks(2, 4, [&](std::int64_t) { pool.run_tasks(2, 3, [&](std::int64_t) { inner++; }); });
  EXPECT_EQ(inner.load(), 12);
  EXPECT_THROW(pool.run_tasks(2, std::int64_t{1} << 20, [](std::int64_t) {}),
               std::invalid_argument);
}

// With the workers asleep, a one-task job runs on the caller, which claims first and returns
// when its task is done, without waiting for the woken worker.
TEST(ThreadPool, RunTasksDoesNotWaitForASleepingWorker) {
  auto& pool = ThreadPool::instance();
  pool.run(2, [](int, int) {});
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // past the wait: asleep
  EXPECT_GE(pool.sleeping(), 1);
  const auto me = std::this_thread::get_id();
  std::atomic<int> on_caller{0};
  pool.run_tasks(2, 1, [&](std::int64_t) { on_caller += std::this_thread::get_id() == me; });
  EXPECT_EQ(on_caller.load(), 1);  // a single task: the caller takes it first
}

// Workers that take no part in a small job are not waited for; they must never mistake a
// later job's size for theirs (each tid exactly once per job, jobs of varying size).
TEST(ThreadPool, JobsOfDifferentSizesRunEachTidOnce) {
  auto& pool = ThreadPool::instance();
  pool.run(4, [](int, int) {});
  for (int round = 0; round < 5000; ++round) {
    const int n = 2 + round % 3;
    std::vector<std::atomic<int>> hits(4);
    pool.run(n, [&](int tid, int nt) {
      EXPECT_EQ(nt, n);
      hits[static_cast<std::size_t>(tid)]++;
    });
    for (int t = 0; t < 4; ++t) ASSERT_EQ(hits[static_cast<std::size_t>(t)].load(), t < n ? 1 : 0);
  }
}

TEST(ThreadPool, RestPutsIdleWorkersToSleepAndTheNextJobWakesThem) {
  auto& pool = ThreadPool::instance();
  pool.run(2, [](int, int) {});
  pool.rest();
  for (int i = 0; i < 200 && pool.sleeping() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(pool.sleeping(), 1);  // usually within a millisecond, not after the 20 ms wait
  std::atomic<int> n{0};
  pool.run(2, [&](int, int) { n++; });
  EXPECT_EQ(n.load(), 2);
}

// wake() ends the workers' sleep without a job: none of them runs anything, and all are
// waiting again (not asleep) until the next job, which they take as usual.
TEST(ThreadPool, WakeEndsTheSleepWithoutAJob) {
  auto& pool = ThreadPool::instance();
  std::atomic<int> n{0};
  pool.run(3, [&](int, int) { n++; });
  pool.rest();
  const int workers = pool.workers();  // 2, or more left by other tests
  for (int i = 0; i < 500 && pool.sleeping() < workers; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(pool.sleeping(), workers);
  pool.wake();
  for (int i = 0; i < 500 && pool.sleeping() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(pool.sleeping(), 0);  // within a millisecond or so; they wait 20 ms before sleeping
  EXPECT_EQ(n.load(), 3);         // the earlier job's function did not run again
  pool.wake();                    // nobody asleep: nothing to do
  pool.run(3, [&](int, int) { n++; });
  EXPECT_EQ(n.load(), 6);
}

}  // namespace
}  // namespace attain
