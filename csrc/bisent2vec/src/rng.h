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

  // The generator of `seed` after n draws: SplitMix64's state moves by a constant per draw,
  // so a thread can start on its share of one stream without drawing what comes before.
  static Rng skipped(uint64_t seed, uint64_t n) { return Rng(seed + n * kGamma); }

  uint64_t next() {
    uint64_t z = (state_ += kGamma);
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

  // Uniform integer in [0, n), n > 0, without bias: the high word of a draw times n, with
  // Lemire's rejection of the few low words that would favour some values ("Fast random
  // integer generation in an interval", 2019). A division only when a draw may be rejected,
  // once in 2^64 / n draws: a shuffle of a large table makes one draw per entry.
  uint64_t below(uint64_t n) {
    __extension__ using u128 = unsigned __int128;
    u128 m = static_cast<u128>(next()) * n;
    if (static_cast<uint64_t>(m) < n) {
      const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
      while (static_cast<uint64_t>(m) < threshold) m = static_cast<u128>(next()) * n;
    }
    return static_cast<uint64_t>(m >> 64);
  }

 private:
  static constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ULL;
  uint64_t state_;
};

}  // namespace bisent2vec
