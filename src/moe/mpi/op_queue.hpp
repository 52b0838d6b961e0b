// The communication thread: one per communicator, running operations one at a time in call
// order, so the caller computes while they progress; each submission returns a Handle.
//
// Like DeepEP's dedicated communication SMs, the thread runs at real-time priority where allowed
// (else a raised nice level), so traffic progresses at once while the expert GEMM occupies the
// same core; it sleeps whenever it waits.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "attain/moe.hpp"

namespace attain::moe::mpi {

class OpQueue {
 public:
  // `waiting_on`: the peer an operation is waiting for now (-1: none), named by a Handle whose
  // watchdog fires.
  OpQueue(double timeout_s, std::shared_ptr<std::atomic<int>> waiting_on);
  ~OpQueue();
  OpQueue(const OpQueue&) = delete;
  OpQueue& operator=(const OpQueue&) = delete;

  Handle submit(std::function<void(OpTiming&)> op);
  // Runs what is queued, then joins the thread.
  void stop();
  // After a timeout every later operation fails with it, and the window must not be freed.
  bool broken() const { return broken_ != nullptr; }

 private:
  void loop();

  double timeout_s_;
  std::shared_ptr<std::atomic<int>> waiting_on_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::exception_ptr broken_;  // written on the thread only
  std::thread thread_;
};

}  // namespace attain::moe::mpi
