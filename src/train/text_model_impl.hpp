// What an attn::text_model holds: its configuration, the word ↔ index maps and the network.
#pragma once

#include <string>
#include <vector>

#include "attn/text_model.hpp"
#include "attn/training_curve.hpp"
#include "models/network.hpp"
#include "text/text_tokenizer.hpp"
#include "train/dataset.hpp"

namespace attn {

struct text_model::impl {
  impl(text_model_config c, train::word_index in, train::word_index out);

  text_model_config config;
  train::word_index inputs;   // a word → its embedding row
  train::word_index outputs;  // the output words or labels, in class order
  text::text_tokenizer tokenizer;  // words, or (lm --pieces) the pieces the model file holds
  models::network<float> net;
  std::string training;       // JSON: how it was trained (saved as metadata, for the record)
  training_history history;   // what the run scored as it went (saved as "history")

  std::string encode() const;  // the model file's bytes (text_model::encode; a training run's
                               // snapshots too)
};

}  // namespace attn

namespace attn::train {

struct scored_examples {
  double loss = 0, accuracy = 0;
  double top5 = 0;  // the share whose answer is among the 5 highest scores
  int64_t n = 0;
};

nn::network_shape network_shape_for(const text_model_config& config, int64_t vocabulary,
                                    int64_t classes);

// The most logits scoring holds at once (128 MB of floats): held-out scoring and attn eval
// group their sequences under it.
inline constexpr size_t max_scoring_logits = size_t{1} << 25;

// Mean cross-entropy and top-1 accuracy, gathered a batch at a time (every task's evaluation).
struct score_tally {
  void add(const models::network<float>& net, const nn::batch& b);
  scored_examples result() const;

  double loss_sum = 0;
  int64_t correct = 0, in_top5 = 0, n = 0;
  models::network_cache<float> cache;
};

// Mean cross-entropy and accuracy of the model over encoded examples, in batches.
scored_examples score_examples(const models::network<float>& net, text_task task,
                               const std::vector<encoded_example>& examples);

}  // namespace attn::train
