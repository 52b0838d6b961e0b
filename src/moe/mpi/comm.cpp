// ExpertComm over MPI, DeepEP's split: the window's layout (layout.hpp), a transport chosen once
// (transport.hpp: shm or rma), the communication thread (op_queue.hpp) and the two modes'
// algorithms (normal.cpp, low_latency.cpp). Every wait polls with a deadline, so a peer that
// died or hangs turns into a TimeoutError naming it.
#include <fmt/format.h>
#include <mpi.h>

#include <cstdlib>
#include <stdexcept>

#include "attain/moe.hpp"
#include "moe/mpi/algorithms.hpp"
#include "moe/mpi/op_queue.hpp"
#include "moe/mpi/peers.hpp"

namespace attain::moe {

MpiSession::MpiSession() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    owns_ = true;
    if (provided < MPI_THREAD_SERIALIZED)
      throw std::runtime_error(
          "MPI provides no MPI_THREAD_SERIALIZED (the communication thread needs it)");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // Errors come back as codes (turned into exceptions) instead of aborting the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiSession::~MpiSession() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (owns_ && !fin) MPI_Finalize();
}

bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

struct ExpertComm::Impl {
  mpi::Peers peers;  // opens the window (collective)
  std::unique_ptr<mpi::Algorithm> algorithm;
  mpi::OpQueue queue;  // started once the window is open on every rank

  explicit Impl(const CommConfig& cfg)
      : peers(cfg),
        algorithm(cfg.mode == Mode::normal ? mpi::make_normal(peers)
                                           : mpi::make_low_latency(peers)),
        queue(cfg.timeout_s, peers.waiting_on) {}

  void check_call(const Routing& rt, const Tokens& x) const {
    const CommConfig& cfg = peers.cfg;
    if (rt.tokens > cfg.max_tokens)
      throw InputError(
          fmt::format("{} tokens exceed the buffers' max_tokens {}", rt.tokens, cfg.max_tokens));
    if (rt.topk != cfg.topk || x.rows != rt.tokens || x.hidden != cfg.hidden ||
        x.dtype != cfg.dtype)
      throw InputError(fmt::format(
          "dispatch: tokens {}x{} {} / top-{} do not match the communicator ({} {} top-{})", x.rows,
          x.hidden, payload_name(x.dtype), rt.topk, cfg.hidden, payload_name(cfg.dtype), cfg.topk));
    validate_routing(rt, cfg.experts);
  }
};

ExpertComm::ExpertComm(const CommConfig& cfg) : impl_(std::make_unique<Impl>(cfg)) {}

ExpertComm::~ExpertComm() {
  impl_->queue.stop();
  // After a timeout a peer is gone: freeing the window (collective) would hang.
  if (!impl_->queue.broken()) impl_->peers.link->close();
}

int ExpertComm::rank() const {
  return impl_->peers.me;
}
int ExpertComm::ranks() const {
  return impl_->peers.ranks;
}
int ExpertComm::local_experts() const {
  return impl_->peers.local_experts;
}
Transport ExpertComm::transport() const {
  return impl_->peers.link->kind();
}
const CommConfig& ExpertComm::config() const {
  return impl_->peers.cfg;
}
std::size_t ExpertComm::buffer_bytes() const {
  return impl_->peers.window.total_bytes;
}
std::int64_t ExpertComm::ll_capacity() const {
  return impl_->peers.window.ll_capacity();
}

std::vector<std::int64_t> ExpertComm::plan(const Routing& r) {
  const CommConfig& cfg = impl_->peers.cfg;
  if (cfg.mode != Mode::normal) throw std::logic_error("plan() is for normal mode");
  impl_->check_call(r, Tokens{cfg.dtype, r.tokens, cfg.hidden, {}, {}});
  std::vector<std::int64_t> rows;
  impl_->queue.submit([&](OpTiming&) { rows = mpi::exchange_counts(impl_->peers, r); }).wait();
  return rows;
}

void ExpertComm::barrier() {
  impl_->queue.submit([this](OpTiming&) { impl_->peers.barrier(); }).wait();
}

Handle ExpertComm::dispatch(const Routing& r, const Tokens& x, ExpertRows out, DispatchState* st) {
  impl_->check_call(r, x);
  return impl_->queue.submit(
      [this, &r, &x, out, st](OpTiming& t) { impl_->algorithm->dispatch(r, x, out, st, t); });
}

Handle ExpertComm::combine(const DispatchState& st, const std::uint16_t* y, std::uint16_t* out) {
  return impl_->queue.submit(
      [this, &st, y, out](OpTiming& t) { impl_->algorithm->combine(st, y, out, t); });
}

}  // namespace attain::moe
