// How flags and bytes reach a peer's window: one interface, two implementations, chosen once per
// communicator.
//   shm.cpp  an MPI-3 shared-memory window: every segment is mapped here, so a put is a memcpy
//            and a flag is an atomic (every rank on one node)
//   rma.cpp  MPI_Win_allocate with MPI_Put / MPI_Accumulate / MPI_Fetch_and_op (any network)
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "attain/moe.hpp"

namespace attain::moe::mpi {

// Turns an MPI error code into an exception that names the call.
void check_mpi(int rc, const char* what);

class Transport {
 public:
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  moe::Transport kind() const { return kind_; }
  std::byte* local() const { return base_; }  // this rank's segment
  std::size_t bytes() const { return bytes_; }

  // A flag or counter (int64) of this rank's segment, with acquire ordering.
  virtual std::int64_t load(std::size_t off) = 0;
  // Sets a flag in `dest`'s segment; everything written to `dest` before it is visible first.
  virtual void store(int dest, std::size_t off, std::int64_t v) = 0;
  // Atomic add to a counter in `dest`'s segment; returns the old value.
  virtual std::int64_t fetch_add(int dest, std::size_t off, std::int64_t v) = 0;
  // Bytes into `dest`'s segment.
  virtual void put(int dest, std::size_t off, const void* src, std::size_t n) = 0;
  // Where rows for `dest` are built: straight in its segment, or a staging buffer that
  // commit() then sends.
  virtual std::byte* target(int dest, std::size_t off, std::size_t n) = 0;
  virtual void commit(int dest, std::size_t off, std::size_t n) = 0;
  // Before this rank reads what its peers wrote into its segment.
  virtual void sync_local() = 0;

  // Collective: frees the window. Never called after a peer died: it would hang.
  void close();

 protected:
  Transport(moe::Transport which, std::size_t size);
  // After allocation: errors as codes, the control lines zeroed, every page touched (the first
  // timed transfer pays no page faults), the passive epoch opened, and a barrier.
  void opened(std::size_t control_bytes);

  moe::Transport kind_;
  int me_ = 0;
  std::size_t bytes_ = 0;
  MPI_Win win_ = MPI_WIN_NULL;
  std::byte* base_ = nullptr;
};

std::unique_ptr<Transport> open_shm(std::size_t bytes, std::size_t control_bytes);
std::unique_ptr<Transport> open_rma(std::size_t bytes, std::size_t control_bytes);
// `automatic`: shm when every rank is on this node, else rma. shm across nodes: InputError.
std::unique_ptr<Transport> open_transport(moe::Transport asked, std::size_t bytes,
                                          std::size_t control_bytes);

}  // namespace attain::moe::mpi
