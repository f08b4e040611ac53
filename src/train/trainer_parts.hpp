// Parts of attn::train_text_model that its trainers share (the labelled tasks' in trainer.cpp,
// the masked-word task's in masked_word_trainer.cpp): option checks, initial weights, the
// record of how a model was trained, and keeping the best epoch's weights.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attn/train.hpp"
#include "models/network.hpp"
#include "train/dataset.hpp"
#include "train/rng.hpp"
#include "train/text_model_impl.hpp"

namespace attn::train {

// Usage errors for options out of range.
void check_options(const train_options& o);

// The model's configuration from the options shared by every task (embeddings, widths, heads,
// layers, pooling, dropout); usage errors for widths that do not fit together.
text_model_config model_config(const train_options& o);

// The embedded default vectors stay in the binary, so the model file names them instead of
// copying them; fine-tuned, the training words get rows of their own (starting from their
// vectors) and every other word keeps its vector.
bool uses_default_vectors(const train_options& o);

// After a pre-trained table's rows: a learned row for each word the vectors lack seen at least
// min_count times, and (fine-tuning the default vectors) a trainable copy of each word's
// vector, which then replaces it. counts: the training words, most frequent first. Returns
// how many copies.
int64_t add_learned_rows(const train_options& o,
                         const std::vector<std::pair<std::string, int64_t>>& counts, word_index& words);

// PyTorch's initialisations (see trainer_parts.cpp); the embedding rows from the word vectors.
void initialise(models::network<float>& net, const train_options& o, const word_index& inputs, rng& r);

// The options as JSON, saved in the model file for the record.
std::string training_record(const train_options& o, int64_t epochs);

// A run that diverged stops instead of "succeeding": a non-finite training loss, or a weight
// the last step made non-finite, is an input error naming the data and the step (exit 2), thrown
// before anything is written from the run (model, snapshot, checkpoint).
void check_finite_loss(const train_options& o, double loss_sum, int64_t step);
void check_finite_weights(const train_options& o, const std::vector<nn::parameter<float>*>& params, int64_t step);

// A validation score: higher accuracy is better, and at equal accuracy a lower loss.
bool better(const scored_examples& a, const scored_examples& b);

// The trainable parameters' values, to keep the best epoch's weights, and back.
std::vector<std::vector<float>> snapshot(const std::vector<nn::parameter<float>*>& params);
void restore(const std::vector<nn::parameter<float>*>& params, std::vector<std::vector<float>>& values);

}  // namespace attn::train
