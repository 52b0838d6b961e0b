// A persistent thread pool: workers are created once and wait (spinning briefly, then
// sleeping) for the next job, so a call costs a few atomics, not a thread spawn.
#pragma once

#include <cstdint>
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

  // Runs task(i) for every i in [0, ntasks) on at most nthreads threads (the caller is one),
  // each task claimed once from a shared counter in index order. Returns when every task is
  // done, without waiting for a worker that took none: a worker that wakes late (a sleeping
  // thread can take ~100 us to wake on a VM) finds the tasks gone and the caller has done
  // them, so a small job never costs more than running it alone. ntasks < 2^20.
  void run_tasks(int nthreads, std::int64_t ntasks, const std::function<void(std::int64_t)>& task);
  int workers() const;
  // Workers blocked in their sleep (not spinning): waking one costs tens of microseconds on a
  // VM, more than a small job is worth.
  int sleeping() const;
  // Idle workers go to sleep now rather than waiting for a next job (a benchmark calls it
  // before it times another library, so that no attain thread competes for the cores).
  void rest();  // threads created so far (excluding callers)
  // Ends the workers' sleep without giving them a job: they wait (polling) for the next one
  // again. For a caller that ran a small job alone rather than pay a wake-up inside it, so that
  // the jobs that follow find the workers awake instead of running alone in turn.
  void wake();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool();

 private:
  ThreadPool();
  struct Impl;
  Impl* impl_;
};

}  // namespace attain
