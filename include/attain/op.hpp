// Ops: the matrix operations of LLMs, each named by a spec string that round-trips.
//
//   gemm:m=8,n=4096,k=7168,dtype=bf16                     C[m,n] = A[m,k] . W[n,k]^T
//   batched_gemm:batch=64,m=16,n=4096,k=128,dtype=bf16    per batch item, same as gemm
//   grouped_gemm:groups=256,m=32,n=4096,k=7168,dtype=fp8  MoE experts: groups x (m rows each on
//                average) against W[groups,n,k]; optional skew=S (Zipf exponent of the rows per
//                group; 0 = balanced) and layout=contiguous|masked (DeepGEMM's two layouts)
//   mla_decode:b=64,s=4096,h=128,dtype=bf16               absorbed MLA decode over a paged latent
//                cache (576-wide rows: 512 latent + 64 rope); optional s_q=N (causal)
//
// Tensors of each kind (names, shapes, dtypes) are fixed by op_tensors(); backends read
// and write exactly those.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attain/dtype.hpp"

namespace attain {

// Bad user input (spec strings, configs, files): the message is shown as is.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Good input, but the run could not finish: a peer rank stopped answering, the disk filled. The
// CLI exits 3 for it (2 for InputError, 1 for anything else: an internal error).
struct RuntimeFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The offending input as an error message quotes it: at most 80 characters, then "...".
std::string excerpt(std::string_view input);

enum class OpKind : std::uint8_t { gemm, batched_gemm, grouped_gemm, mla_decode };
enum class GroupedLayout : std::uint8_t { contiguous, masked };

std::string_view kind_name(OpKind k);
std::optional<OpKind> parse_kind(std::string_view name);  // the names kind_name() gives

inline constexpr std::int64_t kMaxDim = std::int64_t{1} << 31;  // any single dimension
// Groups of a grouped GEMM (experts): 384 is the most a bundled model routes to; the bound keeps
// the per-group row counts (group_rows) small whatever a spec says.
inline constexpr std::int64_t kMaxGroups = 65536;
inline constexpr int kMlaDk = 576;           // latent 512 + rope 64: the row of the cache
inline constexpr int kMlaDv = 512;           // V = the first 512 values of each row
inline constexpr int kMlaBlock = 64;         // tokens per cache block (paged)
inline constexpr int kMlaFp8RowBytes = 656;  // 512 e4m3 + 4 fp32 scales + 64 bf16 rope

struct Op {
  OpKind kind = OpKind::gemm;
  DType dtype = DType::f32;
  std::int64_t m = 0, n = 0, k = 0;  // gemm-like dims (grouped: mean rows per group)
  std::int64_t batch = 1;            // batched_gemm
  std::int64_t groups = 1;           // grouped_gemm
  double skew = 0.0;                 // grouped_gemm: 0 = balanced rows per group
  GroupedLayout layout = GroupedLayout::contiguous;
  std::int64_t b = 0, s = 0, h = 0, s_q = 1;  // mla_decode: batch, context, q heads, q length

  // Canonical spec string; parse(spec()) == *this.
  std::string spec() const;
  // Throws InputError naming the offending key or value.
  static Op parse(std::string_view spec);
  // Shorthand for a gemm: "MxNxK".
  static Op gemm_shape(std::string_view mxnxk, DType dt);

  DType out_dtype() const;  // fp32 for fp32 ops, fp16 for fp16, bf16 otherwise
  double flops() const;     // 2*M*N*K summed (mla: QK^T and PV, causal-exact)
  double bytes() const;     // inputs read once + outputs written once, stored dtypes
  // mla_decode over a ragged batch: request i holds seqlens[i] <= s tokens (b entries). The
  // same model as flops() and bytes(), which are these with every request at s; other kinds
  // ignore `seqlens`.
  double flops(std::span<const std::int32_t> seqlens) const;
  double bytes(std::span<const std::int32_t> seqlens) const;
  double intensity() const { return flops() / bytes(); }
  std::int64_t total_rows() const;               // grouped: sum of group_rows()
  std::vector<std::int64_t> group_rows() const;  // grouped: rows of each group (deterministic)
  std::int64_t max_group_rows() const;           // grouped: the masked layout's max_m
  void validate() const;                         // throws InputError

  bool operator==(const Op&) const = default;
};

// Where an op comes from in a model's forward pass.
struct Provenance {
  std::string model, layer, phase;  // phase: "prefill" or "decode"
  std::int64_t tokens = 0;          // tokens in the pass (prefill) or batch size (decode)
  std::int64_t context = 0;         // attention context length (0 where not relevant)
  std::int64_t count = 1;           // occurrences per forward pass
};

struct CatalogOp {
  Op op;
  Provenance prov;
};

// Tensors of an op, in a fixed order: inputs first, then outputs.
struct TensorDesc {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  bool output = false;
  std::int64_t numel() const;
  std::size_t nbytes() const;
};
//  gemm          a[m,k] w[n,k] (fp8: a_scale[m,kb] w_scale[nb,kb] f32, kb = ceil(k/128))  -> c[m,n]
//  batched_gemm  a[batch,m,k] w[batch,n,k]                                                ->
//  c[batch,m,n] grouped contiguous  a[rows,k] w[groups,n,k] offsets[groups+1] i32 (rows of group g
//  are
//                offsets[g]..offsets[g+1]) (fp8: a_scale[rows,kb] w_scale[groups,nb,kb]) ->
//                c[rows,n]
//  grouped masked      a[groups,max_m,k] w[groups,n,k] counts[groups] i32 (valid rows)
//                (fp8: a_scale[groups,max_m,kb] w_scale[groups,nb,kb])                  ->
//                c[groups,max_m,n]
//  mla_decode    q[b,s_q,h,576] (bf16; fp32 for fp32) kcache[blocks,64,576] (fp8: u8
//  [blocks,64,656])
//                block_table[b,max_blocks] i32 seqlens[b] i32 -> o[b,s_q,h,512], lse[b,h,s_q] f32
std::vector<TensorDesc> op_tensors(const Op& op);

}  // namespace attain
