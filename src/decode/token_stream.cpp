#include "decode/token_stream.hpp"

namespace attn::decode {

stream_result stream_tokens(const autoregressive_model& model, std::span<const int64_t> prompt, int64_t max_tokens,
                            int64_t end, const std::function<int64_t(std::span<const float>)>& choose,
                            const std::function<void(int64_t)>& on_token) {
  stream_result result;
  const std::unique_ptr<decoder_state> state = model.start();
  std::span<const float> scores = model.read(*state, prompt);
  for (int64_t n = 0; n < max_tokens; ++n) {
    const int64_t next = choose(scores);
    if (next == end) {
      result.ended = true;
      break;
    }
    ++result.made;
    on_token(next);
    if (n + 1 < max_tokens) scores = model.step(*state, next);
  }
  return result;
}

}  // namespace attn::decode
