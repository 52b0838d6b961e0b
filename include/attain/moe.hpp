// MoE expert parallelism: routing, dispatch/combine layouts, the expert MLP on the grouped
// GEMM, and the communication layer over MPI (DeepEP-style normal and low-latency modes).
//
//   route()        gate scores -> top-k expert ids (-1 = none) and weights, per token
//   make_layout()  tokens per rank / per expert, and whether a token goes to a rank
//   ExpertComm     dispatch (tokens -> the ranks hosting their experts) and combine (the
//                  weighted expert outputs back into each token), asynchronous: each call
//                  returns a Handle that the caller waits on after computing something else
//   ExpertMLP      gate+up grouped GEMM, SiLU(gate)*up, down grouped GEMM, on a backend
//
// Everything that needs MPI lives in src/moe/mpi/ and src/moe/*_mpi.cpp; routing, layouts,
// tokens and the expert MLP work in any build.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attain/bench.hpp"
#include "attain/catalog.hpp"
#include "attain/op.hpp"
#include "attain/results.hpp"

namespace attain::moe {

// ---------------------------------------------------------------- routing

struct GateConfig {
  int experts = 0, topk = 0;
  int n_group = 1, topk_group = 1;  // group-limited routing (DeepSeek-V3): keep topk_group groups
  double routed_scaling_factor = 1.0;
  bool sigmoid = false;   // DeepSeek-V3: sigmoid scores, bias added for selection only
  bool normalize = true;  // renormalize the selected weights to sum to 1
  void validate() const;  // throws InputError
};
// From a model config (scoring_func, n_group, topk_group, routed_scaling_factor, top-k).
GateConfig gate_from_model(const ModelConfig& m);

struct Routing {
  std::int64_t tokens = 0;
  int topk = 0;
  std::vector<std::int32_t> ids;  // [tokens, topk], -1 = no expert
  std::vector<float> weights;     // [tokens, topk]
  std::int32_t id(std::int64_t t, int k) const {
    return ids[static_cast<std::size_t>(t * topk + k)];
  }
  float weight(std::int64_t t, int k) const {
    return weights[static_cast<std::size_t>(t * topk + k)];
  }
};

// scores: [tokens, experts] gate logits (softmax) or logits before the sigmoid (sigmoid).
// bias: [experts] selection bias (sigmoid only; empty = none). NaN/Inf scores: InputError.
Routing route(const GateConfig& g, std::span<const float> scores, std::span<const float> bias = {});
// Ids in [-1, experts), no expert twice in one token, finite weights; InputError otherwise.
void validate_routing(const Routing& r, int experts);
// Seeded gate logits with a skew: expert e gets an extra skew*log(1/(e+1)) (0 = balanced).
std::vector<float> random_scores(std::int64_t tokens, int experts, std::uint64_t seed,
                                 double skew = 0);

struct Layout {
  int ranks = 0, experts = 0, experts_per_rank = 0;
  std::int64_t tokens = 0;
  std::vector<std::int64_t> tokens_per_rank;    // [ranks]: each token counted once per rank
  std::vector<std::int64_t> tokens_per_expert;  // [experts]
  std::vector<std::uint8_t> in_rank;            // [tokens, ranks]: token goes to rank
  bool goes_to(std::int64_t t, int r) const {
    return in_rank[static_cast<std::size_t>(t * ranks + r)] != 0;
  }
};
// Experts are split evenly: rank r hosts experts [r*E/R, (r+1)*E/R). E % R != 0: InputError.
Layout make_layout(const Routing& r, int experts, int ranks);

inline std::int64_t align_up(std::int64_t x, std::int64_t a) {
  return (x + a - 1) / a * a;
}

// ---------------------------------------------------------------- token payloads

enum class Payload : std::uint8_t { bf16, fp8 };  // fp8: e4m3 with one fp32 scale per 1x128 block
std::string_view payload_name(Payload p);
std::optional<Payload> parse_payload(std::string_view s);

// Token rows as they travel: bf16, or e4m3 plus scales [rows, ceil(hidden/128)].
struct Tokens {
  Payload dtype = Payload::bf16;
  std::int64_t rows = 0, hidden = 0;
  std::vector<std::uint8_t> data;  // rows * row_bytes()
  std::vector<float> scales;       // fp8 only
  std::int64_t row_bytes() const { return hidden * (dtype == Payload::fp8 ? 1 : 2); }
  std::int64_t scale_blocks() const {
    return dtype == Payload::fp8 ? (hidden + kFp8Block - 1) / kFp8Block : 0;
  }
  double value(std::int64_t row, std::int64_t j) const;  // dequantized
};
// x: [rows, hidden] bf16. fp8 quantizes each 1x128 block to its own amax / 448 scale.
Tokens make_tokens(std::span<const std::uint16_t> x, std::int64_t rows, std::int64_t hidden,
                   Payload dt);
// Sentinel rows: row t of rank r is a pure function of (seed, r, t), so any rank can
// rebuild what another rank sent and compare bytes.
std::vector<std::uint16_t> sentinel_rows(std::int64_t rows, std::int64_t hidden, int rank,
                                         std::uint64_t seed);

// ---------------------------------------------------------------- expert rows

// Where dispatch writes the expert inputs and where combine reads the expert outputs.
//   contiguous: rows grouped by local expert, each group padded to `align` rows;
//               data [capacity, hidden], offsets [local_experts + 1]
//   masked:     data [local_experts, capacity, hidden], counts [local_experts]
// Every received row carries the (source rank, source token, top-k slot) it came from.
struct RowOrigin {
  std::int32_t rank = -1, token = -1, slot = -1;
};
struct ExpertRows {
  GroupedLayout layout = GroupedLayout::contiguous;
  Payload dtype = Payload::bf16;
  int local_experts = 0;
  std::int64_t hidden = 0, capacity = 0;
  std::uint8_t* data = nullptr;
  float* scales = nullptr;          // fp8: one per (row, 128 block)
  std::int32_t* offsets = nullptr;  // contiguous
  std::int32_t* counts = nullptr;   // masked
  std::int64_t row_bytes() const { return hidden * (dtype == Payload::fp8 ? 1 : 2); }
  std::int64_t scale_blocks() const {
    return dtype == Payload::fp8 ? (hidden + kFp8Block - 1) / kFp8Block : 0;
  }
  std::int64_t total_rows() const;  // contiguous: offsets[L]; masked: local_experts * capacity
  // The rows [first, last) of local expert g that hold data: its group (contiguous, alignment
  // padding included) or its first counts[g] rows (masked).
  std::pair<std::int64_t, std::int64_t> group_rows(int g) const;
};

// Owned storage for ExpertRows plus a bf16 output of the same row indexing (tests, checks).
class RowBuffer {
 public:
  RowBuffer(GroupedLayout layout, Payload dt, int local_experts, std::int64_t hidden,
            std::int64_t capacity);
  ExpertRows rows() { return view_; }
  std::uint16_t* output() { return out_.data(); }

 private:
  ExpertRows view_;
  std::vector<std::uint8_t> data_;
  std::vector<float> scales_;
  std::vector<std::int32_t> index_;
  std::vector<std::uint16_t> out_;
};

// Stand-in experts with an exact answer: y = scale[first_expert + e] * x, in bf16.
void apply_scale_experts(const ExpertRows& in, int first_expert, std::span<const float> scale,
                         std::uint16_t* y);
// Single-process reference of dispatch + scale experts + combine: out[t] =
// sum_k w[t,k] * scale[id[t,k]] * x[t] (x dequantized as sent), fp64, [tokens, hidden].
std::vector<double> reference_combine(const Routing& r, const Tokens& x,
                                      std::span<const float> scale);

// ---------------------------------------------------------------- the expert MLP

struct ExpertConfig {
  int local_experts = 1;
  std::int64_t hidden = 0, inter = 0;  // moe_intermediate_size
  Payload dtype = Payload::bf16;
  GroupedLayout layout = GroupedLayout::contiguous;
  std::int64_t capacity = 0;          // contiguous: total rows; masked: rows per expert
  std::string backend = "reference";  // any attain backend that runs grouped_gemm
  int threads = 1;
  std::uint64_t seed = 1;  // weights
};

// gate+up: grouped GEMM [rows, hidden] x [L, 2*inter, hidden]^T; h = SiLU(gate) * up (quantized
// 1x128 for fp8); down: [rows, inter] x [L, hidden, inter]^T -> bf16 [rows, hidden].
class ExpertMLP {
 public:
  explicit ExpertMLP(const ExpertConfig& cfg);
  ~ExpertMLP();
  ExpertMLP(const ExpertMLP&) = delete;
  ExpertMLP& operator=(const ExpertMLP&) = delete;
  ExpertRows input();                   // dispatch writes here
  void run();                           // rows as set by input().offsets / counts
  const std::uint16_t* output() const;  // bf16, same row indexing as input()
  double flops() const;                 // of the rows the last layout holds
  const ExpertConfig& config() const;
  std::string backend_version() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------- communication (MPI)

enum class Mode : std::uint8_t { normal, low_latency };
// shm: MPI-3 shared-memory window, senders write straight into receivers' buffers (one node).
// rma: MPI one-sided puts into an MPI_Win_allocate window (any network, across nodes).
enum class Transport : std::uint8_t { automatic, shm, rma };
std::string_view mode_name(Mode m);                  // "normal", "low-latency"
std::string_view transport_name(Transport t);        // "auto", "shm", "rma"
std::optional<Mode> parse_mode(std::string_view s);  // the names above, and "ll"
std::optional<Transport> parse_transport(std::string_view s);

// A peer that did not answer within the timeout (it died or hangs).
struct TimeoutError : RuntimeFailure {
  TimeoutError(int peer_rank, const std::string& what) : RuntimeFailure(what), rank(peer_rank) {}
  int rank;
};

// MPI_Init (threads) once, MPI_Finalize at destruction; a no-op if MPI is already up.
// Only the moe subcommand (and a sharded bench) creates one.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool owns() const { return owns_; }

 private:
  int rank_ = 0, size_ = 1;
  bool owns_ = false;
};
// True when this process was started by mpirun/mpiexec (OMPI_COMM_WORLD_SIZE or PMI env).
bool launched_by_mpirun();
// Leaves the job now with `code` (after a timeout the peers cannot finalize with us).
[[noreturn]] void abort_job(int code);

struct CommConfig {
  Mode mode = Mode::normal;
  Payload dtype = Payload::bf16;
  int experts = 0, topk = 0;
  std::int64_t hidden = 0;
  std::int64_t max_tokens = 0;  // tokens per rank per call (sizes the buffers, allocated once)
  std::int64_t align = 128;     // normal mode: rows of each expert's group padded to this
  double timeout_s = 30;
  Transport transport = Transport::automatic;
};

// Time one operation spent, measured on the communication thread.
struct OpTiming {
  double total_s = 0;     // from start to done
  double transfer_s = 0;  // writing to peers until every peer's data has arrived
  double local_s = 0;     // layout work: expanding rows into experts / reducing partials
  double bytes_out = 0;   // bytes this rank wrote into other ranks' buffers
};

namespace mpi {
class OpQueue;
}

class Handle {
 public:
  Handle() = default;
  void wait();  // rethrows the operation's error (TimeoutError names the rank)
  bool ready() const;
  OpTiming timing() const;  // after wait()

 private:
  friend class mpi::OpQueue;
  struct State;
  std::shared_ptr<State> st_;
};

// What combine needs to know about a dispatch; filled by the dispatch when it completes.
struct DispatchState {
  Mode mode = Mode::normal;
  ExpertRows rows;  // where the expert inputs went
  const Routing* routing = nullptr;
  std::int64_t tokens = 0;
  int ranks = 0;
  std::vector<RowOrigin> origin;  // per received row (contiguous row, or masked g*capacity+j)
  // normal mode
  std::vector<float> row_weight;                // per received row: its top-k weight
  std::vector<std::vector<std::int32_t>> sent;  // [rank]: my tokens sent there, in send order
  std::vector<std::int32_t> pos;                // [tokens, ranks]: index of t in sent[rank] or -1
  std::vector<std::int64_t> recv_tokens;        // [ranks]: tokens received from each rank
  std::vector<std::int64_t> recv_begin;         // [ranks + 1]: received tokens, grouped by source
  std::vector<std::int64_t> tok_rows_ptr;       // [received tokens + 1]: CSR into tok_rows
  std::vector<std::int32_t> tok_rows;           // expert rows of each received token
};

class ExpertComm {
 public:
  explicit ExpertComm(const CommConfig& cfg);  // collective over MPI_COMM_WORLD
  ~ExpertComm();
  ExpertComm(const ExpertComm&) = delete;
  ExpertComm& operator=(const ExpertComm&) = delete;

  int rank() const;
  int ranks() const;
  int local_experts() const;
  int first_expert() const { return rank() * local_experts(); }
  Transport transport() const;
  const CommConfig& config() const;
  std::size_t buffer_bytes() const;  // window bytes per rank

  // Normal mode: the rows each local expert will receive for this routing (collective,
  // blocking); size ExpertRows from it (contiguous capacity = sum of align_up(rows, align)).
  std::vector<std::int64_t> plan(const Routing& r);
  // Low-latency mode capacity per local expert: ranks * max_tokens.
  std::int64_t ll_capacity() const;

  // Asynchronous: x and the routing must stay alive and unchanged until the handle is done;
  // `st` is filled when it completes. Operations run in call order on every rank.
  Handle dispatch(const Routing& r, const Tokens& x, ExpertRows out, DispatchState* st);
  // y: expert outputs (bf16, indexed like st.rows); out: [tokens, hidden] bf16.
  Handle combine(const DispatchState& st, const std::uint16_t* y, std::uint16_t* out);
  void barrier();  // with the timeout

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------- the benchmark (attain moe)

struct MoeBenchConfig {
  GateConfig gate;            // experts, top-k, groups, scoring
  std::int64_t tokens = 128;  // per rank and micro-batch
  std::int64_t hidden = 7168, inter = 256;
  Mode mode = Mode::normal;
  Payload dtype = Payload::bf16;
  Transport transport = Transport::automatic;
  double timeout_s = 30;
  std::int64_t align = 128;
  std::string expert_backend;  // empty: "attain" when compiled in, else "reference"
  int threads = 1;             // expert GEMM threads per rank
  int reps = 10;
  double skew = 0;
  std::uint64_t seed = 42;
  bool overlap = true, contention = true;
  std::string fault;      // testing aid: "kill:R" or "stop:R" (rank R dies / hangs)
  bool progress = false;  // progress bar with ETA on rank 0's stderr
};

struct TransferStats {
  double latency_us = 0;           // whole operation, median over reps of the slowest rank
  double transfer_us = 0;          // writing to peers until all data arrived
  double layout_us = 0;            // expanding rows / reducing partials
  double bytes = 0;                // bytes that crossed ranks, summed over ranks, per operation
  double gbps = 0;                 // bytes / transfer time
  double bandwidth_fraction = 0;   // 2 * bytes / transfer time / probed copy bandwidth
  double end_to_end_fraction = 0;  // the same over the whole operation's latency
};

struct MoeBenchResult {
  int ranks = 1;
  std::string transport, expert_backend;
  TransferStats dispatch, combine;
  double notify_us = 0;         // normal mode layout exchange (plan), once per routing
  double copy_gbps = 0;         // the denominator of bandwidth_fraction: the larger of
  double copy_gbps_probe = 0;   //   the probed all-thread copy bandwidth (attain probe) and
  double copy_gbps_memcpy = 0;  //   a memcpy run by every rank at once, measured here
  bool verified = false;
  std::string verification;  // what was checked, or what failed
  std::optional<double> serial_ms, overlapped_ms, comm_ms, hidden_fraction;  // overlap
  std::optional<double> gemm_alone_ms, gemm_contended_ms, gemm_slowdown,
      comm_slowdown;       // contention
  std::string skipped;     // why overlap/contention were not measured
  double gemm_gflops = 0;  // expert MLP alone
};

// Collective: every rank calls it; rank 0's result holds the job-wide figures.
MoeBenchResult run_moe_bench(const MoeBenchConfig& cfg);

// The report of one run (schema "attain.moe/1"), written, read and printed by
// src/bench/moe_report.cpp: the settings that shape the figures, then the figures.
inline constexpr const char* kMoeSchema = "attain.moe/1";
struct MoeReport {
  MoeBenchConfig config;
  MoeBenchResult result;
  std::string created, command;  // provenance
};
nlohmann::json to_json(const MoeReport& r);
MoeReport moe_report_from_json(const nlohmann::json& j, std::string_view origin);  // InputError
MoeReport read_moe_report(const std::filesystem::path& file);                      // InputError
// What `attain moe` prints.
std::string moe_report_text(const MoeReport& r);

// ---------------------------------------------------------------- scale-out of the bench

// `mpirun -n R attain bench ...`: each rank runs every R-th op (round robin) and rank 0
// receives all results in the original op order (the others get an empty vector).
// `libraries` is merged from all ranks on rank 0. Needs an MpiSession alive.
std::vector<Result> run_bench_sharded(const std::vector<CatalogOp>& ops, const BenchConfig& cfg,
                                      const Roofline& roof,
                                      std::map<std::string, std::string>* libraries);

// The ops rank `rank` of `ranks` runs: every ranks-th op from the rank-th (round robin).
std::vector<CatalogOp> shard_of(const std::vector<CatalogOp>& ops, int rank, int ranks);
// Collective: every rank's results of its shard (in the shard's order, each op's backends
// together) gathered on rank 0 in the op list's order (the others get an empty vector);
// `libraries` (backend -> version) merged from all ranks on rank 0.
std::vector<Result> gather_sharded(const std::vector<CatalogOp>& ops,
                                   const std::vector<Result>& mine,
                                   std::map<std::string, std::string>* libraries);
// Collective: whether `mine` holds on every rank.
bool all_ranks(bool mine);
// Collective: rank 0's `value` on every rank.
bool from_rank0(bool value);

}  // namespace attain::moe
