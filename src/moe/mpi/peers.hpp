// What the dispatch and combine algorithms share: this rank and its peers, the window's layout,
// the transport, the sequence numbers, and waiting on a peer with a deadline.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "attain/moe.hpp"
#include "moe/mpi/layout.hpp"
#include "moe/mpi/transport.hpp"

namespace attain::moe::mpi {

struct Peers {
  CommConfig cfg;
  int me = 0, ranks = 1, local_experts = 1;
  WindowLayout window;
  std::unique_ptr<Transport> link;
  // Sequence numbers, the same on every rank: operations are collective and run in call order.
  std::int64_t dispatch_seq = 0, combine_seq = 0, barrier_seq = 0, plan_seq = 0;
  // The peer being waited for (-1: none), for a Handle's watchdog.
  std::shared_ptr<std::atomic<int>> waiting_on = std::make_shared<std::atomic<int>>(-1);

  // Collective: checks the configuration, lays out and opens the window.
  explicit Peers(const CommConfig& c);

  // Sets this rank's `f` line in `dest`'s segment to v.
  void signal(int dest, Flag f, std::int64_t v) { link->store(dest, window.flag(f, me), v); }
  // The same to every other rank.
  void signal_others(Flag f, std::int64_t v);
  // `from`'s `f` line in this rank's segment.
  std::int64_t read(Flag f, int from) { return link->load(window.flag(f, from)); }
  // Waits until `from`'s `f` line here reaches v; TimeoutError naming `from` after the timeout.
  void wait(Flag f, int from, std::int64_t v, const char* what);
  // The same for every other rank.
  void wait_others(Flag f, std::int64_t v, const char* what);
  void barrier();
};

}  // namespace attain::moe::mpi
