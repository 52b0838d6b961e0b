// attain's CPU GEMM engine: C = alpha * op(A) . op(B) + beta * C, fp32 accumulation.
//
// Storage dtypes: fp32, bf16, fp16 and fp8 e4m3 (with DeepSeek-style block scales) for A and B
// independently; C is fp32, bf16 or fp16, row-major. The LLM layout is the default:
//   A (M,K) row-major, K contiguous          trans_a = N, lda >= K
//   W (N,K) row-major, K contiguous          trans_b = T, ldb >= K   (C = A . W^T)
// and the BLAS transposes cover the rest (trans_a = T: A stored (K,M); trans_b = N: B stored
// (K,N)).
//
// Every choice the auto-scheduler may vary is a field of Schedule; zero / automatic fields are
// filled by a readable heuristic (describe() shows the result).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attain/dtype.hpp"

namespace attain::gemm {

enum class Trans : std::uint8_t { N, T };
// Instruction sets a micro-kernel is written for, best last.
enum class Isa : std::uint8_t { automatic, scalar, avx2, avx512 };
// packed: BLIS five loops with packed A and B panels. decode: small M, no packing, the weights
// streamed once and converted in registers, threads split along N. direct: W stored (N, K), its
// rows read in place (fp32, bf16 pairs) or converted a tile at a time (other dtypes), never
// packed, against A^T packed once per call, threads split along N; for mid-size M, where packing
// W costs as much as a third of the time.
enum class Path : std::uint8_t { automatic, packed, decode, direct };
// The packed path's loop order over blocks of M and K. mk: each MC x NC tile of C is finished
// over all of K before the next (B packed for the whole K of a column block, the tile in L2).
// km: K blocks outside M blocks, as in BLIS (a KC x NC block of B packed once and used by every
// MC block, C updated once per K block): B's block stays KC deep whatever K is, so NC can be
// twice as wide and A is packed half as often. km needs C updated in place: with 16-bit C a
// schedule resolves to mk (its fp32 tile).
enum class Order : std::uint8_t { automatic, mk, km };
// Batched and grouped calls: every item's blocks in one parallel region (on), or one region per
// item, each item cut for all threads (off). automatic: one region where the items' rough
// costs share out to the threads no worse than one region each would, its fork/join counted
// (fuses_items()).
enum class Fuse : std::uint8_t { automatic, on, off };

std::string_view isa_name(Isa isa);
std::string_view path_name(Path p);
std::string_view order_name(Order o);
std::string_view fuse_name(Fuse f);  // "auto", "1", "0" (the text form's values)

struct Schedule {
  Path path = Path::automatic;
  Isa isa = Isa::automatic;    // micro-kernel family (the best the CPU runs by default)
  int mc = 0, nc = 0, kc = 0;  // cache blocks; 0 = the per-CPU table (nc: K-aware)
  // Threads of the parallel region (0 = Params::threads; at most Params::threads).
  int threads = 0;
  // Work blocks of C: a grid threads_m x threads_n (0 = heuristic). Outside fused items it is
  // the thread grid (threads_m * threads_n == threads, or with packed split-K
  // threads_m * threads_n * split_k == threads); with fuse_items it is the blocks each item is
  // cut into, all items' blocks shared by the region's threads.
  int threads_m = 0, threads_n = 0;
  // The decode path: K elements per pipeline tile (0 = default).
  int decode_k_tile = 0;
  // Split-K, both paths: K cut into split_k slices (multiples of 128) computed as separate
  // blocks into fp32 partial sums, added at the end (0 = heuristic on the packed path, none on
  // the decode path unless the auto-scheduler chooses it; 1 = none).
  int split_k = 0;
  int stages = 0;                  // tile pipeline depth / prefetch distance (0 = Params::stages)
  Order order = Order::automatic;  // the packed path's loop order
  // Batched and grouped calls: one parallel region for every item's blocks or one per item.
  Fuse fuse_items = Fuse::automatic;
  // The swapped operands: C^T = W . A^T, A's rows read in place. On the direct path (path direct
  // or automatic) W^T is packed once and C written as whole rows; on the decode path (path
  // decode, N <= 64) A's rows are streamed as the decode path's weights and C's rows come from
  // a transposed tile. A stored (M, K), W stored (N, K), neither fp8; not with split_k. For
  // small N against large M (attention's N = head_dim = 128, an MoE router's 8 experts), short
  // K, and large products. false: the heuristic may still choose it (resolve() shows the
  // choice).
  bool swap = false;

  bool operator==(const Schedule&) const = default;
};

// The range of every schedule field (0 is always "automatic"). The engine refuses a schedule
// outside them before it runs, and parse_schedule refuses to read one: a tuning-cache entry is
// input from a file, and a cache block of 2^31 columns overflows the blocking arithmetic.
inline constexpr int kMaxCacheBlock = 1 << 16;    // mc, nc, kc (the tables use up to 8192)
inline constexpr int kMaxScheduleThreads = 1024;  // threads, threads_m, threads_n, split_k
inline constexpr int kMaxDecodeKTile = 1 << 20;
// Throws std::invalid_argument naming the first field outside its range, and the range.
void check_schedule_ranges(const Schedule& s);
// Whether the schedule's grid makes its region's threads (Schedule::threads, or `threads` where
// it is 0): threads_m * threads_n (times split_k) == threads, or no grid; any grid with fused
// items, where it is the blocks each item is cut into.
bool grid_makes_threads(const Schedule& s, int threads, bool fused);

// Text form of a schedule, the one the tuning cache and `attain tune --explain` show:
// "path=decode isa=avx512 mc=144 nc=864 kc=256 threads=2 grid=1x2 k_tile=1024 split_k=1
// stages=2 fuse=0 swap=0". parse_schedule reads it back (fields may be omitted: automatic) and
// throws std::invalid_argument naming a bad field.
std::string to_string(const Schedule& s);
Schedule parse_schedule(std::string_view text);

struct Params {
  // op(A): (M,K). fp8 needs a_scale: one fp32 per (row i of op(A), 128-wide K block),
  // a_scale[i * lda_scale + kb], lda_scale default ceil(K/128).
  const void* a = nullptr;
  DType a_type = DType::f32;
  Trans trans_a = Trans::N;
  std::int64_t lda = 0;  // 0 = packed (K for N, M for T)
  const float* a_scale = nullptr;
  std::int64_t lda_scale = 0;

  // op(B): (K,N). fp8 needs b_scale: one fp32 per (128-row block of N, 128-wide K block),
  // b_scale[(j/128) * ldb_scale + kb], ldb_scale default ceil(K/128).
  const void* b = nullptr;
  DType b_type = DType::f32;
  Trans trans_b = Trans::T;
  std::int64_t ldb = 0;  // 0 = packed (K for T, N for N)
  const float* b_scale = nullptr;
  std::int64_t ldb_scale = 0;

  // C (M,N) row-major, fp32 / bf16 / fp16. beta == 0: C is not read (NaN in C is overwritten).
  void* c = nullptr;
  DType c_type = DType::f32;
  std::int64_t ldc = 0;  // 0 = N

  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;

  int threads = 1;  // threads of the persistent pool (the caller is one of them)
  int stages = 2;   // tile pipeline depth: 1 = no prefetch of the next tile
  Schedule schedule;
};

// Throws std::invalid_argument naming the offending field. M = 0 or N = 0 is a no-op;
// K = 0 gives C = beta * C.
void gemm(const Params& p);

// The schedule gemm(p) would run with every automatic field resolved.
Schedule resolve(const Params& p);
// Why: the heuristic's reason for each choice it made for p (the path, the operand swap), one
// line each, then describe() of the resolved schedule. Fields the caller set are not explained.
std::vector<std::string> explain(const Params& p);
// A resolved schedule as readable text (the kernel, blocks, threads, grid, ...; the items'
// regions of a batched call are the call's: tune::describe adds them).
std::string describe(const Schedule& s);

// Batched: batch independent products; item b uses a + b*stride_a etc. (element strides).
struct BatchStrides {
  std::int64_t a = 0, b = 0, c = 0, a_scale = 0, b_scale = 0;
};
void batched_gemm(const Params& p, std::int64_t batch, const BatchStrides& s);

// Grouped (MoE experts, DeepGEMM's layouts). W holds groups x (N,K) row-major weights
// (p.b, group stride N*ldb; fp8 scales group stride ceil(N/128)*ldb_scale).
// contiguous: rows offsets[g]..offsets[g+1] of A and C belong to group g (p.m = total rows).
void grouped_gemm_contiguous(const Params& p, std::int64_t groups, const std::int32_t* offsets);
// masked: A (groups, max_m, K), C (groups, max_m, N); only counts[g] rows of group g are read
// and written (padding rows may hold anything, NaN included). p.m = max_m.
void grouped_gemm_masked(const Params& p, std::int64_t groups, const std::int32_t* counts);

// One GEMM call of any form, as the scheduler and the grouped executor see it.
enum class Form : std::uint8_t { single, batched, grouped_contiguous, grouped_masked };
struct Call {
  Params p;
  Form form = Form::single;
  std::int64_t items = 1;               // batch or groups
  BatchStrides strides;                 // batched
  const std::int32_t* index = nullptr;  // grouped: offsets (groups + 1) or counts (groups)
};
std::string_view form_name(Form f);
// Runs the call in its form (gemm / batched_gemm / grouped_gemm_*).
void run(const Call& c);
// Whether run(c) puts every item's blocks in one region: Fuse::on, or Fuse::automatic where the
// items' rough costs (weights streamed plus flops, as for the thread-count choice), dealt
// largest first to the threads, finish no later than the items one after the other with all
// threads each plus a fork/join per item. Single calls: false.
bool fuses_items(const Call& c);
// Independent calls in ONE parallel region of `threads` threads: every call's (every item's)
// blocks are shared out to the threads, largest first, so a chain of small ops pays one
// fork/join instead of one per op. Each call's own schedule gives its path, blocks and
// split-K; its thread count is the region's. The calls must not write what another reads.
void run_together(const Call* calls, std::size_t count, int threads);

// Which micro-kernel family this CPU gets: the best that cpu_features() (cpu_features.hpp, the
// ATTAIN_ISA cap included) runs. ATTAIN_ISA=avx512 also leaves out the bf16 pairs, which need
// the avx512_bf16 level.
Isa detected_isa();
// True when cpu_features() can run kernels of this family.
bool isa_supported(Isa isa);

}  // namespace attain::gemm
