// Training the text model of attn/text_model.hpp: AdamW with weight decay, gradient clipping,
// a linear warm-up then a cosine learning rate, and attn's own seeded random numbers, so a run
// with the same seed and thread count repeats bit for bit.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/text_model.hpp"
#include "attn/vectors.hpp"

namespace attn {

struct train_options {
  text_task task = text_task::next_word;
  std::string data;   // training file: lines (next-word) or label<TAB>text (classify)
  std::string valid;  // optional validation file, same format
  // Pre-trained word vectors (frozen unless finetune_embeddings); null with learn_embeddings.
  // The embedded default (source "<default>") is referenced by the model file, not copied.
  const vectors* word_vectors = nullptr;
  int64_t learn_embeddings = 0;  // > 0: learn embeddings of this width from scratch
  bool finetune_embeddings = false;
  bool positions = false;  // learned positional embeddings
  int64_t heads = 4;
  int64_t dim = 0;     // attention width; 0: the embedding width
  int64_t hidden = 0;  // MLP hidden width; 0: the attention width
  int64_t epochs = 20;
  double lr = 3e-3;
  int64_t batch = 32;
  uint64_t seed = 0;
  double weight_decay = 0.01;
  double clip = 1.0;           // global gradient norm limit (0: none)
  double warmup = 0.05;        // share of the steps spent warming up
};

struct data_summary {
  int64_t lines = 0, tokens = 0;
  int64_t unknown_words = 0;   // skipped: no embedding
  int64_t skipped_lines = 0;   // nothing left to learn from
  std::vector<std::string> unknown_examples;  // the first few unknown words
};

struct train_step_report {
  int64_t epoch = 0, epochs = 0;  // 1-based epoch
  int64_t step = 0, steps = 0;    // step within the epoch (1-based), steps per epoch
  double loss = 0;                // running mean of the epoch so far
  double lr = 0;
  double tokens_per_second = 0;
  double eta_seconds = 0;         // for the whole run
};

struct train_epoch_report {
  int64_t epoch = 0, epochs = 0;
  double loss = 0;                // mean training loss of the epoch
  double accuracy = 0;            // on the validation file, or the training data without one
  double eval_loss = 0;
  int64_t n = 0;                  // predictions the accuracy counts
  bool on_validation = false;
  double seconds = 0, tokens_per_second = 0;
};

struct train_callbacks {
  std::function<void(const train_step_report&)> on_step;
  std::function<void(const train_epoch_report&)> on_epoch;
  const std::atomic<bool>* stop = nullptr;  // set (from a signal handler, say) to stop early
};

struct train_result {
  text_model model;
  data_summary train, valid;
  std::vector<train_epoch_report> epochs;
  bool stopped = false;  // stop was set before the last epoch ended
};

train_result train_text_model(const train_options& options, const train_callbacks& callbacks = {});

}  // namespace attn
