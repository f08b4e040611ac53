// Sampling's choice: a draw from softmax(scores / temperature), cut to the top k and then to the
// top p (nucleus), with attn's own generator so a seed gives the same words everywhere.
#pragma once

#include <cstdint>
#include <span>

#include "decode/banned_tokens.hpp"
#include "train/rng.hpp"

namespace attn::decode {

struct sampling_options {
  double temperature = 1.0;  // > 0 (0 is greedy: decode/greedy.hpp)
  int64_t top_k = 0;         // the k most likely tokens only (0: all)
  double top_p = 1.0;        // … and the fewest of those whose probabilities reach p, in (0, 1]
};

// One uniform draw from r per call, whatever the options: generation's words at a seed depend on
// that order, so it must not change.
int64_t sample(std::span<const float> scores, banned_tokens banned, const sampling_options& o, train::rng& r);

}  // namespace attn::decode
