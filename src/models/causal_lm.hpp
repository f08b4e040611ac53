// The language model (attn train --task lm): a word model (tied_lm.hpp) with causal attention
// (token t sees tokens ≤ t), trained on the next word at every position. It is the one
// autoregressive model: causal_lm_decoder below runs it one token at a time for generation
// (wrapped for src/decode/ by causal_lm_decoding).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/tied_lm.hpp"
#include "nn/encoder_block.hpp"
#include "nn/self_attention_layer.hpp"

namespace attn::models {

template <class T>
class causal_lm : public tied_lm<T> {
 public:
  using tied_lm<T>::tied_lm;
};

template <class T>
using causal_lm_cache = tied_lm_cache<T>;

// The language model run one token at a time with a key-value cache: each layer keeps the keys
// and values of every position so far, so a new token costs one query row of attention per
// layer and one pass of the rest, never the whole prefix again. Each layer runs the encoder
// block's own one-row path (encoder_block_row_forward): no second copy of the block to keep in
// step. step() gives the logits the model's forward gives at the last position of the same
// tokens (tests hold the two together). The model must outlive the decoder.
class causal_lm_decoder {
 public:
  // A usage error unless the model can generate: pre-norm encoder layers, learned positions, no
  // word window.
  explicit causal_lm_decoder(const causal_lm<float>& model);

  // Reads the token (an embedding row) at position length(); returns the logits of the token
  // after it [C]. A usage error past the model's learned positions (see clear).
  const std::vector<float>& step(int64_t id);
  int64_t length() const { return length_; }
  int64_t capacity() const { return model_.shape().positions; }
  void clear() { length_ = 0; }

 private:
  const causal_lm<float>& model_;
  // The output words' rows [C, Ein], shared: beam search copies a decoder per hypothesis, and
  // only the key/value cache differs between copies (the table was 22% of a beam's time).
  std::shared_ptr<const std::vector<float>> output_table_;
  std::vector<nn::self_attention_kv> kv_;       // each layer's keys and values
  int64_t length_ = 0;
  // One token's working rows.
  std::vector<float> x_, normed_, hidden_, mean_, rstd_;
  nn::encoder_block_row_scratch block_;
  std::vector<float> logits_;                   // (the adaptive softmax: log-probabilities)
  std::vector<float> token_scores_;             // the adaptive softmax's cluster tokens [K]
};

}  // namespace attn::models
