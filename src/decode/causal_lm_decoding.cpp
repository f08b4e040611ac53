#include "decode/causal_lm_decoding.hpp"

#include <algorithm>
#include <vector>

#include "attn/error.hpp"

namespace attn::decode {

namespace {

struct causal_lm_state final : decoder_state {
  explicit causal_lm_state(const models::causal_lm<float>& lm) : decoder(lm) {}
  std::unique_ptr<decoder_state> copy() const override { return std::make_unique<causal_lm_state>(*this); }

  models::causal_lm_decoder decoder;
  // The tokens read, at least the latest `capacity` of them (a restart re-reads half of those);
  // trimmed once it holds twice that, so memory stays flat however long the text.
  std::vector<int64_t> recent;
};

}  // namespace

causal_lm_decoding::causal_lm_decoding(const models::network<float>& net)
    : net_(net), lm_(net.as<models::causal_lm<float>>()) {}

int64_t causal_lm_decoding::vocabulary() const { return net_.shape().classes; }

std::unique_ptr<decoder_state> causal_lm_decoding::start() const {
  if (lm_ == nullptr) throw_usage("generation needs a language model (train one with --task lm)");
  return std::make_unique<causal_lm_state>(*lm_);
}

std::span<const float> causal_lm_decoding::read(decoder_state& state, std::span<const int64_t> tokens) const {
  auto& s = static_cast<causal_lm_state&>(state);
  if (tokens.empty()) throw_usage("a decoder reads at least one token");
  const int64_t capacity = s.decoder.capacity();
  const auto window = static_cast<size_t>(capacity);
  // A prompt longer than the context: only its last `capacity` tokens are read.
  if (s.recent.empty() && tokens.size() > window) tokens = tokens.last(window);
  const std::vector<float>* logits = nullptr;
  for (const int64_t token : tokens) {
    if (s.decoder.length() == capacity) {
      s.decoder.clear();
      const size_t keep = static_cast<size_t>(std::max<int64_t>(1, capacity / 2));
      const size_t n = s.recent.size();
      for (size_t i = n - std::min(n, keep - 1); i < n; ++i) s.decoder.step(s.recent[i]);
    }
    logits = &s.decoder.step(token);
    s.recent.push_back(token);
    if (s.recent.size() >= 2 * window)
      s.recent.erase(s.recent.begin(), s.recent.end() - static_cast<std::ptrdiff_t>(window));
  }
  return *logits;
}

}  // namespace attn::decode
