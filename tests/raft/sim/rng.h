// Rng: the simulation's only source of randomness, seeded from the run's
// seed. splitmix64, written out so a seed means the same run with any
// standard library (std::uniform_int_distribution is implementation-defined).
#pragma once

#include <cstdint>

namespace tenure::sim {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (the modulo bias is irrelevant at these ranges).
  std::int64_t Uniform(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(Next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  unsigned Index(unsigned n) { return static_cast<unsigned>(Next() % n); }
  // True with probability percent / 100.
  bool Percent(int percent) { return Uniform(0, 99) < percent; }
  // An independent generator, so one component's draws never shift another's.
  Rng Fork() { return Rng(Next()); }

 private:
  std::uint64_t state_;
};

}  // namespace tenure::sim
