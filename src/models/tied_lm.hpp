// The body the two word models share (masked_lm.hpp, causal_lm.hpp): trunk (trunk.hpp) → each
// scored token's own vector (pooling.hpp's token pooling) → the tied output (tied_output.hpp:
// scores against the words' own embedding rows, full, fused or adaptive softmax) → softmax
// cross-entropy against the hidden or the next words. They differ in the trunk's attention (the
// masked-word model sees both sides, the language model the past only: the shape's causal) and in
// what they answer afterwards (the language model steps one token at a time: generation).
#pragma once

#include <cstdint>
#include <vector>

#include "models/pooling.hpp"
#include "models/tied_output.hpp"
#include "models/trunk.hpp"
#include "nn/adaptive_output.hpp"
#include "nn/batch.hpp"
#include "nn/network_shape.hpp"
#include "nn/parameter.hpp"

namespace attn::models {

// What a word model's forward leaves: each piece's results.
template <class T>
struct tied_lm_cache : trunk_cache<T>, pooling_cache<T>, tied_output_cache<T> {};

template <class T>
class tied_lm {
 public:
  // Every parameter zero. output_rows: each class's embedding row [C]; output_cutoffs: the
  // adaptive softmax's cuts c₀ < … < cₙ ≤ C over the classes (most frequent first), or none for
  // the full softmax.
  tied_lm(const nn::network_shape& shape, std::vector<int64_t> output_rows,
          std::vector<int64_t> output_cutoffs);

  // The model file's order: the trunk's, the pooling's (none for token pooling), the output's.
  void append_parameters(std::vector<nn::parameter<T>*>& all);

  // Fills cache (logits included while evaluating) and returns the mean cross-entropy over the
  // batch's rows (0 without rows or targets; a batch without rows asks for the token vectors y
  // alone). A nonzero dropout_seed trains.
  T forward(const nn::batch& b, tied_lm_cache<T>& cache, uint64_t dropout_seed) const;
  // Adds the gradients of forward's loss to each trainable parameter's grad (the output words'
  // embedding rows included).
  void backward(const nn::batch& b, const tied_lm_cache<T>& cache);

  const nn::network_shape& shape() const { return shape_; }

  models::trunk<T> trunk;  // (qualified: the member takes the type's name)
  pooling<T> pool;
  tied_output<T> output;

 private:
  nn::network_shape shape_;
};

}  // namespace attn::models
