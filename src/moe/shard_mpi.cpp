// Scale-out of `attain bench`: ops sharded round robin over the ranks, results gathered on rank 0.
#include <fmt/format.h>
#include <mpi.h>

#include "attain/moe.hpp"

namespace attain::moe {

std::vector<CatalogOp> shard_of(const std::vector<CatalogOp>& ops, int rank, int ranks) {
  std::vector<CatalogOp> mine;
  for (std::size_t i = static_cast<std::size_t>(rank); i < ops.size();
       i += static_cast<std::size_t>(ranks))
    mine.push_back(ops[i]);
  return mine;
}

std::vector<Result> gather_sharded(const std::vector<CatalogOp>& ops,
                                   const std::vector<Result>& mine,
                                   std::map<std::string, std::string>* libraries) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  // Each rank's results travel as one JSON text: {"results": [...], "libraries": {...}}.
  nlohmann::json j;
  j["results"] = nlohmann::json::array();
  for (const auto& r : mine) j["results"].push_back(to_json(r));
  j["libraries"] = libraries != nullptr ? *libraries : std::map<std::string, std::string>{};
  const std::string text = j.dump();
  int len = static_cast<int>(text.size());
  std::vector<int> lens(static_cast<std::size_t>(ranks)), displs(static_cast<std::size_t>(ranks));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank == 0) {
    int total = 0;
    for (int r = 0; r < ranks; ++r) {
      displs[static_cast<std::size_t>(r)] = total;
      total += lens[static_cast<std::size_t>(r)];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(text.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  if (rank != 0) return {};
  // Back into the original order: op i ran on rank i % ranks as its (i / ranks)-th op; each op
  // has its results (one per backend that ran it) together.
  std::vector<std::vector<Result>> per_rank(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const auto part = nlohmann::json::parse(
        all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]),
                   static_cast<std::size_t>(lens[static_cast<std::size_t>(r)])));
    nlohmann::json file = {{"schema", kResultsSchema},
                           {"created", ""},
                           {"command", ""},
                           {"machine", nlohmann::json::object()},
                           {"config", nlohmann::json::object()},
                           {"results", part["results"]}};
    per_rank[static_cast<std::size_t>(r)] =
        results_from_json(file, fmt::format("rank {}", r)).results;
    if (libraries)
      for (const auto& [k, v] : part["libraries"].items()) (*libraries)[k] = v.get<std::string>();
  }
  std::vector<Result> out;
  std::vector<std::size_t> next(static_cast<std::size_t>(ranks), 0);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto& src = per_rank[i % static_cast<std::size_t>(ranks)];
    auto& at = next[i % static_cast<std::size_t>(ranks)];
    const std::string spec = ops[i].op.spec();
    while (at < src.size() && src[at].op.op.spec() == spec) out.push_back(src[at++]);
  }
  return out;
}

std::vector<Result> run_bench_sharded(const std::vector<CatalogOp>& ops, const BenchConfig& cfg,
                                      const Roofline& roof,
                                      std::map<std::string, std::string>* libraries) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::map<std::string, std::string> libs;
  const auto local = run_bench(shard_of(ops, rank, ranks), cfg, roof, &libs);
  if (libraries) libs.insert(libraries->begin(), libraries->end());
  auto out = gather_sharded(ops, local, &libs);
  if (libraries && rank == 0) *libraries = libs;
  return out;
}

bool all_ranks(bool mine) {
  int v = mine ? 1 : 0, all = 0;
  MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all != 0;
}

bool from_rank0(bool value) {
  int v = value ? 1 : 0;
  MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return v != 0;
}

}  // namespace attain::moe
