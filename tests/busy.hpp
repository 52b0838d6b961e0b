// A thread that keeps one core busy while it lives: the load a library meets on a shared machine
// (a tokenizer, another process), under which a parallel region must still finish and be right.
#pragma once

#include <atomic>
#include <thread>

namespace attain::test {

class BusySibling {
 public:
  BusySibling()
      : spin_([this] {
          while (!stop_.load(std::memory_order_relaxed))
            spins_.fetch_add(1, std::memory_order_relaxed);
        }) {}
  ~BusySibling() {
    stop_.store(true);
    spin_.join();
  }
  BusySibling(const BusySibling&) = delete;
  BusySibling& operator=(const BusySibling&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::atomic<unsigned long> spins_{0};
  std::thread spin_;
};

}  // namespace attain::test
