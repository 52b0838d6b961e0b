// The one-sided transport: MPI_Put for rows, MPI_Accumulate (replace) for flags and
// MPI_Fetch_and_op for counters, in one passive-target epoch; works across nodes.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "moe/mpi/transport.hpp"

namespace attain::moe::mpi {
namespace {

class Rma final : public Transport {
 public:
  Rma(std::size_t size, std::size_t control_bytes) : Transport(moe::Transport::rma, size) {
    check_mpi(MPI_Win_allocate(static_cast<MPI_Aint>(size), 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                               &base_, &win_),
              "MPI_Win_allocate");
    opened(control_bytes);
  }

  std::int64_t load(std::size_t off) override {
    std::int64_t dummy = 0, v = 0;
    check_mpi(
        MPI_Fetch_and_op(&dummy, &v, MPI_INT64_T, me_, static_cast<MPI_Aint>(off), MPI_NO_OP, win_),
        "MPI_Fetch_and_op");
    check_mpi(MPI_Win_flush(me_, win_), "MPI_Win_flush");
    return v;
  }
  void store(int dest, std::size_t off, std::int64_t v) override {
    // The data put before this flag must be complete at the target first.
    check_mpi(MPI_Win_flush(dest, win_), "MPI_Win_flush");
    check_mpi(MPI_Accumulate(&v, 1, MPI_INT64_T, dest, static_cast<MPI_Aint>(off), 1, MPI_INT64_T,
                             MPI_REPLACE, win_),
              "MPI_Accumulate");
    check_mpi(MPI_Win_flush(dest, win_), "MPI_Win_flush");
  }
  std::int64_t fetch_add(int dest, std::size_t off, std::int64_t v) override {
    std::int64_t old = 0;
    check_mpi(
        MPI_Fetch_and_op(&v, &old, MPI_INT64_T, dest, static_cast<MPI_Aint>(off), MPI_SUM, win_),
        "MPI_Fetch_and_op");
    check_mpi(MPI_Win_flush(dest, win_), "MPI_Win_flush");
    return old;
  }
  // In pieces below 1 GiB (MPI counts are int); to this rank itself, a memcpy.
  void put(int dest, std::size_t off, const void* src, std::size_t n) override {
    if (dest == me_) {
      std::memcpy(base_ + off, src, n);
      return;
    }
    const auto* p = static_cast<const char*>(src);
    for (std::size_t done = 0; done < n;) {
      const std::size_t chunk = std::min<std::size_t>(n - done, std::size_t{1} << 30);
      check_mpi(MPI_Put(p + done, static_cast<int>(chunk), MPI_BYTE, dest,
                        static_cast<MPI_Aint>(off + done), static_cast<int>(chunk), MPI_BYTE, win_),
                "MPI_Put");
      done += chunk;
    }
  }
  std::byte* target(int dest, std::size_t off, std::size_t n) override {
    if (dest == me_) return base_ + off;
    if (stage_.size() < n) stage_.resize(n);
    return stage_.data();
  }
  void commit(int dest, std::size_t off, std::size_t n) override {
    if (dest == me_ || n == 0) return;
    put(dest, off, stage_.data(), n);
    check_mpi(MPI_Win_flush_local(dest, win_), "MPI_Win_flush_local");
  }
  void sync_local() override {
    MPI_Win_sync(win_);
    std::atomic_thread_fence(std::memory_order_acquire);
  }

 private:
  std::vector<std::byte> stage_;  // rows for one peer, sent by one MPI_Put
};

}  // namespace

std::unique_ptr<Transport> open_rma(std::size_t bytes, std::size_t control_bytes) {
  return std::make_unique<Rma>(bytes, control_bytes);
}

}  // namespace attain::moe::mpi
