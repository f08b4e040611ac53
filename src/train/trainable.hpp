// What the one training loop (loop.hpp) needs of a model: its parameters, a step's gradient and
// the step's FLOPs. The text models (models::network: classify, next-word, masked-word, lm) are
// network_trainable below, their step sharded (sharded_step.hpp); another model kind (the
// translator) gives the loop its own.
#pragma once

#include <cstdint>
#include <vector>

#include "attn/train.hpp"
#include "models/network.hpp"
#include "nn/parameter.hpp"
#include "train/sharded_step.hpp"

namespace attn::train {

struct step_batch;  // loop.hpp

class trainable {
 public:
  virtual ~trainable() = default;
  // Every parameter, in the model file's order (trainable or frozen).
  virtual std::vector<nn::parameter<float>*> parameters() = 0;
  // Leaves in the parameters' grads the gradient of the batch's mean loss; exchange: null, or
  // the processes of a data-parallel run sharing the step's shards.
  virtual step_totals gradients(const step_batch& b, int64_t shards, const gradient_exchange* exchange) = 0;
  // The step's FLOPs by estimate (MFU's numerator), nanoGPT's way.
  virtual double step_flops(const step_batch& b, const step_totals& t) const = 0;
};

class network_trainable final : public trainable {
 public:
  explicit network_trainable(models::network<float>& net);
  std::vector<nn::parameter<float>*> parameters() override { return net_.parameters(); }
  step_totals gradients(const step_batch& b, int64_t shards, const gradient_exchange* exchange) override;
  double step_flops(const step_batch& b, const step_totals& t) const override;

 private:
  models::network<float>& net_;
  models::network_cache<float> cache_;
  shard_copies copies_;  // --shards: the network's copies the shards run on, side by side
  int64_t dense_weights_ = 0;
};

}  // namespace attn::train
