// The loops the host probe times, one set per ISA (each in a file compiled for that ISA;
// the probe picks the widest the CPU has at run time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace attain::probe {

// Runs `iters` iterations of 12 independent FMA chains (acc = acc * m + a) over one vector
// register each and returns a value that depends on every chain, so nothing can be folded or
// dropped. FLOPs per iteration: fma_flops_per_iter().
using FmaLoop = float (*)(std::int64_t iters);
// Sum of n floats (p 64-byte aligned, n a multiple of 64).
using ReadLoop = float (*)(const float* p, std::size_t n);
// One way of streaming an array: the probe times every one and keeps the fastest, so that no
// kernel of attain's streams memory faster than the ceiling it is judged against.
struct ReadKernel {
  const char* name;
  ReadLoop fn;
};
// plain: one pass, 4 independent sums; streams4: the array's four quarters read side by side
// (four sequential streams, as a decode kernel reads several weight rows); prefetch: one pass
// with a software prefetch 2 KiB ahead; nt: non-temporal loads (or prefetchnta where the ISA
// has no non-temporal load).
inline constexpr int kReadKernels = 4;
// dst[i] = src[i] for n floats (both 64-byte aligned, n a multiple of 64), ordinary stores.
using CopyLoop = void (*)(float* dst, const float* src, std::size_t n);

struct Kernels {
  const char* isa;
  int lanes;  // fp32 lanes per FMA
  FmaLoop fma;
  ReadKernel reads[kReadKernels];
  CopyLoop copy;
};
// The kernel named `name` in k.reads; nullptr when there is none.
const ReadKernel* find_read(const Kernels& k, std::string_view name);

inline constexpr int kFmaChains = 12;
inline double fma_flops_per_iter(const Kernels& k) {
  return 2.0 * kFmaChains * k.lanes;
}

Kernels kernels_sse2();  // baseline x86-64 (portable scalar code elsewhere)
#if defined(__x86_64__)
Kernels kernels_avx2();    // probe_kernels_avx2.cpp
Kernels kernels_avx512();  // probe_kernels_avx512.cpp
// kBf16Chains chains of vdpbf16ps (AVX512_BF16): 64 FLOPs per instruction. vdpbf16ps waits longer
// on its chain than an FMA: on the Zen 5 guest 12 chains reached 486 / 964 GFLOP/s at 1 / 2
// threads, 16 and 24 chains 526 / 1049 (twice the fp32 FMA peak), and attain's bf16 kernels ran
// above the 12-chain figure.
inline constexpr int kBf16Chains = 24;
float bf16_dot_avx512(std::int64_t iters);  // probe_kernels_avx512bf16.cpp
inline constexpr double kBf16FlopsPerIter = 64.0 * kBf16Chains;
#endif

}  // namespace attain::probe
