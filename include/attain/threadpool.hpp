// A persistent thread pool: workers are created once and wait (spinning briefly, then
// sleeping) for the next job, so a call costs a few atomics, not a thread spawn.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

namespace attain {

// A non-owning reference to a callable (the pool's jobs): an object pointer and a trampoline,
// so passing a lambda neither copies it nor allocates. (std::function did both: a GEMM call's
// task lambda, four captured references, took a heap allocation on every call.) The callable
// must outlive the call it is passed to; a lambda written in the call's arguments does.
template <class Sig>
class FunctionRef;
template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F,
            class = std::enable_if_t<!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
                                     std::is_invocable_r_v<R, F&, Args...>>>
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): lambdas convert implicitly
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, Args... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...);
        }) {}
  R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

class ThreadPool {
 public:
  // The process-wide pool, grown on demand up to the requested thread count.
  static ThreadPool& instance();

  // Runs fn(tid, nthreads) for tid in [0, nthreads); the caller runs tid 0 and returns when
  // all are done. Nested calls (from inside fn) run serially on the calling thread.
  // Exceptions thrown by fn are rethrown in the caller (the first one).
  void run(int nthreads, FunctionRef<void(int tid, int nthreads)> fn);

  // Runs task(i) for every i in [0, ntasks) on at most nthreads threads (the caller is one),
  // each task claimed once from a shared counter in index order. Returns when every task is
  // done, without waiting for a worker that took none: a worker that wakes late (a sleeping
  // thread can take ~100 us to wake on a VM) finds the tasks gone and the caller has done
  // them, so a small job never costs more than running it alone. ntasks < 2^20.
  void run_tasks(int nthreads, std::int64_t ntasks, FunctionRef<void(std::int64_t)> task);
  // The same, with the index in [0, nthreads) of the thread that runs the task (for per-thread
  // scratch).
  void run_tasks(int nthreads, std::int64_t ntasks, FunctionRef<void(std::int64_t, int tid)> task);
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
