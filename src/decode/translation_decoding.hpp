// The translator (models/translator.hpp) as an autoregressive_model for one source sentence: each
// state is a models::translator_decoder (the encoder's memory and cross-attention keys and values
// shared, its own self-attention cache), so greedy decoding, sampling and beam search all
// translate. The prompt is the target's start, <s> (and any forced prefix).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "decode/autoregressive_model.hpp"
#include "models/translator.hpp"

namespace attn::decode {

class translation_decoding final : public autoregressive_model {
 public:
  // source: the sentence's pieces (ending in </s>); capacity: the most target tokens a state reads.
  translation_decoding(const models::translator_steps& model, std::span<const int64_t> source, int64_t capacity);

  int64_t vocabulary() const override { return model_.model().shape().vocabulary; }
  std::unique_ptr<decoder_state> start() const override;
  std::span<const float> read(decoder_state& state, std::span<const int64_t> tokens) const override;
  // A beam's hypotheses in one pass (translator_decoder::step_together).
  std::vector<std::span<const float>> step_each(std::span<decoder_state* const> states,
                                                std::span<const int64_t> tokens) const override;

 private:
  const models::translator_steps& model_;
  models::translator_decoder empty_;  // the encoded sentence, nothing read: each start() copies it
};

}  // namespace attn::decode
