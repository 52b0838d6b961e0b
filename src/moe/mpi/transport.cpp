#include "moe/mpi/transport.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace attain::moe::mpi {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw std::runtime_error(
      fmt::format("{} failed: {}", what, std::string(msg, static_cast<std::size_t>(len))));
}

Transport::Transport(moe::Transport which, std::size_t size) : kind_(which), bytes_(size) {
  MPI_Comm_rank(MPI_COMM_WORLD, &me_);
}

void Transport::opened(std::size_t control_bytes) {
  MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);
  std::memset(base_, 0, control_bytes);
  std::memset(base_ + control_bytes, 0, bytes_ - control_bytes);
  check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
  MPI_Win_sync(win_);
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

void Transport::close() {
  if (win_ == MPI_WIN_NULL) return;
  MPI_Win_unlock_all(win_);
  MPI_Win_free(&win_);
}

std::unique_ptr<Transport> open_transport(moe::Transport asked, std::size_t bytes,
                                          std::size_t control_bytes) {
  int me = 0, ranks = 1, node_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  const bool one_node = node_size == ranks;
  if (asked == moe::Transport::automatic)
    asked = one_node ? moe::Transport::shm : moe::Transport::rma;
  if (asked == moe::Transport::shm && !one_node)
    throw InputError("transport shm needs every rank on one node; use --transport rma");
  return asked == moe::Transport::shm ? open_shm(bytes, control_bytes)
                                      : open_rma(bytes, control_bytes);
}

}  // namespace attain::moe::mpi
