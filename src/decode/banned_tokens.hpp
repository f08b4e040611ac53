// Tokens a decoding method never chooses: the language model's unknown token always, its end
// token under --ignore-eos. -1: no token.
#pragma once

#include <cstdint>

namespace attn::decode {

struct banned_tokens {
  int64_t first = -1, second = -1;
  bool allows(int64_t id) const { return id != first && id != second; }
};

}  // namespace attn::decode
