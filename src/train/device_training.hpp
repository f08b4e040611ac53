// Training on another device (attn train --device cuda): the step's gradient, clipping and the
// optimiser run there, on the device's own copy of the weights; the loop (loop.hpp) keeps the
// budget, the schedule, the batches, evaluation and the reports, and asks for the weights back
// (download) before it reads them: to score held-out text, to save or snapshot, at the end.
// The model file is the CPU's: train on a GPU, run anywhere.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "attn/train.hpp"
#include "nn/batch.hpp"
#include "models/network.hpp"
#include "train/sharded_step.hpp"
#include "train/text_model_impl.hpp"

namespace attn::train {

class device_training {
 public:
  virtual ~device_training() = default;
  // The gradient of the batch's mean loss, left on the device (dropout drawn from dropout_seed
  // as the CPU draws it; 0: none). Returns the batch's loss sum, rows and tokens.
  virtual step_totals gradients(const nn::batch& b, uint64_t dropout_seed) = 0;
  // The batch's held-out score (no dropout) added to tally: loss sum, top-1 and top-5 counts.
  virtual void score(const nn::batch& b, score_tally& tally) = 0;
  // Clipping by global norm (max_norm ≤ 0: none), then one AdamW step at lr.
  virtual void update(double lr, double max_norm) = 0;
  // The device's weights into the network's parameters.
  virtual void download() = 0;
  // "NVIDIA H100 80GB HBM3, bf16", for the run's report.
  virtual std::string describe() const = 0;
  // The device's dense peak in FLOP/s for the step's products (MFU's denominator; 0: unknown).
  virtual double peak_flops() const = 0;
};

// The GPU's training of a word model (lm, masked-word) on net's weights as they are now; a usage
// error for a model or option it does not run (and where attn was built without CUDA, or no
// device answers).
std::unique_ptr<device_training> make_cuda_training(models::network<float>& net, const train_options& o);

// Usage errors for --device cuda's options, before any data is read.
void check_device_options(const train_options& o);

}  // namespace attn::train
