// Greedy decoding and sampling make one token at a time and hand each on as it is made (so the
// CLI can print it at once): read the prompt, choose, read the choice, choose again.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "decode/autoregressive_model.hpp"

namespace attn::decode {

struct stream_result {
  int64_t made = 0;    // tokens handed on (the end token not included)
  bool ended = false;  // stopped because `end` was chosen
};

// Reads the prompt (at least one token), then up to max_tokens times: choose(scores) picks the
// next token; `end` stops; any other goes to on_token and is read. The last token is not read
// (nothing would use its scores).
stream_result stream_tokens(const autoregressive_model& model, std::span<const int64_t> prompt, int64_t max_tokens,
                            int64_t end, const std::function<int64_t(std::span<const float>)>& choose,
                            const std::function<void(int64_t)>& on_token);

}  // namespace attn::decode
