// Dispatch and combine, DeepEP's two modes, each over any transport. They run on the
// communication thread (op_queue.hpp), one operation at a time.
//
// Every transfer follows one protocol: a sender waits until the receiver has released the
// previous use of its region (the receiver's *_free flag at sequence s - 1), writes, then raises
// its *_data flag to s; the receiver waits for every *_data flag, reads, and raises its *_free
// flags.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "attain/moe.hpp"
#include "moe/mpi/peers.hpp"

namespace attain::moe::mpi {

using Clock = std::chrono::steady_clock;

class Algorithm {
 public:
  explicit Algorithm(Peers& peers) : p_(peers) {}
  virtual ~Algorithm() = default;
  virtual void dispatch(const Routing& rt, const Tokens& x, ExpertRows out, DispatchState* st,
                        OpTiming& tm) = 0;
  virtual void combine(const DispatchState& st, const std::uint16_t* y, std::uint16_t* out,
                       OpTiming& tm) = 0;

 protected:
  Peers& p_;
};

// normal.cpp: tokens sent once per destination rank, the contiguous layout, partial sums back.
std::unique_ptr<Algorithm> make_normal(Peers& peers);
// The layout exchange before a normal dispatch (DeepEP's notify): the rows each local expert
// will receive for this routing.
std::vector<std::int64_t> exchange_counts(Peers& peers, const Routing& rt);

// low_latency.cpp: one row per (token, expert) put at a reserved slot, the masked layout.
std::unique_ptr<Algorithm> make_low_latency(Peers& peers);

}  // namespace attain::moe::mpi
