// Small, fast, seeded generator for filling benchmark inputs (splitmix64).
#pragma once

#include <cstdint>

namespace attain {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float uniform() { return static_cast<float>(next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  // Moves on as n calls of next() would (the state is a counter): a generator skipped to a
  // chunk's first draw fills that chunk exactly as one pass over everything would.
  void skip(std::uint64_t n) { s_ += n * 0x9E3779B97F4A7C15ull; }

 private:
  std::uint64_t s_;
};

}  // namespace attain
