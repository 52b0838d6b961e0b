// Argument checks: a call the engine cannot run is refused before any work, with what is wrong.
#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "attain/tile.hpp"
#include "core/util.hpp"
#include "kernels/cpu/gemm/dispatch.hpp"
#include "kernels/cpu/gemm/frame/frame.hpp"
#include "kernels/cpu/gemm/paths/path.hpp"

namespace attain::gemm {

namespace detail {

void check_params(const Params& p, bool fused) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("gemm: " + what); };
  if (p.m < 0 || p.n < 0 || p.k < 0) fail("negative dimension");
  for (DType t : {p.a_type, p.b_type})
    if (!is_op_dtype(t)) fail(fmt::format("input dtype {} not supported", dtype_name(t)));
  if (p.c_type != DType::f32 && p.c_type != DType::bf16 && p.c_type != DType::f16)
    fail(fmt::format("output dtype {} not supported (fp32, bf16, fp16)", dtype_name(p.c_type)));
  if (p.threads < 1 || p.threads > kMaxScheduleThreads)
    fail(fmt::format("threads={} outside 1..{}", p.threads, kMaxScheduleThreads));
  if (p.stages < 1 || p.stages > tile::kMaxStages)
    fail(fmt::format("stages must be 1..{}", tile::kMaxStages));
  const Schedule& s = p.schedule;
  if (s.isa != Isa::automatic && !isa_supported(s.isa))
    fail(fmt::format("isa {} not supported by this CPU", isa_name(s.isa)));
  try {
    check_schedule_ranges(s);
  } catch (const std::invalid_argument& e) {
    fail(e.what());
  }
  if (s.threads > p.threads) fail("schedule threads > Params::threads");
  if (!grid_makes_threads(s, p.threads, fused))
    fail("threads_m * threads_n (times split_k) must equal threads");
  if (p.m == 0 || p.n == 0) return;
  const KernelFamily& fam = family(s.isa == Isa::automatic ? detected_isa() : s.isa);
  if (s.path == Path::direct && s.split_k > 1) fail("direct path takes no split_k");
  if (s.swap && s.split_k > 1) fail("swap runs the direct or the decode path (no split_k)");
  if (const std::string why = path_refusal(p, s, fam); !why.empty()) fail(why);
  if (p.c == nullptr) fail("c is null");
  if (p.k > 0 && (p.a == nullptr || p.b == nullptr)) fail("a or b is null");
  if (p.ldc != 0 && p.ldc < p.n) fail("ldc < n");
  const std::int64_t a_cols = p.trans_a == Trans::N ? p.k : p.m;
  const std::int64_t b_cols = p.trans_b == Trans::T ? p.k : p.n;
  if (p.lda != 0 && p.lda < a_cols) fail("lda too small for op(A)");
  if (p.ldb != 0 && p.ldb < b_cols) fail("ldb too small for op(B)");
  const std::int64_t kb = ceil_div(p.k, kFp8Block);
  if (p.a_type == DType::fp8 && p.k > 0 && p.a_scale == nullptr) fail("fp8 A needs a_scale");
  if (p.b_type == DType::fp8 && p.k > 0 && p.b_scale == nullptr) fail("fp8 B needs b_scale");
  if (p.lda_scale != 0 && p.lda_scale < kb) fail("lda_scale < ceil(k/128)");
  if (p.ldb_scale != 0 && p.ldb_scale < kb) fail("ldb_scale < ceil(k/128)");
}

void check_call(const Call& c) {
  if (c.items < 0)
    throw std::invalid_argument(c.form == Form::batched ? "gemm: negative batch"
                                                        : "gemm: negative group count");
  if (c.form == Form::grouped_contiguous || c.form == Form::grouped_masked) {
    if (c.p.trans_a != Trans::N || c.p.trans_b != Trans::T)
      throw std::invalid_argument("gemm: grouped GEMM takes A (rows, K) and W (groups, N, K)");
    if (c.items > 0 && c.index == nullptr)
      throw std::invalid_argument("gemm: grouped GEMM needs offsets / counts");
  }
}

}  // namespace detail

void check_schedule_ranges(const Schedule& s) {
  auto in = [](std::string_view field, int v, int hi) {
    if (v < 0 || v > hi)
      throw std::invalid_argument(fmt::format("schedule: {}={} outside 0..{}", field, v, hi));
  };
  in("mc", s.mc, kMaxCacheBlock);
  in("nc", s.nc, kMaxCacheBlock);
  in("kc", s.kc, kMaxCacheBlock);
  in("threads", s.threads, kMaxScheduleThreads);
  in("grid (threads_m)", s.threads_m, kMaxScheduleThreads);
  in("grid (threads_n)", s.threads_n, kMaxScheduleThreads);
  in("split_k", s.split_k, kMaxScheduleThreads);
  in("k_tile", s.decode_k_tile, kMaxDecodeKTile);
  in("stages", s.stages, tile::kMaxStages);
  if (s.threads_m * s.threads_n > kMaxScheduleThreads)  // (each at most 1024: no overflow)
    throw std::invalid_argument(fmt::format("schedule: grid {}x{} has more than {} blocks",
                                            s.threads_m, s.threads_n, kMaxScheduleThreads));
  if ((s.threads_m == 0) != (s.threads_n == 0))
    throw std::invalid_argument("schedule: grid needs both threads_m and threads_n, or neither");
  if (s.decode_k_tile % kFp8Block != 0)
    throw std::invalid_argument(
        fmt::format("schedule: k_tile={} is not a multiple of {}", s.decode_k_tile, kFp8Block));
}

bool grid_makes_threads(const Schedule& s, int threads, bool fused) {
  const int region = s.threads != 0 ? s.threads : threads;
  const int grid = s.threads_m * s.threads_n;
  return fused || grid == 0 || grid == region || grid * std::max(s.split_k, 1) == region;
}

}  // namespace attain::gemm
