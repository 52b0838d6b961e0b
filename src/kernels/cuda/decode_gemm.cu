// Decode GEMM for small M: W[n,k] streamed once with 16-byte loads, fp32 accumulation,
// optional split-K with a deterministic reduction. Plan: plan.hpp (plan_decode_gemm).
#include <algorithm>
#include <stdexcept>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/runtime.hpp"

namespace attain::cuda {

namespace {

constexpr int kThreads = kDecodeWarps * 32;

// G consecutive values of one row starting at column k0 (a multiple of G), decoded to fp32
// without scales. VEC: the whole group is in range and 16-byte aligned (one load).
// Otherwise element-wise loads; columns at or past `kend` read as 0.
template <bool FP8, bool VEC, bool STREAM>
__device__ __forceinline__ void load_group(const std::uint8_t* row, std::int64_t k0,
                                           std::int64_t kend, float* out) {
  constexpr int kEb = FP8 ? 1 : 2;
  constexpr int G = 16 / kEb;
  if constexpr (VEC) {
    const uint4* p = reinterpret_cast<const uint4*>(row + k0 * kEb);
    const uint4 v = STREAM ? __ldcs(p) : __ldg(p);
    const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (FP8) {
        const float2 lo = dev::e4m3x2_to_float2(w[i]), hi = dev::e4m3x2_to_float2(w[i] >> 16);
        out[4 * i] = lo.x, out[4 * i + 1] = lo.y, out[4 * i + 2] = hi.x, out[4 * i + 3] = hi.y;
      } else {
        const float2 f = dev::bf16x2_to_float2(w[i]);
        out[2 * i] = f.x, out[2 * i + 1] = f.y;
      }
    }
  } else {
#pragma unroll
    for (int e = 0; e < G; ++e) {
      const std::int64_t kk = k0 + e;
      if (kk >= kend) {
        out[e] = 0.0f;
      } else if constexpr (FP8) {
        out[e] = dev::e4m3x2_to_float2(row[kk]).x;
      } else {
        out[e] = dev::bf16_to_float(reinterpret_cast<const std::uint16_t*>(row)[kk]);
      }
    }
  }
}

// grid (n tiles, K slices, m chunks x batches); block kThreads. Warp w of CTA x owns W rows
// [(x * warps + w) * NW, +NW); the CTA's m chunk is MT rows of A. No shared memory and no
// block-wide barrier: each warp exits on its own.
template <bool FP8, int MT, int NW, bool VEC>
__global__ void __launch_bounds__(kThreads)
    decode_gemm_kernel(DecodeGemmArgs p, std::int64_t k_chunk, std::int64_t mchunks) {
  constexpr int kEb = FP8 ? 1 : 2;
  constexpr int G = 16 / kEb;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t n0 = (static_cast<std::int64_t>(blockIdx.x) * kDecodeWarps + warp) * NW;
  const std::int64_t batch = blockIdx.z / mchunks;
  const std::int64_t m0 = (blockIdx.z % mchunks) * MT;
  const std::int64_t rows = p.counts ? min(p.m, static_cast<std::int64_t>(p.counts[batch])) : p.m;
  if (m0 >= rows || n0 >= p.n) return;
  const std::int64_t kb = (p.k + 127) / 128, nb = (p.n + 127) / 128;
  const auto* A = static_cast<const std::uint8_t*>(p.a) + batch * p.m * p.k * kEb;
  const auto* W = static_cast<const std::uint8_t*>(p.w) + batch * p.n * p.k * kEb;
  const std::int64_t kbeg = static_cast<std::int64_t>(blockIdx.y) * k_chunk;
  const std::int64_t kend = min(p.k, kbeg + k_chunk);

  float acc[MT][NW];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NW; ++j) acc[i][j] = 0.0f;

  for (std::int64_t k0 = kbeg + lane * G; k0 < kend; k0 += 32 * G) {
    float wv[NW][G];
#pragma unroll
    for (int j = 0; j < NW; ++j) {
      if (n0 + j < p.n) {
        load_group<FP8, VEC, true>(W + (n0 + j) * p.k * kEb, k0, kend, wv[j]);
      } else {
#pragma unroll
        for (int e = 0; e < G; ++e) wv[j][e] = 0.0f;
      }
    }
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      if (m0 + i >= rows) break;
      float av[G];
      load_group<FP8, VEC, false>(A + (m0 + i) * p.k * kEb, k0, kend, av);
      float as = 1.0f;
      if constexpr (FP8) as = __ldg(p.a_scale + (batch * p.m + m0 + i) * kb + k0 / 128);
#pragma unroll
      for (int j = 0; j < NW; ++j) {
        float d = 0.0f;
#pragma unroll
        for (int e = 0; e < G; ++e) d = fmaf(av[e], wv[j][e], d);
        if constexpr (FP8) {
          // A group of 16 never straddles a 128-block: k0 is a multiple of 16.
          if (n0 + j < p.n)
            d *= as * __ldg(p.w_scale + (batch * nb + (n0 + j) / 128) * kb + k0 / 128);
        }
        acc[i][j] += d;
      }
    }
  }

  // Butterfly sums leave every lane with every total; lane (i * NW + j) % 32 stores (i, j).
#pragma unroll
  for (int i = 0; i < MT; ++i) {
#pragma unroll
    for (int j = 0; j < NW; ++j) {
      const float v = dev::warp_sum(acc[i][j]);
      const std::int64_t r = m0 + i, col = n0 + j;
      if (lane != (i * NW + j) % 32 || r >= rows || col >= p.n) continue;
      if (gridDim.y == 1) {
        static_cast<std::uint16_t*>(p.c)[(batch * p.m + r) * p.n + col] = dev::float_to_bf16(v);
      } else {
        p.workspace[((static_cast<std::int64_t>(blockIdx.y) * p.batches + batch) * p.m + r) * p.n +
                    col] = v;
      }
    }
  }
}

// C^T = W . A^T on tensor cores (bf16, mma.sync m16n8k16, fp32 accumulation), for m > 8.
// grid (n tiles of 64, K slices, batches); warp w of CTA x owns W rows n0 = (x * 4 + w) * 16
// .. +16 and all of A's rows (M_TILES tiles of 8). Per step each lane loads 16 bytes of W rows
// n0 + g and n0 + g + 8 (g = lane / 4) and 16 bytes of A row t * 8 + g per tile, at K offset
// k0 + (lane % 4) * 8: 32 values of K, two mma K-steps. The K order inside a step is permuted
// (a lane's 8 contiguous values feed its fragment slots k = 2q, 2q+1, 2q+8, 2q+9 of step 0 and
// step 1), identically for W and A, which leaves every dot product unchanged.
template <int M_TILES>
__global__ void __launch_bounds__(kThreads)
    decode_gemm_mma_kernel(DecodeGemmArgs p, std::int64_t k_chunk) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, q = lane % 4;
  const std::int64_t n0 = (static_cast<std::int64_t>(blockIdx.x) * kDecodeWarps + warp) * 16;
  const std::int64_t batch = blockIdx.z;
  const std::int64_t rows = p.counts ? min(p.m, static_cast<std::int64_t>(p.counts[batch])) : p.m;
  if (n0 >= p.n || rows <= 0) return;
  const int tiles = static_cast<int>((rows + 7) / 8);  // tiles holding valid rows (warp-uniform)
  const auto* A = static_cast<const std::uint16_t*>(p.a) + batch * p.m * p.k;
  const auto* W = static_cast<const std::uint16_t*>(p.w) + batch * p.n * p.k;
  const std::int64_t kbeg = static_cast<std::int64_t>(blockIdx.y) * k_chunk;
  const std::int64_t kend = min(p.k, kbeg + k_chunk);
  const bool w0ok = n0 + g < p.n, w1ok = n0 + g + 8 < p.n;
  const std::uint16_t* w0 = W + (w0ok ? n0 + g : 0) * p.k;
  const std::uint16_t* w1 = W + (w1ok ? n0 + g + 8 : 0) * p.k;

  float acc[M_TILES][4];
#pragma unroll
  for (int t = 0; t < M_TILES; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;

  const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll 2
  for (std::int64_t k0 = kbeg; k0 < kend; k0 += 32) {
    const std::int64_t kk = k0 + q * 8;
    const bool kok = kk < kend;  // k % 8 == 0: a 16-byte group is wholly in or out
    const uint4 wa = w0ok && kok ? __ldcs(reinterpret_cast<const uint4*>(w0 + kk)) : zero;
    const uint4 wb = w1ok && kok ? __ldcs(reinterpret_cast<const uint4*>(w1 + kk)) : zero;
#pragma unroll
    for (int t = 0; t < M_TILES; ++t) {
      if (t >= tiles) break;
      const std::int64_t r = t * 8 + g;
      const uint4 av =
          r < rows && kok ? __ldg(reinterpret_cast<const uint4*>(A + r * p.k + kk)) : zero;
      // Step 0: fragment words (k 2q..2q+1, k 2q+8..2q+9) = this lane's words 0 and 1.
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(acc[t][0]), "+f"(acc[t][1]), "+f"(acc[t][2]), "+f"(acc[t][3])
          : "r"(wa.x), "r"(wb.x), "r"(wa.y), "r"(wb.y), "r"(av.x), "r"(av.y));
      // Step 1: words 2 and 3.
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(acc[t][0]), "+f"(acc[t][1]), "+f"(acc[t][2]), "+f"(acc[t][3])
          : "r"(wa.z), "r"(wb.z), "r"(wa.w), "r"(wb.w), "r"(av.z), "r"(av.w));
    }
  }

  // Accumulator (i, j) of the 16 x 8 tile: i = g (+8 for slots 2, 3) is the W row, j = 2q (+1)
  // the A row within tile t.
#pragma unroll
  for (int t = 0; t < M_TILES; ++t) {
    if (t >= tiles) break;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const std::int64_t col = n0 + g + (e >= 2 ? 8 : 0);
      const std::int64_t r = t * 8 + 2 * q + (e & 1);
      if (r >= rows || col >= p.n) continue;
      if (gridDim.y == 1) {
        static_cast<std::uint16_t*>(p.c)[(batch * p.m + r) * p.n + col] =
            dev::float_to_bf16(acc[t][e]);
      } else {
        p.workspace[((static_cast<std::int64_t>(blockIdx.y) * p.batches + batch) * p.m + r) * p.n +
                    col] = acc[t][e];
      }
    }
  }
}

// Sums the split-K partials of valid rows into C (bf16), slices in order (deterministic).
__global__ void splitk_reduce_kernel(DecodeGemmArgs p, int split) {
  const std::int64_t total = p.batches * p.m * p.n;
  for (std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       idx < total; idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t batch = idx / (p.m * p.n), r = idx / p.n % p.m;
    if (p.counts && r >= p.counts[batch]) continue;
    float s = 0.0f;
    for (int q = 0; q < split; ++q) s += p.workspace[q * total + idx];
    static_cast<std::uint16_t*>(p.c)[idx] = dev::float_to_bf16(s);
  }
}

template <bool FP8, int MT, int NW>
void launch_tiles(const DecodeGemmArgs& a, const DecodeGemmPlan& plan, bool vec, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(plan.grid_x), static_cast<unsigned>(plan.grid_y),
                  static_cast<unsigned>(plan.grid_z));
  const std::int64_t mchunks = (a.m + MT - 1) / MT;
  if (vec)
    decode_gemm_kernel<FP8, MT, NW, true><<<grid, kThreads, 0, s>>>(a, plan.k_chunk, mchunks);
  else
    decode_gemm_kernel<FP8, MT, NW, false><<<grid, kThreads, 0, s>>>(a, plan.k_chunk, mchunks);
}

template <int M_TILES>
void launch_mma(const DecodeGemmArgs& a, const DecodeGemmPlan& plan, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(plan.grid_x), static_cast<unsigned>(plan.grid_y),
                  static_cast<unsigned>(plan.grid_z));
  decode_gemm_mma_kernel<M_TILES><<<grid, kThreads, 0, s>>>(a, plan.k_chunk);
}

template <bool FP8>
void launch_typed(const DecodeGemmArgs& a, const DecodeGemmPlan& plan, bool vec, cudaStream_t s) {
  switch (plan.mt) {
    case 1:
      return launch_tiles<FP8, 1, 4>(a, plan, vec, s);
    case 2:
      return launch_tiles<FP8, 2, 4>(a, plan, vec, s);
    case 4:
      return launch_tiles<FP8, 4, 2>(a, plan, vec, s);
    default:
      return launch_tiles<FP8, 8, 2>(a, plan, vec, s);
  }
}

}  // namespace

void launch_decode_gemm(const DecodeGemmArgs& a, const DecodeGemmPlan& plan, cudaStream_t s) {
  if (a.m == 0 || a.n == 0 || a.batches == 0) return;
  if (plan.grid_y > 65535 || plan.grid_z > 65535)
    throw std::runtime_error("decode_gemm: grid too large for this plan");
  if (plan.split_k > 1 && a.workspace == nullptr)
    throw std::logic_error("decode_gemm: split-K plan without workspace");
  const int g = a.fp8 ? 16 : 8;
  // 16-byte loads need every row start 16-byte aligned (cudaMalloc'd bases are 256-aligned).
  const bool vec = a.k % g == 0 && reinterpret_cast<std::uintptr_t>(a.a) % 16 == 0 &&
                   reinterpret_cast<std::uintptr_t>(a.w) % 16 == 0;
  if (a.k == 0) {
    // An empty reduction: C = 0 for the valid rows (the reduce kernel with no slices).
    splitk_reduce_kernel<<<256, 256, 0, s>>>(a, 0);
    ATTAIN_CUDA_CHECK_LAUNCH("splitk_reduce_kernel");
    return;
  }
  if (plan.mma) {
    if (a.fp8 || a.k % 8 != 0 || !vec)
      throw std::logic_error("decode_gemm: tensor-core plan for an fp8 or unaligned problem");
    switch (plan.m_tiles) {
      case 2:
        launch_mma<2>(a, plan, s);
        break;
      case 4:
        launch_mma<4>(a, plan, s);
        break;
      case 8:
        launch_mma<8>(a, plan, s);
        break;
      default:
        launch_mma<16>(a, plan, s);
        break;
    }
  } else if (a.fp8) {
    launch_typed<true>(a, plan, vec, s);
  } else {
    launch_typed<false>(a, plan, vec, s);
  }
  ATTAIN_CUDA_CHECK_LAUNCH("decode_gemm_kernel");
  if (plan.split_k > 1) {
    const std::int64_t total = a.batches * a.m * a.n;
    const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((total + 255) / 256, 4096));
    splitk_reduce_kernel<<<blocks, 256, 0, s>>>(a, plan.split_k);
    ATTAIN_CUDA_CHECK_LAUNCH("splitk_reduce_kernel");
  }
}

}  // namespace attain::cuda
