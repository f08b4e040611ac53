// Greedy decoding's choice: the most likely token (temperature 0).
#pragma once

#include <cstdint>
#include <span>

#include "decode/banned_tokens.hpp"

namespace attn::decode {

// The allowed token with the highest score; ties go to the lower id, so the choice never depends
// on the order anything was computed in. scores [V] with V > the number of banned tokens.
int64_t most_likely(std::span<const float> scores, banned_tokens banned);

}  // namespace attn::decode
