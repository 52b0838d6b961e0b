// The measurements and checks `attain moe` (bench/moe_mpi.cpp) is made of. Collective calls
// (every rank calls them) are marked so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attain/moe.hpp"

namespace attain::moe::measure {

double median(std::vector<double> v);
void all_max(std::vector<double>& v);  // collective: element-wise max over ranks, in place
double all_sum(double x);              // collective
bool all_true(bool b);                 // collective
// Appends a reason to a "; "-separated list of them.
void add_note(std::string& notes, const std::string& note);
// "attain" when this build has it, else "reference".
std::string default_backend();

// The per-rank inputs of the benchmark: a pure function of (config, rank, salt), so every rank
// can rebuild what any other rank sent.
struct RankInput {
  Routing routing;
  Tokens x;
};
RankInput make_input(const MoeBenchConfig& c, int rank, std::uint64_t salt);
ExpertRows rows_of(RowBuffer& b);

// Sentinel check of one dispatch: every row that reached this rank is byte-identical to the row
// its origin sent, sits in the group of the expert it was routed to, and every (rank, token,
// slot) routed here arrived exactly once. Empty when it holds, else what failed.
std::string check_dispatch(const MoeBenchConfig& c, const ExpertComm& comm, const DispatchState& st,
                           const std::vector<RankInput>& all);
// The combined output against the fp64 reference (normwise relative error below 1e-2).
std::string check_combine(const std::vector<std::uint16_t>& out, const std::vector<double>& ref);

// Medians of per-rep times (already the slowest rank's) as one operation's figures.
TransferStats stats(const std::vector<double>& total, const std::vector<double>& transfer,
                    const std::vector<double>& local, double bytes, double copy_gbps);
// Collective: the machine's all-core copy bandwidth, probed by rank 0 with every CPU.
double machine_copy_gbps(int me);
// Evicts the LLC (cold-cache timing): every rank rewrites 96 MiB.
void flush_llc();
// Collective: what the memory system gives every rank copying at once, read + write counted.
double concurrent_copy_gbps(double bytes_per_rank, std::size_t row, int reps);
// Testing aid: "kill:R" or "stop:R" makes rank R die or hang here.
void inject_fault(const std::string& fault, int me);

}  // namespace attain::moe::measure
