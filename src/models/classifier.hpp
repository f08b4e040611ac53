// The classifier (classify, next-word): trunk (trunk.hpp) → pooling (pooling.hpp: one vector per
// sentence, or per prefix for next-word) → the MLP head (mlp_head.hpp) → logits [R, C] → softmax
// cross-entropy against the labels (or the next words).
#pragma once

#include <cstdint>
#include <vector>

#include "models/head_cache.hpp"
#include "models/mlp_head.hpp"
#include "models/pooling.hpp"
#include "models/trunk.hpp"
#include "nn/batch.hpp"
#include "nn/network_shape.hpp"
#include "nn/parameter.hpp"

namespace attn::models {

// What the classifier's forward leaves: each piece's results.
template <class T>
struct classifier_cache : trunk_cache<T>, pooling_cache<T>, head_cache<T> {};

template <class T>
class classifier {
 public:
  explicit classifier(const nn::network_shape& shape);  // every parameter zero

  // The model file's order: the trunk's, the pooling query, the head's.
  void append_parameters(std::vector<nn::parameter<T>*>& all);

  // Fills cache (logits included) and returns the mean cross-entropy over the batch's rows (0
  // without rows or targets; a batch without rows asks for the token vectors y alone). A nonzero
  // dropout_seed trains.
  T forward(const nn::batch& b, classifier_cache<T>& cache, uint64_t dropout_seed) const;
  // Adds the gradients of forward's loss to each trainable parameter's grad.
  void backward(const nn::batch& b, const classifier_cache<T>& cache);

  models::trunk<T> trunk;  // (qualified: the member takes the type's name)
  pooling<T> pool;
  mlp_head<T> head;
};

}  // namespace attn::models
