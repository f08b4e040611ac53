#include "decode/greedy.hpp"

namespace attn::decode {

int64_t most_likely(std::span<const float> scores, banned_tokens banned) {
  const auto v = static_cast<int64_t>(scores.size());
  int64_t best = 0;
  while (!banned.allows(best)) ++best;
  for (int64_t i = 0; i < v; ++i)
    if (banned.allows(i) && scores[static_cast<size_t>(i)] > scores[static_cast<size_t>(best)]) best = i;
  return best;
}

}  // namespace attn::decode
