// A small seeded random number generator (SplitMix64) with the two draws the trainer needs.
//
// The standard library's engines are portable but its distributions are not: libstdc++ and
// libc++ turn the same engine output into different uniform reals. Owning both the engine
// and the draws keeps a single-threaded run with a fixed seed bit-for-bit reproducible on
// any compiler, which the tests check.
#pragma once

#include <cstdint>

namespace bisent2vec {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1), from the top 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform in [lo, hi).
  float uniform(float lo, float hi) {
    return lo + static_cast<float>(uniform()) * (hi - lo);
  }

  // Uniform integer in [0, n), n > 0, without modulo bias (rejection on the low range).
  uint64_t below(uint64_t n) {
    const uint64_t limit = (~uint64_t{0} / n) * n;  // largest multiple of n that fits
    uint64_t x;
    do {
      x = next();
    } while (x >= limit);
    return x % n;
  }

 private:
  uint64_t state_;
};

}  // namespace bisent2vec
