// The causal language model (--task lm) as an autoregressive_model: each state is a
// models::causal_lm_decoder (the model run one row at a time with a key-value cache) and the
// latest tokens it read, which it needs to go on past the model's context.
#pragma once

#include "decode/autoregressive_model.hpp"
#include "models/network.hpp"

namespace attn::decode {

class causal_lm_decoding final : public autoregressive_model {
 public:
  explicit causal_lm_decoding(const models::network<float>& net);

  int64_t vocabulary() const override;
  // A usage error unless the network is a language model (models::causal_lm) that can generate.
  std::unique_ptr<decoder_state> start() const override;
  // Learned positions cannot slide, so past the context T the state restarts from its latest
  // T/2 tokens (recomputed once every T/2 new tokens). A state that has read nothing and is given
  // more than T tokens reads only their last T.
  std::span<const float> read(decoder_state& state, std::span<const int64_t> tokens) const override;

 private:
  const models::network<float>& net_;
  const models::causal_lm<float>* lm_;  // null: the network is another model
};

}  // namespace attn::decode
