#include "moe/mpi/peers.hpp"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "core/util.hpp"

namespace attain::moe::mpi {

Peers::Peers(const CommConfig& c) : cfg(c) {
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (cfg.experts <= 0 || cfg.experts % ranks != 0)
    throw InputError(
        fmt::format("{} experts cannot be split evenly over {} ranks", cfg.experts, ranks));
  if (cfg.topk <= 0 || cfg.topk > cfg.experts || cfg.hidden <= 0 || cfg.max_tokens <= 0 ||
      cfg.align <= 0)
    throw InputError(
        fmt::format("communicator: top-k {}, hidden {}, max tokens {}, align {} out of range",
                    cfg.topk, cfg.hidden, cfg.max_tokens, cfg.align));
  if (!(cfg.timeout_s > 0)) throw InputError("timeout must be positive");
  local_experts = cfg.experts / ranks;
  window = WindowLayout(cfg, ranks);
  link = open_transport(cfg.transport, window.total_bytes, window.control_bytes);
}

void Peers::signal_others(Flag f, std::int64_t v) {
  for (int r = 0; r < ranks; ++r)
    if (r != me) signal(r, f, v);
}

void Peers::wait(Flag f, int from, std::int64_t v, const char* what) {
  waiting_on->store(from);
  const std::size_t off = window.flag(f, from);
  const auto t0 = std::chrono::steady_clock::now();
  // Spin briefly (the data is usually about to arrive), then poll every ~20 us: the thread may
  // run at real-time priority, so it must sleep rather than yield.
  for (long spin = 0;; ++spin) {
    if (link->load(off) >= v) break;
    if (spin % 64 == 63) {
      const double waited = since(t0);
      if (waited > cfg.timeout_s)
        throw TimeoutError(from, fmt::format("rank {} did not answer within {:g} s ({}): it died "
                                             "or hangs",
                                             from, cfg.timeout_s, what));
      if (waited > 50e-6) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  waiting_on->store(-1);
}

void Peers::wait_others(Flag f, std::int64_t v, const char* what) {
  for (int r = 0; r < ranks; ++r)
    if (r != me) wait(f, r, v, what);
}

void Peers::barrier() {
  const std::int64_t s = ++barrier_seq;
  signal_others(Flag::barrier, s);
  wait_others(Flag::barrier, s, "barrier");
}

}  // namespace attain::moe::mpi
