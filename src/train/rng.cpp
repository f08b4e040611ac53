#include "train/rng.hpp"

#include <cmath>
#include <numbers>

namespace attn::train {

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

rng::rng(uint64_t seed) {
  // splitmix64 spreads any seed (0 included) over the whole state; xoshiro's state must not be 0.
  for (uint64_t& s : s_) s = splitmix64(seed);
}

uint64_t rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

uint64_t rng::below(uint64_t n) {
  // Reject the top partial block of 2^64 so every value is equally likely.
  const uint64_t limit = -n % n;  // 2^64 mod n
  for (;;) {
    const uint64_t x = next();
    if (x >= limit) return x % n;
  }
}

double rng::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace attn::train
