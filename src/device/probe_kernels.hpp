// The loops the host probe times, one set per ISA (each in a file compiled for that ISA;
// the probe picks the widest the CPU has at run time).
#pragma once

#include <cstddef>
#include <cstdint>

namespace attain::probe {

// Runs `iters` iterations of 12 independent FMA chains (acc = acc * m + a) over one vector
// register each and returns a value that depends on every chain, so nothing can be folded or
// dropped. FLOPs per iteration: fma_flops_per_iter().
using FmaLoop = float (*)(std::int64_t iters);
// Sum of n floats (p 64-byte aligned, n a multiple of 64).
using ReadLoop = float (*)(const float* p, std::size_t n);
// dst[i] = src[i] for n floats (both 64-byte aligned, n a multiple of 64), ordinary stores.
using CopyLoop = void (*)(float* dst, const float* src, std::size_t n);

struct Kernels {
  const char* isa;
  int lanes;  // fp32 lanes per FMA
  FmaLoop fma;
  ReadLoop read;
  CopyLoop copy;
};

inline constexpr int kFmaChains = 12;
inline double fma_flops_per_iter(const Kernels& k) {
  return 2.0 * kFmaChains * k.lanes;
}

Kernels kernels_sse2();  // baseline x86-64 (portable scalar code elsewhere)
#if defined(__x86_64__)
Kernels kernels_avx2();    // probe_kernels_avx2.cpp
Kernels kernels_avx512();  // probe_kernels_avx512.cpp
#endif

}  // namespace attain::probe
