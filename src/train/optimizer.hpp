// AdamW (Loshchilov & Hutter): Adam's moment estimates with weight decay applied to the weights
// directly rather than through the gradient; gradient clipping by global norm; and the
// learning-rate schedule, a linear warm-up then a cosine decay.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/network.hpp"

namespace attn::train {

struct adamw_options {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0.01;  // only on parameters marked decay (matrices)
};

class adamw {
 public:
  adamw(const std::vector<nn::parameter<float>*>& params, adamw_options options);
  // One update of every trainable parameter with its grad, at learning rate lr.
  void step(double lr);

 private:
  std::vector<nn::parameter<float>*> params_;
  std::vector<std::vector<float>> m_, v_;  // first and second moments
  adamw_options options_;
  int64_t t_ = 0;
};

// Scales every trainable gradient so their global L2 norm is at most max_norm (when positive);
// returns the norm before clipping.
double clip_gradients(const std::vector<nn::parameter<float>*>& params, double max_norm);

// The learning rate at step (0-based) of total: linear warm-up over warmup steps to peak, then
// cosine decay to floor·peak at the last step.
double learning_rate(int64_t step, int64_t total, int64_t warmup, double peak, double floor = 0.0);

}  // namespace attn::train
