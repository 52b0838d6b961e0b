// A small persistent thread pool for the attention kernels: run(fn) calls fn(tid) on every
// thread (the caller is thread 0) and returns when all are done, rethrowing the first
// exception. (To be replaced by the project-wide pool once it exists.)
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace attain::mla {

class Pool {
 public:
  explicit Pool(int threads) : n_(threads < 1 ? 1 : threads) {
    for (int t = 1; t < n_; ++t) workers_.emplace_back([this, t] { loop(t); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  int size() const { return n_; }

  void run(const std::function<void(int)>& fn) {
    if (n_ == 1) return fn(0);
    {
      std::lock_guard<std::mutex> lk(mu_);
      fn_ = &fn;
      pending_ = n_ - 1;
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    std::exception_ptr mine;
    try {
      fn(0);
    } catch (...) {
      mine = std::current_exception();
    }
    std::unique_lock<std::mutex> lk(mu_);
    done_.wait(lk, [this] { return pending_ == 0; });
    fn_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void loop(int tid) {
    unsigned long seen = 0;
    for (;;) {
      const std::function<void(int)>* fn = nullptr;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        fn = fn_;
      }
      std::exception_ptr err;
      try {
        (*fn)(tid);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> lk(mu_);
      if (err && !error_) error_ = err;
      if (--pending_ == 0) done_.notify_one();
    }
  }

  int n_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  int pending_ = 0;
  unsigned long generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace attain::mla
