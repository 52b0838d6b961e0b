// MLA decode over the paged latent cache: each CTA takes kMlaRowsPerCta query rows of one
// split-KV unit, stages each 64-token cache block in shared memory once and uses it for both
// QK^T (all 576 values) and PV (the first 512), with an online softmax; split units write
// partial (o, lse) rows that the combine kernel merges by lse. fp32 math on CUDA cores.
#include <cmath>
#include <stdexcept>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/runtime.hpp"

namespace attain::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kRows = kMlaRowsPerCta;  // 16
constexpr int kDk = kCacheDk, kDv = kCacheDv, kBlk = kCacheBlock;
static_assert(kThreads * 2 == kDv, "PV: each thread owns two output columns");
static_assert(kThreads == kBlk * kRows / 4, "QK: each thread computes 4 rows of one token");

// Shared-memory row of one cache slot, in 32-bit words, padded by one word so that threads
// reading the same column of different rows hit different banks.
template <bool FP8>
struct Row {
  static constexpr int kWords = FP8 ? kCacheFp8RowBytes / 4 : kDk / 2;  // 164 or 288
  static constexpr int kStride = kWords + 1;
  static constexpr int kBytes = kWords * 4;

  // Values 2*d2 and 2*d2+1 of the row, dequantized (fp8: times the 128-block's scale).
  __device__ __forceinline__ static float2 pair(const std::uint32_t* row, int d2) {
    if constexpr (!FP8) {
      return dev::bf16x2_to_float2(row[d2]);
    } else {
      if (d2 < kDv / 2) {
        const std::uint32_t w = row[d2 >> 1] >> ((d2 & 1) * 16);
        const float sc = __uint_as_float(row[kDv / 4 + (d2 >> 6)]);
        const float2 v = dev::e4m3x2_to_float2(w);
        return make_float2(v.x * sc, v.y * sc);
      }
      // 64 bf16 rope values after 512 e4m3 bytes and 4 fp32 scales (word 132 on).
      return dev::bf16x2_to_float2(row[kDv / 4 + 4 + (d2 - kDv / 2)]);
    }
  }
};

template <bool FP8>
constexpr std::size_t smem_bytes() {
  return sizeof(std::uint32_t) * kBlk * Row<FP8>::kStride +  // cache block
         sizeof(float) * kRows * kDk +                       // q rows (scaled)
         sizeof(float) * kRows * kBlk +                      // scores / probabilities
         sizeof(float) * kRows * 3 + sizeof(int) * kRows;    // max, sum, alpha, visible
}

// grid (row tiles, units); block kThreads.
template <bool FP8>
__global__ void __launch_bounds__(kThreads) mla_decode_kernel(MlaArgs p) {
  using R = Row<FP8>;
  extern __shared__ float4 smem4[];
  auto* tile = reinterpret_cast<std::uint32_t*>(smem4);
  float* qs = reinterpret_cast<float*>(tile + kBlk * R::kStride);
  float* S = qs + kRows * kDk;
  float* row_m = S + kRows * kBlk;
  float* row_l = row_m + kRows;
  float* row_a = row_l + kRows;
  int* vis = reinterpret_cast<int*>(row_a + kRows);

  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const MlaUnit u = p.units[blockIdx.y];
  const std::int64_t M = p.s_q * p.h, m0 = static_cast<std::int64_t>(blockIdx.x) * kRows;
  const int rows = static_cast<int>(M - m0 < kRows ? M - m0 : kRows);
  const std::int64_t bi = u.request, seqlen = p.seqlens[bi];
  const float kInf = INFINITY;

  // Query rows, scaled; rows past the tile's end are 0 and never visible.
  const auto* q = static_cast<const std::uint16_t*>(p.q) + (bi * M + m0) * kDk;
  for (int i = tid; i < kRows * kDk; i += kThreads)
    qs[i] = i / kDk < rows ? dev::bf16_to_float(q[i]) * p.softmax_scale : 0.0f;
  if (tid < kRows) row_m[tid] = -kInf, row_l[tid] = 0.0f;

  float acc[kRows][2];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = 0.0f;

  const auto* cache = static_cast<const std::uint8_t*>(p.kcache);
  for (int blk = u.block_begin; blk < u.block_end; ++blk) {
    const std::int64_t t0 = static_cast<std::int64_t>(blk) * kBlk;
    const int nt = static_cast<int>(seqlen - t0 < kBlk ? seqlen - t0 : kBlk);
    const std::int64_t phys = p.block_table[bi * p.max_blocks + blk];
    __syncthreads();  // the previous block's tile and probabilities are no longer read
    // Stage the block's live rows: 16-byte global loads, 4-byte shared stores (padded rows).
    const std::uint8_t* src = cache + phys * kBlk * R::kBytes;
    constexpr int kChunks = R::kWords / 4;
    for (int c = tid; c < nt * kChunks; c += kThreads) {
      const int r = c / kChunks, w4 = c % kChunks;
      const uint4 v = __ldcs(reinterpret_cast<const uint4*>(src + r * R::kBytes) + w4);
      std::uint32_t* dst = tile + r * R::kStride + w4 * 4;
      dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
    }
    if (tid < kRows) {
      // Query qi of s_q sees the first seqlen - s_q + qi + 1 keys (causal).
      const std::int64_t qi = (m0 + tid) / p.h;
      const std::int64_t v = tid < rows ? seqlen - p.s_q + qi + 1 - t0 : 0;
      vis[tid] = static_cast<int>(v < 0 ? 0 : v > nt ? nt : v);
    }
    __syncthreads();

    // Scores: thread -> token j, rows r0..r0+3. Q rows are broadcast, K rows conflict-free.
    {
      const int j = tid % kBlk, r0 = tid / kBlk * 4;
      float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (j < nt) {
        const std::uint32_t* krow = tile + j * R::kStride;
#pragma unroll 4
        for (int d2 = 0; d2 < kDk / 2; ++d2) {
          const float2 kv = R::pair(krow, d2);
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            const float2 qv = reinterpret_cast<const float2*>(qs + (r0 + r) * kDk)[d2];
            s[r] = fmaf(qv.x, kv.x, fmaf(qv.y, kv.y, s[r]));
          }
        }
      }
#pragma unroll
      for (int r = 0; r < 4; ++r) S[(r0 + r) * kBlk + j] = j < vis[r0 + r] ? s[r] : -kInf;
    }
    __syncthreads();

    // Online softmax: warp w updates rows 2w and 2w+1 (lane: tokens lane and lane + 32).
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const int r = warp * 2 + rr;
      const float x0 = S[r * kBlk + lane], x1 = S[r * kBlk + lane + 32];
      const float m_old = row_m[r];
      const float m_new = fmaxf(m_old, dev::warp_max(fmaxf(x0, x1)));
      float p0 = 0.0f, p1 = 0.0f, alpha = 1.0f;
      if (m_new != -kInf) {
        p0 = expf(x0 - m_new), p1 = expf(x1 - m_new);  // exp(-inf) = 0 for masked tokens
        alpha = expf(m_old - m_new);
      }
      const float sum = dev::warp_sum(p0 + p1);
      S[r * kBlk + lane] = p0, S[r * kBlk + lane + 32] = p1;
      __syncwarp();
      if (lane == 0) row_l[r] = row_l[r] * alpha + sum, row_m[r] = m_new, row_a[r] = alpha;
    }
    __syncthreads();

    // PV: thread owns output columns 2*tid, 2*tid+1 of all rows; V = the row's first 512.
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[r][0] *= row_a[r], acc[r][1] *= row_a[r];
    for (int j = 0; j < nt; ++j) {
      const float2 v = R::pair(tile + j * R::kStride, tid);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const float pr = S[r * kBlk + j];
        acc[r][0] = fmaf(pr, v.x, acc[r][0]);
        acc[r][1] = fmaf(pr, v.y, acc[r][1]);
      }
    }
  }
  __syncthreads();

  // Normalize; write o and lse, or this unit's partial.
  for (int r = 0; r < rows; ++r) {
    const float l = row_l[r];
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    const float lse = l > 0.0f ? row_m[r] + logf(l) : -kInf;
    const std::int64_t m = m0 + r;
    if (u.partial < 0) {
      auto* o = static_cast<std::uint32_t*>(p.o) + ((bi * M + m) * kDv) / 2;
      o[tid] = static_cast<std::uint32_t>(dev::float_to_bf16(acc[r][0] * inv)) |
               static_cast<std::uint32_t>(dev::float_to_bf16(acc[r][1] * inv)) << 16;
      if (tid == 0) {
        const std::int64_t qi = m / p.h, hi = m % p.h;
        p.lse[(bi * p.h + hi) * p.s_q + qi] = lse;
      }
    } else {
      float2* o = reinterpret_cast<float2*>(p.part_o + (u.partial * M + m) * kDv);
      o[tid] = make_float2(acc[r][0] * inv, acc[r][1] * inv);
      if (tid == 0) p.part_lse[u.partial * M + m] = lse;
    }
  }
}

// grid (s_q * h, b); block 128: merges a split request's partial rows by their lse.
__global__ void __launch_bounds__(128) mla_combine_kernel(MlaArgs p) {
  const std::int64_t bi = blockIdx.y, m = blockIdx.x, M = p.s_q * p.h;
  const int n = p.num_splits[bi];
  if (n < 2) return;
  const int first = p.split_begin[bi];
  const float kInf = INFINITY;
  float lmax = -kInf;
  for (int k = 0; k < n; ++k) lmax = fmaxf(lmax, p.part_lse[(first + k) * M + m]);
  float lse = -kInf;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (lmax != -kInf) {
    float sum = 0.0f;
    for (int k = 0; k < n; ++k) sum += expf(p.part_lse[(first + k) * M + m] - lmax);
    lse = lmax + logf(sum);
    for (int k = 0; k < n; ++k) {
      const float w = expf(p.part_lse[(first + k) * M + m] - lse);
      const float4 v =
          reinterpret_cast<const float4*>(p.part_o + ((first + k) * M + m) * kDv)[threadIdx.x];
      acc[0] += w * v.x, acc[1] += w * v.y, acc[2] += w * v.z, acc[3] += w * v.w;
    }
  }
  auto* o = static_cast<std::uint32_t*>(p.o) + ((bi * M + m) * kDv) / 2 + 2 * threadIdx.x;
  o[0] = static_cast<std::uint32_t>(dev::float_to_bf16(acc[0])) |
         static_cast<std::uint32_t>(dev::float_to_bf16(acc[1])) << 16;
  o[1] = static_cast<std::uint32_t>(dev::float_to_bf16(acc[2])) |
         static_cast<std::uint32_t>(dev::float_to_bf16(acc[3])) << 16;
  if (threadIdx.x == 0) {
    const std::int64_t qi = m / p.h, hi = m % p.h;
    p.lse[(bi * p.h + hi) * p.s_q + qi] = lse;
  }
}

template <bool FP8>
void launch_typed(const MlaArgs& a, cudaStream_t s) {
  constexpr std::size_t smem = smem_bytes<FP8>();
  static const cudaError_t attr = cudaFuncSetAttribute(
      mla_decode_kernel<FP8>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  ATTAIN_CUDA_CHECK(attr);
  const dim3 grid(static_cast<unsigned>(a.row_tiles), static_cast<unsigned>(a.num_units));
  mla_decode_kernel<FP8><<<grid, kThreads, smem, s>>>(a);
  ATTAIN_CUDA_CHECK_LAUNCH("mla_decode_kernel");
}

}  // namespace

void launch_mla_decode(const MlaArgs& a, cudaStream_t s) {
  if (a.b == 0 || a.num_units == 0) return;
  if (a.num_units > 65535) throw std::runtime_error("mla_decode: more than 65535 units");
  if (a.fp8)
    launch_typed<true>(a, s);
  else
    launch_typed<false>(a, s);
  if (a.any_split) {
    const dim3 grid(static_cast<unsigned>(a.s_q * a.h), static_cast<unsigned>(a.b));
    mla_combine_kernel<<<grid, 128, 0, s>>>(a);
    ATTAIN_CUDA_CHECK_LAUNCH("mla_combine_kernel");
  }
}

}  // namespace attain::cuda
