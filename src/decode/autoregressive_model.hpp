// What every decoding method (greedy, sampling, beam search) needs of a model: read tokens one at
// a time into a state and say how likely each token is to come next. Any autoregressive model
// implements it (the causal language model: decode/causal_lm_decoding.hpp); the methods never see
// layers, caches or file formats, so a new model kind decodes with all of them at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace attn::decode {

// One hypothesis's memory of the tokens it has read (for a Transformer, its key-value cache).
class decoder_state {
 public:
  virtual ~decoder_state() = default;
  // An independent state that has read the same tokens: beam search continues one prefix in two
  // ways by copying it.
  virtual std::unique_ptr<decoder_state> copy() const = 0;
};

class autoregressive_model {
 public:
  virtual ~autoregressive_model() = default;
  // V: how many tokens the scores cover (ids 0 … V − 1).
  virtual int64_t vocabulary() const = 0;
  // A state that has read nothing.
  virtual std::unique_ptr<decoder_state> start() const = 0;
  // Reads the tokens (at least one) in order; returns the scores of the token after the last,
  // logits or log-probabilities [V] (a softmax of them is the distribution). The span stays valid
  // until the state reads again or is destroyed.
  virtual std::span<const float> read(decoder_state& state, std::span<const int64_t> tokens) const = 0;

  // step(state, token) → logits: reads one token.
  std::span<const float> step(decoder_state& state, int64_t token) const { return read(state, {&token, 1}); }
  // Each state reads one token, states[k] tokens[k]; returns each one's scores (valid as read's).
  // One after another unless the model can do better (the translator steps a beam's
  // hypotheses in one pass).
  virtual std::vector<std::span<const float>> step_each(std::span<decoder_state* const> states,
                                                        std::span<const int64_t> tokens) const {
    std::vector<std::span<const float>> out;
    for (size_t k = 0; k < states.size(); ++k) out.push_back(step(*states[k], tokens[k]));
    return out;
  }
};

}  // namespace attn::decode
