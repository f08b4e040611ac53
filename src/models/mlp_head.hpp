// The classifier's head (classify, next-word): pooled [R, P] → linear → ReLU → linear → logits
// [R, C] → softmax cross-entropy, in PyTorch's nn.Sequential names (head.0, head.2).
#pragma once

#include <cstdint>
#include <vector>

#include "models/head_cache.hpp"
#include "nn/batch.hpp"
#include "nn/network_shape.hpp"
#include "nn/parameter.hpp"

namespace attn::models {

template <class T>
class mlp_head {
 public:
  explicit mlp_head(const nn::network_shape& shape);  // (empty unless !tied_output)

  void append_parameters(std::vector<nn::parameter<T>*>& all);

  // pooled [R, P] → cache.logits [R, C]; the mean cross-entropy over the rows (0 without targets).
  T forward(const nn::batch& b, const T* pooled, head_cache<T>& cache) const;
  // → dpooled [R, P]; the weights' grads +=.
  std::vector<T> backward(const nn::batch& b, const T* pooled, const head_cache<T>& cache);

  nn::parameter<T> w1, b1, w2, b2;  // [hidden, P], [hidden], [C, hidden], [C]

 private:
  nn::network_shape shape_;
};

}  // namespace attn::models
