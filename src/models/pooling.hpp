// Token vectors y [B, L, E] → one vector per scored row [R, P]: the mean, the max, both side by
// side (P = 2E), attention-weighted by a learned query, or one token's own vector (the masked-word
// and language models); dropped out while training. A classifier pools each sentence once
// (R = B); the next-word model pools every prefix, so one pass trains every prefix of every line.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/batch.hpp"
#include "nn/network_shape.hpp"
#include "nn/parameter.hpp"

namespace attn::models {

template <class T>
struct pooling_cache {
  std::vector<T> pooled;            // [R, P] (after dropout)
  std::vector<int64_t> argmax;      // max pooling: the token of each maximum [R, E]
  std::vector<T> pool_weights;      // attention pooling: each row's weights over tokens [R, L]
  std::vector<T> drop_pooled;       // pooled's dropout mask (empty: no dropout)
};

template <class T>
class pooling {
 public:
  explicit pooling(const nn::network_shape& shape);

  void append_parameters(std::vector<nn::parameter<T>*>& all);  // attention pooling's query

  // y [B, L, E] → cache.pooled [R, P]. A nonzero dropout_seed trains.
  void forward(const nn::batch& b, const T* y, pooling_cache<T>& cache, uint64_t dropout_seed) const;
  // dpooled [R, P] (taken) → dy [B, L, E] +=, the query's grad +=.
  void backward(const nn::batch& b, const T* y, const pooling_cache<T>& cache,
                std::vector<T> dpooled, T* dy);

  nn::parameter<T> query;  // attention pooling's u [E] ("pool.query")

 private:
  nn::network_shape shape_;
};

}  // namespace attn::models
