// A training run's checkpoint as the loop (train/loop.hpp) writes and resumes it: where the run
// is (progress), the reports so far, the weights, the optimiser's whole state and the best
// weights kept apart, plus what the task's batch source adds of its own place (the corpus's
// read position; the in-memory examples' order and random stream). The file is checkpoint.hpp's
// format; its header is read as untrusted input, every field checked against the run it resumes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/train.hpp"
#include "io/json_fields.hpp"
#include "models/network.hpp"
#include "train/checkpoint.hpp"
#include "train/optimizer.hpp"
#include "train/text_model_impl.hpp"

namespace attn::train {

// Where a run is: what the checkpoint holds besides weights, optimiser and the source's place.
struct progress {
  int64_t epoch = 1, part = 0, batch = 0;  // the next batch to train (part: the corpus's chunk)
  int64_t done = 0, all_tokens = 0;        // steps and tokens so far
  double loss_sum = 0;                     // this epoch's, for the report
  int64_t rows_sum = 0, epoch_tokens = 0;
  int64_t best_epoch = 0;
  scored_examples best{.loss = 0, .accuracy = -1, .n = 0};
  bool best_saved = false;     // best weights kept apart (the best epoch is not the latest)
  double seconds = 0;          // training time so far (a --time budget goes on from it)
  double window_loss_sum = 0;  // the training loss since the last --eval-steps evaluation
  int64_t window_rows = 0;
};

// What the run itself fixes: its epochs, steps, each part's steps and how many sequences it holds.
struct run_shape {
  int64_t epochs = 0, steps = 0;
  std::vector<int64_t> part_steps;  // an epoch's sum to steps
  int64_t sequences = 0;
};

// A batch source's own place in the checkpoint: fields of "progress" and arrays of its own.
struct source_place {
  virtual ~source_place() = default;
  virtual void save(nlohmann::json& progress_fields, checkpoint& c) const = 0;
  // Input errors (through h) when the place does not fit the run.
  virtual void load(const nlohmann::json& progress_fields, const io::json_fields& h, const checkpoint& c) = 0;
};

// What a checkpoint must match to be resumed, and what is written with it.
struct checkpoint_identity {
  std::string path, format, fingerprint, run;  // format: the task's own ("attn-lm-training/1", …)
};

// The training record as a checkpoint's fingerprint holds it: the data (and a vectors file) by
// their bytes' digest instead of their paths.
std::string content_record(const std::string& record, const train_options& o);

// What a checkpoint must match to be resumed: the options (content_record) and the network they
// made.
std::string run_fingerprint(const text_model_config& c, const text_model::impl& model, const train_options& o);

// The id a checkpoint holds, so that the run's end removes its own checkpoint and no other.
std::string new_run_id();

// Each task's checkpoints are their own format: one never resumes another.
std::string checkpoint_format(text_task task);

void save_checkpoint(const checkpoint_identity& id, const progress& p, const source_place& place,
                     const std::vector<train_epoch_report>& epochs,
                     const std::vector<train_eval_report>& evaluations,
                     const std::vector<nn::parameter<float>*>& params, const adamw& optimiser,
                     const std::vector<std::vector<float>>& best_weights);

// Loads a checkpoint into the run (weights, optimiser, best weights, the source's place) and
// returns where to go on from; id.run becomes the checkpoint's run. An input error when it was
// made with other data or options.
progress load_checkpoint(checkpoint_identity& id, text_task task, source_place& place,
                         std::vector<train_epoch_report>& epochs, std::vector<train_eval_report>& evaluations,
                         const run_shape& run, bool validating,
                         const std::vector<nn::parameter<float>*>& params, adamw& optimiser,
                         std::vector<std::vector<float>>& best_weights);

}  // namespace attn::train
