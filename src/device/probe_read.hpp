// The probe's read loops, written once over a vector type V and included by each ISA's file
// (compiled for that ISA). V provides: `using reg`, `static constexpr std::size_t lanes`,
// `zero()`, `load(p)` (aligned), `load_nt(p)` (non-temporal where the ISA has it), `add(a, b)`
// and `sum(reg)` (horizontal). Every loop takes p 64-byte aligned and n a multiple of 64.
#pragma once

#include <cstddef>

#include "device/probe_kernels.hpp"

namespace attain::probe::read_loops {

// How far ahead the prefetching loop fetches: 2 KiB, a few hundred nanoseconds of one core's
// stream, the distance the decode kernels' W-row prefetch uses.
inline constexpr std::size_t kPrefetchFloats = 512;

// One pass, four independent sums over 4 consecutive vectors (the add latency does not limit
// the load rate).
template <class V, bool NT = false, bool Prefetch = false>
float plain(const float* p, std::size_t n) {
  constexpr std::size_t L = V::lanes;
  typename V::reg s0 = V::zero(), s1 = s0, s2 = s0, s3 = s0;
  for (std::size_t i = 0; i < n; i += 4 * L) {
    if constexpr (Prefetch)
      for (std::size_t b = 0; b < 4 * L * sizeof(float); b += 64)
        __builtin_prefetch(reinterpret_cast<const char*>(p + i + kPrefetchFloats) + b, 0, 3);
    if constexpr (NT) {
      s0 = V::add(s0, V::load_nt(p + i)), s1 = V::add(s1, V::load_nt(p + i + L));
      s2 = V::add(s2, V::load_nt(p + i + 2 * L)), s3 = V::add(s3, V::load_nt(p + i + 3 * L));
    } else {
      s0 = V::add(s0, V::load(p + i)), s1 = V::add(s1, V::load(p + i + L));
      s2 = V::add(s2, V::load(p + i + 2 * L)), s3 = V::add(s3, V::load(p + i + 3 * L));
    }
  }
  return V::sum(V::add(V::add(s0, s1), V::add(s2, s3)));
}

// The array's four quarters read side by side, one vector of each per step: four sequential
// streams, which keep more lines in flight than one on CPUs whose prefetchers track streams.
template <class V>
float streams4(const float* p, std::size_t n) {
  constexpr std::size_t L = V::lanes;
  const std::size_t q = n / 4;  // a multiple of 16 floats: every quarter starts 64-byte aligned
  const float *a = p, *b = p + q, *c = p + 2 * q, *d = p + 3 * q;
  typename V::reg s0 = V::zero(), s1 = s0, s2 = s0, s3 = s0;
  for (std::size_t i = 0; i + L <= q; i += L) {
    s0 = V::add(s0, V::load(a + i)), s1 = V::add(s1, V::load(b + i));
    s2 = V::add(s2, V::load(c + i)), s3 = V::add(s3, V::load(d + i));
  }
  return V::sum(V::add(V::add(s0, s1), V::add(s2, s3)));
}

template <class V>
constexpr Kernels with_reads(Kernels k) {
  k.reads[0] = {"plain", plain<V>};
  k.reads[1] = {"streams4", streams4<V>};
  k.reads[2] = {"prefetch", plain<V, false, true>};
  k.reads[3] = {"nt", plain<V, true>};
  return k;
}

}  // namespace attain::probe::read_loops
