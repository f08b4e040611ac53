// AdamW (Loshchilov & Hutter): Adam's moment estimates with weight decay applied to the weights
// directly rather than through the gradient; gradient clipping by global norm; and the
// learning-rate schedule, a linear warm-up then a cosine decay.
#pragma once

#include <cstdint>
#include <vector>

#include "models/network.hpp"

namespace attn::train {

struct adamw_options {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0.01;  // only on parameters marked decay (matrices)
};

class adamw {
 public:
  adamw(const std::vector<nn::parameter<float>*>& params, adamw_options options);
  // One update of every trainable parameter with its grad, at learning rate lr.
  //
  // Row-sparse parameters (embedding tables) get the same update as a dense one would give
  // them, but deferred: a row the batch did not reach has a zero gradient, so its step only
  // decays its moments and moves it along its momentum; those steps are replayed when a batch
  // next reaches the row, or at flush(). The cost is that of the rows reached, not of the table.
  void step(double lr);
  // Brings every deferred row up to date: call before reading or saving the weights.
  void flush();

  // Everything a resumed run needs to take the same steps as one never stopped (deferred rows
  // stay deferred: flushing early would round differently).
  struct state {
    std::vector<std::vector<float>> m, v;
    std::vector<std::vector<int64_t>> done;
    std::vector<double> lrs, replay_steps;
    std::vector<float> step_sizes, inv_c2s;
    int64_t t = 0;
  };
  state save() const;
  void load(state s);  // from save() of an optimiser over parameters of the same shapes

 private:
  // Replays steps (done_[i][row], last] of row `row` of parameter i with a zero gradient.
  void catch_up(size_t i, int64_t row, int64_t last);
  void update_range(size_t i, size_t begin, size_t end, int64_t t);

  std::vector<nn::parameter<float>*> params_;
  std::vector<std::vector<float>> m_, v_;  // first and second moments
  std::vector<std::vector<int64_t>> done_;  // row-sparse: the step each row is up to date with
  std::vector<double> lrs_;                 // the learning rate of each step so far (1-based)
  std::vector<float> step_sizes_, inv_c2s_;  // and its bias-corrected step size, 1 / (1 − β2^t)
  std::vector<double> replay_steps_;         // step size · √(1 − β2^t), for deferred steps
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
