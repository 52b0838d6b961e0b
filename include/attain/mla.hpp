// Absorbed MLA decode attention over a paged latent cache (FlashMLA-style), with split-KV
// scheduling, and the two baselines it is measured against.
//
//   q[b, s_q, h, 576]            bf16 (fp32 when the cache is fp32); row m = qi * h + hi
//   kcache[blocks, 64, 576]      bf16 / fp32; fp8: u8 [blocks, 64, 656] (512 e4m3, 4 fp32
//                                scales one per 128 values, 64 bf16 rope values)
//   block_table[b, max_blocks]   i32, seqlens[b] i32
//   -> o[b, s_q, h, 512]         bf16 (fp32 for fp32): softmax(scale * q . K^T) . V, V = row[0:512]
//      lse[b, h, s_q]            f32, natural log; -inf (and o = 0) where no key is visible
// Causal when s_q > 1: query qi sees the first seqlen - s_q + qi + 1 keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attain/backend.hpp"
#include "attain/dtype.hpp"
#include "attain/tensor.hpp"
#include "attain/verify.hpp"

namespace attain {

// One call's operands; every pointer is borrowed. Checked by mla_decode() before any work.
struct MlaParams {
  DType dtype = DType::bf16;  // cache dtype: bf16, fp8 (656-byte rows) or f32
  const void* q = nullptr;
  const void* kcache = nullptr;
  const std::int32_t* block_table = nullptr;
  const std::int32_t* seqlens = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
  std::int64_t b = 0, s_q = 1, h = 0;
  std::int64_t max_blocks = 0;  // columns of block_table
  std::int64_t num_blocks = 0;  // blocks in kcache (table entries are checked against it)
  float softmax_scale = static_cast<float>(kMlaSoftmaxScale);
};

// Split-KV schedule: the work (each request costs ceil(seqlen/64) blocks + a fixed
// overhead) divided evenly over threads; a request may be cut into several splits, each
// producing a partial output merged by lse in the combine step.
inline constexpr int kMlaSplitOverheadBlocks = 4;

struct MlaSplit {
  std::int32_t request = 0;
  std::int32_t block_begin = 0, block_end = 0;  // [begin, end) in the request's block list
  std::int32_t partial = -1;                    // partial slot; -1: the split is the whole request
};

struct MlaSchedule {
  std::vector<std::vector<MlaSplit>> per_slot;  // in processing order
  std::vector<std::int32_t> split_begin;        // per request: first partial slot (-1 if unsplit)
  std::vector<std::int32_t> num_splits;         // per request
  std::int32_t num_partials = 0;
  std::int64_t payload = 0;  // cost (blocks + overhead) each thread is given at most, about
};

// The threads claim the lists in turn, so a thread slowed by other work on its core leaves the
// later lists to its partners. With at least kMlaRequestsPerThread requests a thread, none over
// a quarter of a thread's share, each request is a list of its own, longest first (claimed
// dynamically, whole requests balance to within the last one, and no request is cut); otherwise
// one list a thread, requests cut where a list's payload ends.
inline constexpr int kMlaRequestsPerThread = 4;
MlaSchedule mla_schedule(const std::int32_t* seqlens, std::int64_t b, int threads);
// Partial slots a schedule for `threads` threads can need (workspace sizing).
inline int mla_max_partials(int threads) {
  return 2 * threads;
}

// Reusable state: thread pool and per-thread workspace for up to `max_rows` = s_q * h rows.
// isa: "auto" (the fastest this CPU runs), "avx512_bf16" (bf16 caches multiplied as bf16),
// "avx512", "avx2" or "scalar" (the portable fallback).
class MlaDecoder {
 public:
  MlaDecoder(std::int64_t max_rows, int threads, std::string_view isa = "auto");
  ~MlaDecoder();
  MlaDecoder(const MlaDecoder&) = delete;
  MlaDecoder& operator=(const MlaDecoder&) = delete;
  void run(const MlaParams& p);  // throws InputError on bad params
  int threads() const;
  std::string isa() const;  // which micro-kernels run: "avx512_bf16", "avx512", "avx2", "scalar"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One-shot convenience: builds an MlaDecoder and runs it.
void mla_decode(const MlaParams& p, int threads = 1);
// Throws InputError naming what is wrong (null pointers, dims, dtype).
void mla_check(const MlaParams& p);

// Params viewing an mla_decode op's tensor set (op_tensors() layout).
MlaParams mla_params(TensorSet& set);

// The attain kernel for an mla_decode tensor set (the `attain` backend's path).
std::unique_ptr<Kernel> make_mla_kernel(TensorSet& set, const RunOptions& opt);

// Baseline: naive absorbed attention on the same tensors. Per request, pass 1 materializes
// all scores [s_q*h, seqlen] (one dot product per head and token), a softmax, then pass 2
// reads the cache again for P.V (one axpy per head and token). No register blocking.
std::unique_ptr<Kernel> make_mla_naive_kernel(TensorSet& set, const RunOptions& opt);

// Baseline: MHA-style decode over separately stored, decompressed per-head caches, paged
// like the latent cache: q[b,s_q,h,192], K[pool,64,h,192], V[pool,64,h,128] (bf16, fp32,
// or fp8 e4m3 with one scale per tensor) -> o[b,s_q,h,128], lse[b,h,s_q].
// When the whole cache would exceed `max_cache_bytes`, requests share physical blocks of a
// smaller pool (still far larger than the LLC, so every read comes from memory).
class SeparateKvCase {
 public:
  // seqlens: one per request (each <= op.s); empty = all op.s.
  SeparateKvCase(const Op& op, std::uint64_t seed, std::size_t max_cache_bytes,
                 std::span<const std::int32_t> seqlens = {});
  ~SeparateKvCase();
  SeparateKvCase(const SeparateKvCase&) = delete;
  SeparateKvCase& operator=(const SeparateKvCase&) = delete;
  std::unique_ptr<Kernel> make_kernel(const RunOptions& opt);
  Verification verify(std::int64_t max_rows = 96) const;  // fp64 reference on sampled rows
  std::size_t cache_bytes_read() const;  // K and V bytes one run reads (rows counted per use)
  std::size_t footprint_bytes() const;   // allocated
  double flops() const;                  // 2 * pairs * h * (192 + 128)
  bool aliased() const;                  // requests share pool blocks
  std::int64_t pool_blocks() const;

  struct Data;  // opaque: the caches and outputs (mla_baselines.cpp)

 private:
  std::unique_ptr<Data> d_;
};

}  // namespace attain
