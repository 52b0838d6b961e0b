// A persistent thread pool: workers are created once and wait (spinning briefly, then
// sleeping) for the next job, so a call costs a few atomics, not a thread spawn.
#pragma once

#include <functional>

namespace attain {

class ThreadPool {
 public:
  // The process-wide pool, grown on demand up to the requested thread count.
  static ThreadPool& instance();

  // Runs fn(tid, nthreads) for tid in [0, nthreads); the caller runs tid 0 and returns when
  // all are done. Nested calls (from inside fn) run serially on the calling thread.
  // Exceptions thrown by fn are rethrown in the caller (the first one).
  void run(int nthreads, const std::function<void(int tid, int nthreads)>& fn);

  int workers() const;  // threads created so far (excluding callers)

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool();

 private:
  ThreadPool();
  struct Impl;
  Impl* impl_;
};

}  // namespace attain
