// A seedable random number generator of attn's own (xoshiro256**, seeded through splitmix64),
// so a training run with the same seed gives the same numbers with any compiler and standard
// library (std::uniform_*_distribution's outputs are implementation-defined).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace attn::train {

class rng {
 public:
  explicit rng(uint64_t seed);
  uint64_t next();                    // 64 uniform bits
  double uniform();                   // [0, 1), 53 bits
  double uniform(double lo, double hi);
  uint64_t below(uint64_t n);         // uniform integer in [0, n), n > 0, without modulo bias
  double normal();                    // standard normal (Box–Muller, one value per call)
  // The generator's whole state, for a checkpoint to take and give back.
  std::array<uint64_t, 4> state() const { return {s_[0], s_[1], s_[2], s_[3]}; }
  void set_state(const std::array<uint64_t, 4>& s) { for (int i = 0; i < 4; ++i) s_[i] = s[static_cast<size_t>(i)]; }
  template <class I>
  void shuffle(std::vector<I>& items) {  // Fisher–Yates
    for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  uint64_t s_[4];
};

}  // namespace attn::train
