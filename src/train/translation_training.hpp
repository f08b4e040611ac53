// Translation's plug-ins for the one training loop (loop.hpp): the translator as a trainable
// (its step and FLOPs) and the batches of an epoch (like-length pairs within a token budget,
// translation_pairs.hpp, in an order drawn for each epoch). The task's trainer joins them with
// an evaluation and the model file.
#pragma once

#include <cstdint>
#include <vector>

#include "models/translator.hpp"
#include "train/loop.hpp"
#include "train/rng.hpp"
#include "train/trainable.hpp"
#include "train/translation_pairs.hpp"

namespace attn::train {

// The translator's starting weights, as nn.Transformer's _reset_parameters and fairseq start
// them: every matrix Xavier-uniform (±√(6 / (fan_in + fan_out))), the shared embedding N(0, 1/E)
// (its rows then have the norm that ·√E brings to the positions' scale), biases 0, layer norms'
// weights 1 and biases 0. Drawn from r in the model file's order: the same seed, the same model.
void initialise(models::translator<float>& model, rng& r);

class translator_trainable final : public trainable {
 public:
  // bf16: each step's products on bf16 operands with float32 sums (nn/autocast.hpp).
  explicit translator_trainable(models::translator<float>& model, bool bf16 = false) : model_(model), bf16_(bf16) {}
  std::vector<nn::parameter<float>*> parameters() override;
  // --shards and attn-mpi: each shard's pairs in turn, summed in shard order (sharded_step.hpp).
  step_totals gradients(const step_batch& b, int64_t shards, const gradient_exchange* exchange) override;
  // 6 per dense weight and token, the tied output's 6·V·E per predicted row, and attention's 12
  // per layer, width and pair (the encoder's self-attention, the decoder's self- and
  // cross-attention) at the batch's mean lengths.
  double step_flops(const step_batch& b, const step_totals& t) const override;

 private:
  models::translator<float>& model_;
  bool bf16_;
  models::translator_cache<float> cache_;
};

// Mean cross-entropy per target piece (no label smoothing: the model's own probabilities) and
// next-piece accuracy over the pairs, teacher-forced, in batches of like length (the held-out
// score while training; attn eval's loss).
scored_examples score_pairs(const models::translator<float>& model, const std::vector<encoded_pair>& pairs,
                            int64_t batch_tokens);

class translation_batches final : public batch_source {
 public:
  // pairs: the training pairs (kept by reference); max_tokens: each batch's padded tokens at most.
  translation_batches(const std::vector<encoded_pair>& pairs, int64_t max_tokens, uint64_t seed);
  const std::vector<int64_t>& part_steps() const override { return part_steps_; }
  int64_t begin_part(int64_t epoch, int64_t part, bool resumed) override;
  step_batch batch(int64_t index, int64_t step) override;
  // The place in the run is the loop's (epoch, batch): nothing of the source's own to keep.
  void save(nlohmann::json&, checkpoint&) const override {}
  void load(const nlohmann::json&, const io::json_fields&, const checkpoint&) override {}

 private:
  const std::vector<encoded_pair>& pairs_;
  int64_t max_tokens_;
  uint64_t seed_;
  std::vector<int64_t> part_steps_;
  std::vector<std::vector<int64_t>> batches_;  // this epoch's, in its order
};

}  // namespace attn::train
