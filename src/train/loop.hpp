// The one training loop every task runs (nanoGPT's train.py is the model): it owns the budget
// (epochs, --max-tokens, --time), the learning rate's schedule, the sharded step and clipping,
// the evaluation cadence (--eval-steps and each epoch's end), checkpoints and --resume, the best
// epoch's weights and patience, and the progress reports. A task plugs in
//   a batch source: the batches of each part of an epoch (the in-memory examples of classify and
//     next-word are one part; the streamed corpus of masked-word and lm is a part per chunk),
//     and its own place in a checkpoint;
//   an evaluation: the held-out score, which score is better, whether patience applies.
//
// Every random draw a source makes derives from the seed and the place in the run, or from a
// stream the checkpoint keeps, and the optimiser's state is saved whole, so a resumed run takes
// exactly the steps of one that never stopped and writes the same model file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/train.hpp"
#include "models/network.hpp"
#include "models/translator.hpp"
#include "train/loop_checkpoint.hpp"
#include "train/trainable.hpp"
#include "train/text_model_impl.hpp"

namespace attn::train {

class device_training;

// One optimiser step's batch: `items` items (lines, windows, masked sentences) making `rows`
// predictions; batch_of(begin, end) is the batch of items [begin, end), called from several
// threads at once when the step's shards run side by side.
struct step_batch {
  int64_t items = 0, rows = 0;
  uint64_t dropout_seed = 0;  // 0: no dropout
  std::function<nn::batch(int64_t, int64_t)> batch_of;  // the text models'
  // The translator's batch of items [begin, end) (its shards; the whole batch is (0, items)).
  std::function<models::translation_batch(int64_t, int64_t)> translation;
};

class batch_source : public source_place {
 public:
  // Each part's steps; an epoch's parts sum to its steps.
  virtual const std::vector<int64_t>& part_steps() const = 0;
  // Readies part `part` of epoch `epoch` and returns its batches (0: the epoch has no more).
  // `resumed`: the source's place came from a checkpoint taken within this part.
  virtual int64_t begin_part(int64_t epoch, int64_t part, bool resumed) = 0;
  // Batch `index` of the part, trained as the run's step number `step`.
  virtual step_batch batch(int64_t index, int64_t step) = 0;
  // The part was trained to its end (the corpus's next chunk starts where this one ended).
  virtual void end_part() {}
};

struct task_evaluation {
  bool validating = false;                 // the run holds text out
  std::function<scored_examples()> held_out;  // its score (called after the optimiser's flush)
  // The epoch's score without held-out text (classify and next-word score the training data);
  // null: none.
  std::function<scored_examples()> without_held_out;
  // Whether a score beats the best so far (best.n == 0: none yet).
  std::function<bool(const scored_examples& score, const scored_examples& best)> improves;
  bool patience = true;       // stop after --patience epochs without a better score
  bool epoch_history = true;  // each epoch's held-out score joins the curve (not only --eval-steps')
};

// The budget, in steps.
struct loop_budget {
  int64_t epochs = 0, steps = 0;        // planned epochs; steps an epoch
  int64_t total = 0, warmup = 0;        // the schedule's steps
  int64_t token_steps = 0, all_epochs = 0;  // --max-tokens' steps (0: none); steps × epochs
};

// Usage errors for the loop's own options (--time, --eval-steps, checkpoint and stop steps,
// --resume), and an input error when the checkpoint's path holds another kind of file.
void check_loop_options(const train_options& o);

// The task's constants for the automatic budget.
struct budget_rules {
  int64_t default_min_steps = 1000;  // without --min-steps, --max-tokens or --time
  int64_t min_epochs = 1, max_epochs = 100;
  int64_t tokens_per_step = 1;  // what --max-tokens is counted in
};
loop_budget plan_budget(const train_options& o, int64_t steps, const budget_rules& rules);

// Trains the model on the source's batches, filling result's reports (epochs, evaluations, best_epoch,
// stopped, stopped_early, budget_end, trained_tokens, and with a checkpoint its fields). On
// return the optimiser's deferred rows are in place and, unless stopped, the best weights.
// identity.path empty: no checkpoints. device: null (the CPU), or where the steps run
// (device_training.hpp; no checkpoints there yet).
void run_training_loop(const train_options& o, const train_callbacks& cb, trainable& model,
                       const std::function<std::string()>& encode_model, batch_source& source,
                       const task_evaluation& eval, const loop_budget& budget, checkpoint_identity identity,
                       int64_t sequences, train_result& result, device_training* device = nullptr);

}  // namespace attn::train
