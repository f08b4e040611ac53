// A causal network run one token at a time with a key-value cache (generation): each layer keeps
// the keys and values of every position so far, so a new token costs one query row of
// attention per layer and one pass of the rest, never the whole prefix again. The network is
// the language model's (nn::network with pre-norm encoder layers, causal attention, learned
// positions and a tied output); step() gives the logits the network's forward gives at the last
// position of the same tokens (tests hold the two together).
#pragma once

#include <cstdint>
#include <vector>

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
  // Each layer's keys and values, dimension-major [E, positions] (head h's rows h·D … h·D + D − 1),
  // so that one query's scores and weighted sum run along the positions.
  std::vector<std::vector<float>> keys_, values_;
  int64_t length_ = 0;
  // One token's working rows.
  std::vector<float> x_, normed_, q_, k_, v_, merged_, attended_, hidden_, pre_, scores_, mean_, rstd_;
  std::vector<float> logits_;                   // (the adaptive softmax: log-probabilities)
  std::vector<float> token_scores_;             // the adaptive softmax's cluster tokens [K]
};

}  // namespace attn::nn
