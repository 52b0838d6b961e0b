#include "moe/mpi/op_queue.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>

#include "core/util.hpp"

namespace attain::moe {

using Clock = std::chrono::steady_clock;

struct Handle::State {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr err;
  OpTiming timing;
  double timeout_s = 30;
  Clock::time_point started;  // when the communication thread began it (under mu)
  std::shared_ptr<std::atomic<int>> waiting_on;
};

void Handle::wait() {
  if (!st_) return;
  std::unique_lock lk(st_->mu);
  // The communication thread times out by itself; this guards against it being stuck inside
  // MPI. Operations queued behind others only count from when they start.
  const double limit = 2 * st_->timeout_s + 5;
  while (!st_->cv.wait_for(lk, std::chrono::milliseconds(200), [&] { return st_->done; })) {
    if (st_->started == Clock::time_point{} || since(st_->started) < limit) continue;
    const int peer = st_->waiting_on ? st_->waiting_on->load() : -1;
    throw TimeoutError(
        peer, fmt::format("rank {} did not answer within {:g} s (communication blocked in MPI)",
                          peer, limit));
  }
  if (st_->err) std::rethrow_exception(st_->err);
}

bool Handle::ready() const {
  if (!st_) return true;
  std::lock_guard lk(st_->mu);
  return st_->done;
}

OpTiming Handle::timing() const {
  if (!st_) return {};
  std::lock_guard lk(st_->mu);
  return st_->timing;
}

namespace mpi {
namespace {

void raise_priority() {
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  sched_param sp{};
  sp.sched_priority = 1;
  if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0)
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), -10);
}

}  // namespace

OpQueue::OpQueue(double timeout_s, std::shared_ptr<std::atomic<int>> waiting_on)
    : timeout_s_(timeout_s), waiting_on_(std::move(waiting_on)), thread_([this] { loop(); }) {}

OpQueue::~OpQueue() {
  stop();
}

void OpQueue::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void OpQueue::loop() {
  raise_priority();
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

Handle OpQueue::submit(std::function<void(OpTiming&)> op) {
  auto st = std::make_shared<Handle::State>();
  st->timeout_s = timeout_s_;
  st->waiting_on = waiting_on_;
  {
    std::lock_guard lk(mu_);
    queue_.push_back([this, st, op = std::move(op)] {
      OpTiming t;
      std::exception_ptr err;
      {
        std::lock_guard lk0(st->mu);
        st->started = Clock::now();
      }
      try {
        if (broken_) std::rethrow_exception(broken_);
        const auto t0 = Clock::now();
        op(t);
        t.total_s = since(t0);
      } catch (const TimeoutError&) {
        err = broken_ = std::current_exception();
      } catch (...) {
        err = std::current_exception();
      }
      {
        std::lock_guard lk2(st->mu);
        st->timing = t;
        st->err = err;
        st->done = true;
      }
      st->cv.notify_all();
    });
  }
  cv_.notify_one();
  Handle h;
  h.st_ = st;
  return h;
}

}  // namespace mpi
}  // namespace attain::moe
