// A causal network run one token at a time with a key-value cache (generation): each layer keeps
// the keys and values of every position so far, so a new token costs one query row of
// attention per layer and one pass of the rest, never the whole prefix again. The network is
// the language model's (nn::network with pre-norm encoder layers, causal attention, learned
// positions and a tied output); each layer runs the encoder block's own one-row path
// (encoder_block_row_forward), and step() gives the logits the network's forward gives at the
// last position of the same tokens (tests hold the two together).
#pragma once

#include <cstdint>
#include <vector>

#include "nn/encoder_block.hpp"
#include "nn/network.hpp"

namespace attn::nn {

class causal_decoder {
 public:
  explicit causal_decoder(const network<float>& net);

  // Reads the token (an embedding row) at position length(); returns the logits of the token
  // after it [C]. A usage error past the network's learned positions (see rewind).
  const std::vector<float>& step(int64_t id);
  int64_t length() const { return length_; }
  int64_t capacity() const { return net_.shape().positions; }
  void clear() { length_ = 0; }

 private:
  const network<float>& net_;
  std::vector<float> output_table_;             // the output words' rows [C, Ein]
  std::vector<self_attention_kv> kv_;           // each layer's keys and values
  int64_t length_ = 0;
  // One token's working rows.
  std::vector<float> x_, normed_, hidden_, mean_, rstd_;
  encoder_block_row_scratch block_;
  std::vector<float> logits_;                   // (the adaptive softmax: log-probabilities)
  std::vector<float> token_scores_;             // the adaptive softmax's cluster tokens [K]
};

}  // namespace attn::nn
