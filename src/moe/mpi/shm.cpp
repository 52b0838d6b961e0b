// The shared-memory transport: every rank's segment is mapped into every process, so senders
// write rows straight into the receiver's memory and flags are atomics in the window.
#include <atomic>
#include <cstring>
#include <vector>

#include "core/util.hpp"
#include "moe/mpi/transport.hpp"

namespace attain::moe::mpi {
namespace {

class Shm final : public Transport {
 public:
  Shm(std::size_t size, std::size_t control_bytes) : Transport(moe::Transport::shm, size) {
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(size), 1, info, MPI_COMM_WORLD,
                                           &base_, &win_);
    MPI_Info_free(&info);
    check_mpi(rc, "MPI_Win_allocate_shared");
    segment_.resize(idx(ranks));
    for (int r = 0; r < ranks; ++r) {
      MPI_Aint segment_size = 0;
      int disp = 0;
      check_mpi(MPI_Win_shared_query(win_, r, &segment_size, &disp, &segment_[idx(r)]),
                "MPI_Win_shared_query");
    }
    opened(control_bytes);
  }

  std::int64_t load(std::size_t off) override {
    return word(base_ + off).load(std::memory_order_acquire);
  }
  void store(int dest, std::size_t off, std::int64_t v) override {
    word(segment_[idx(dest)] + off).store(v, std::memory_order_release);
  }
  std::int64_t fetch_add(int dest, std::size_t off, std::int64_t v) override {
    return word(segment_[idx(dest)] + off).fetch_add(v, std::memory_order_acq_rel);
  }
  void put(int dest, std::size_t off, const void* src, std::size_t n) override {
    std::memcpy(segment_[idx(dest)] + off, src, n);
  }
  std::byte* target(int dest, std::size_t off, std::size_t) override {
    return segment_[idx(dest)] + off;
  }
  void commit(int, std::size_t, std::size_t) override {}
  void sync_local() override { std::atomic_thread_fence(std::memory_order_acquire); }

 private:
  static std::atomic_ref<std::int64_t> word(std::byte* p) {
    return std::atomic_ref<std::int64_t>(*reinterpret_cast<std::int64_t*>(p));
  }
  std::vector<std::byte*> segment_;  // every rank's segment, mapped here
};

}  // namespace

std::unique_ptr<Transport> open_shm(std::size_t bytes, std::size_t control_bytes) {
  return std::make_unique<Shm>(bytes, control_bytes);
}

}  // namespace attain::moe::mpi
