// Builds without MPI: routing, layouts and the expert MLP work; everything that would talk to
// other ranks reports that this build has no MPI. (Files named *mpi* are left out then.)
#ifndef ATTAIN_HAVE_MPI

#include "attain/moe.hpp"

namespace attain::moe {

namespace {
[[noreturn]] void no_mpi() {
  throw InputError("this attain was built without MPI (install libopenmpi-dev and reconfigure)");
}
}  // namespace

struct Handle::State {};
void Handle::wait() {}
bool Handle::ready() const {
  return true;
}
OpTiming Handle::timing() const {
  return {};
}

MpiSession::MpiSession() {}
MpiSession::~MpiSession() = default;
bool launched_by_mpirun() {
  return false;
}

struct ExpertComm::Impl {};
ExpertComm::ExpertComm(const CommConfig&) {
  no_mpi();
}
ExpertComm::~ExpertComm() = default;
int ExpertComm::rank() const {
  return 0;
}
int ExpertComm::ranks() const {
  return 1;
}
int ExpertComm::local_experts() const {
  return 0;
}
Transport ExpertComm::transport() const {
  return Transport::automatic;
}
const CommConfig& ExpertComm::config() const {
  no_mpi();
}
std::size_t ExpertComm::buffer_bytes() const {
  return 0;
}
std::vector<std::int64_t> ExpertComm::plan(const Routing&) {
  no_mpi();
}
std::int64_t ExpertComm::ll_capacity() const {
  return 0;
}
Handle ExpertComm::dispatch(const Routing&, const Tokens&, ExpertRows, DispatchState*) {
  no_mpi();
}
Handle ExpertComm::combine(const DispatchState&, const std::uint16_t*, std::uint16_t*) {
  no_mpi();
}
void ExpertComm::barrier() {}

MoeBenchResult run_moe_bench(const MoeBenchConfig&) {
  no_mpi();
}

std::vector<Result> run_bench_sharded(const std::vector<CatalogOp>& ops, const BenchConfig& cfg,
                                      const Roofline& roof,
                                      std::map<std::string, std::string>* libraries) {
  return run_bench(ops, cfg, roof, libraries);  // one rank: every op here
}
std::vector<CatalogOp> shard_of(const std::vector<CatalogOp>& ops, int, int) {
  return ops;
}
std::vector<Result> gather_sharded(const std::vector<CatalogOp>&, const std::vector<Result>& mine,
                                   std::map<std::string, std::string>*) {
  return mine;
}
bool all_ranks(bool mine) {
  return mine;
}
bool from_rank0(bool value) {
  return value;
}

}  // namespace attain::moe
#endif
