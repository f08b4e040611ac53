// Training the text model of attn/text_model.hpp: AdamW with weight decay, gradient clipping,
// a linear warm-up then a cosine learning rate, dropout, a validation split held out from the
// training data when none is given, early stopping that keeps the best epoch's weights, and
// attn's own seeded random numbers, so a run with the same seed and thread count repeats bit
// for bit.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/text_model.hpp"
#include "attn/vectors.hpp"

namespace attn {

// glibc's malloc thresholds fixed for the whole process (mallopt): blocks up to 32 MiB come from
// the heap, and the heap is kept until 1 GiB of it is free, so buffers a training step frees are
// reused by the next one instead of being unmapped and faulted in again. train_text_model calls
// it; so does `attn bench --backward`, which times a training step's attention. Nothing where
// glibc is not the C library.
void keep_freed_memory_for_reuse();

// The output layer's products while training: float32, or bf16 operands with float32 sums
// (PyTorch's autocast). The model file is float32 either way.
enum class train_dtype { float32, bf16 };
// Where the training step runs: the CPU, or a CUDA GPU (masked-word and lm; docs/GPU.md).
enum class train_device { cpu, cuda };

struct train_options {
  text_task task = text_task::next_word;
  std::string data;   // training file: lines (next-word) or label<TAB>text (classify)
  std::string valid;  // optional validation file, same format; without one, valid_share of the
                      // training lines is held out (when there are at least valid_min_lines)
  // Pre-trained word vectors (frozen unless finetune_embeddings); null with learn_embeddings.
  // The embedded default (source "<default>") is referenced by the model file, not copied.
  const vectors* word_vectors = nullptr;
  int64_t learn_embeddings = 0;  // > 0: learn embeddings of this width from scratch
  // Train the pre-trained vectors too (with the default vectors: a copy of each training word's
  // row; every other word keeps its vector). Learned embeddings always train.
  bool finetune_embeddings = true;
  // Training words without a pre-trained vector that occur at least this often get a learned
  // row (0: none do, the seeds' behaviour: such words are skipped).
  int64_t min_count = 1;
  bool positions = false;  // learned positional embeddings
  int64_t heads = 4;
  int64_t dim = 0;     // attention width; 0: the embedding width
  int64_t layers = 0;  // 0: the seeds' attention layer; N: N Transformer encoder layers
  int64_t feedforward = 0;  // encoder layers' feed-forward width; 0: twice the attention width
  bool norm_first = false;  // pre-norm encoder layers (GPT-2's), with a final layer norm
  pooling pool = pooling::max;
  int64_t hidden = 0;  // MLP hidden width; 0: the attention width
  double dropout = 0.3;  // on the embeddings and the pooled vector
  // Tokens per word window before the attention (each token sees its neighbours: a 1-D
  // convolution); 0: none; -1: the task's default (classify 3, the others none).
  int64_t window = -1;
  // Each step's batch is cut into this many shards, whose gradients are computed apart and
  // summed in shard order (next-word and classify). 1: the plain batch gradient. A
  // data-parallel run (train_callbacks::exchange) shares the shards among its processes, and
  // gives the model of a one-process run with the same number of shards, bit for bit.
  int64_t shards = 1;
  int64_t epochs = 0;  // an upper bound; 0: enough epochs for min_steps optimiser steps
  int64_t min_steps = 0;     // the automatic budget (see trainer.cpp for its default)
  int64_t patience = 3;      // stop after this many epochs without a better validation score
  double valid_share = 0.1;  // held out when there is no validation file
  int64_t valid_min_lines = 200;
  double lr = 1e-3;
  int64_t batch = 32;
  uint64_t seed = 0;
  double weight_decay = 0.01;
  double clip = 1.0;           // global gradient norm limit (0: none)
  double warmup = 0.05;        // share of the steps spent warming up

  // masked-word and lm (see corpus_trainer.cpp): the corpus is streamed, never held whole.
  double mask_share = 0.15;     // of the tokens whose word can be predicted, hidden each pass
  int64_t max_length = 64;      // longer sentences are cut into pieces of at most this many tokens
  int64_t max_outputs = 30000;  // the most frequent corpus words that can be predicted
  bool group_by_length = false; // batches of sentences of like length (Hugging Face's group_by_length)
  bool pack_sentences = false;  // consecutive sentences joined up to max_length (RoBERTa's FULL-SENTENCES)
  double drop_final_stop = 0;   // the share of sentences read without their final . ! or ?
  std::string checkpoint;       // where to save the training state ("" : the CLI's OUT.checkpoint)
  int64_t checkpoint_steps = 500;  // save every this many steps (and when stopped); 0: never
  bool resume = false;          // continue from the checkpoint (same data and options)
  int64_t stop_after_steps = 0; // > 0: stop after this many steps in all, as Ctrl-C does
  // masked-word and lm: > 0: every this many steps (a multiple of eval_steps, where the run
  // brings its deferred rows up to date anyway, so its bits do not change) also hand the model
  // so far to on_snapshot, as Hugging Face's save_steps and nanoGPT's checkpoints let one read a
  // run's model before its end.
  int64_t save_steps = 0;

  // lm only: the vocabulary (the most frequent words, plus the unknown and end-of-paragraph
  // tokens) and the window each position sees (and the learned positions' count). lm and
  // masked-word: budgets beside epochs: tokens trained on (masked-word: the steps that read
  // that many at the corpus's mean tokens a step), and wall-clock seconds (the learning rate
  // then follows the time spent, so such a run is not repeatable bit for bit).
  int64_t vocab = 10000;
  int64_t context = 128;
  int64_t max_tokens = 0;    // 0: no limit
  double time_limit = 0;     // seconds; 0: no limit
  int64_t eval_steps = 0;    // also score the held-out text every N steps (0: each epoch's end)

  // masked-word and lm: the tied output's three products (most of a step's multiply-adds) on
  // bf16 operands, float32 sums; the rest of the step float32.
  train_dtype dtype = train_dtype::float32;
  // masked-word and lm: the step on a CUDA GPU (a CUDA build: docs/GPU.md); with bf16 every
  // product and the attention on bf16 operands there.
  train_device device = train_device::cpu;
  // masked-word and lm: the adaptive softmax (docs/LM.md): cuts over the output words, most
  // frequent first — the head's size, then each cluster's end but the last, which the output
  // words close (lm: before <unk> and <eos>, which stay in the head). Empty: the full softmax.
  std::vector<int64_t> adaptive_softmax;

  // translate (attn/translation_model.hpp): the pairs as two files aligned by line, or data as
  // source<TAB>target lines; held-out pairs the same way (default: a share held out, see
  // translation_trainer.cpp). max_length above: a pair with a side longer (in pieces, </s>
  // included) is skipped and counted, never cut.
  std::string source, target, valid_source, valid_target;
  // Subword pieces learned from the training text (SentencePiece BPE): translate's joint
  // vocabulary (its default, task_defaults: 8000), or lm's tokens instead of lowercased words
  // (0: words).
  int64_t pieces = 0;
  double label_smoothing = 0.1;   // ε of the training loss
  double residual_dropout = 0;    // on each layer's sub-layer outputs before the residual add
  int64_t batch_tokens = 4096;    // each batch's padded source + target tokens at most

  // Threads for this run (1 … 4096); 0: as many as OpenMP gives (the CLI's --threads sets that).
  // The model is the same on any number.
  int64_t threads = 0;
};

struct data_summary {
  std::string source;          // the file, or how the lines were taken from it
  int64_t lines = 0, tokens = 0;
  int64_t new_words = 0;       // training words without a pre-trained vector given a row
  int64_t tuned_words = 0;     // training words whose default vector got a fine-tuned copy
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
  // Model FLOPs utilisation, as nanoGPT logs it: the FLOPs the steps so far needed by estimate
  // (forward and backward, 6 per weight and token, plus attention's), per second, as a share of
  // the float32 FMA peak measured as the run began. 0: not measured.
  double mfu = 0;
};

// masked-word, lm: the held-out text scored in the middle of an epoch (--eval-steps).
struct train_eval_report {
  int64_t step = 0, steps = 0;  // optimiser steps done, planned
  int64_t tokens = 0;           // trained on so far
  double loss = 0;              // mean cross-entropy per held-out token (perplexity = e^loss)
  double accuracy = 0;          // of the next token (lm) or hidden word (masked-word), top-1
  double train_loss = 0;        // mean training loss of the steps since the previous evaluation
};

struct train_epoch_report {
  int64_t epoch = 0, epochs = 0;
  double loss = 0;                // mean training loss of the epoch
  double accuracy = 0;            // on the validation file, or the training data without one
  double eval_loss = 0;
  int64_t n = 0;                  // predictions the accuracy counts
  bool on_validation = false;
  bool best = false;              // the best score so far: these weights are kept
  double seconds = 0, tokens_per_second = 0;
};

// The processes of a data-parallel run (attn-mpi train): each reads the data, computes the
// gradients of its share of every batch's shards, and swaps them with the others, so that all
// take the same steps.
struct gradient_exchange {
  int process = 0, processes = 1;
  // Every process's bytes, concatenated in process order (each process passes its own).
  std::function<std::vector<char>(const std::vector<char>&)> all_gather;
  // Runs step on every process (reading its files); when it throws on any process, every
  // process throws that error, so none waits for a swap that never comes.
  std::function<void(const std::function<void()>&)> agreed;
};

struct train_callbacks {
  std::function<void(const train_step_report&)> on_step;
  std::function<void(const train_epoch_report&)> on_epoch;
  std::function<void(const train_eval_report&)> on_eval;
  // train_options::save_steps: the step and the model so far (a model file's bytes).
  std::function<void(int64_t step, const std::string& model_file)> on_snapshot;
  const std::atomic<bool>* stop = nullptr;  // set (from a signal handler, say) to stop early
  const gradient_exchange* exchange = nullptr;  // data-parallel: the processes sharing the shards
};

struct train_result {
  text_model model;
  data_summary train, valid;
  std::vector<train_epoch_report> epochs;
  std::vector<train_eval_report> evaluations;  // masked-word, lm: every --eval-steps, resumed runs' too
  int64_t left_out = 0;        // training lines inside a held-out line (see trainer.cpp)
  int64_t planned_epochs = 0;  // the budget (options.epochs, or the automatic one)
  int64_t best_epoch = 0;      // the epoch whose weights the model holds
  bool stopped_early = false;  // no better validation score for `patience` epochs
  bool stopped = false;  // stop was set before the last epoch ended
  std::string checkpoint;  // masked-word, lm: the checkpoint saved when stopped ("" : none)
  int64_t resumed_at = 0;  // masked-word, lm --resume: the step it went on from
  int64_t trained_tokens = 0;  // masked-word, lm: tokens the steps read, in all
  std::string budget_end;  // lm: which budget ended the run ("" : the epochs)
  std::string no_validation;  // why nothing was held out, when nothing was
  // masked-word, lm: the checkpoint file is this run's (it saved it, or resumed from it), so it may
  // be removed once the model is written; a file the run never touched is left alone.
  bool checkpoint_written = false;
  // masked-word, lm: the id of the run its checkpoint holds (this run's own, or the one it resumed),
  // for remove_training_checkpoint.
  std::string checkpoint_run;
};

// The options a task starts from: train_options{} with the task's own defaults (masked-word: 2
// layers, learned positions, dropout 0.1, the default vectors frozen; lm: 4 pre-norm layers,
// dropout 0.1, lr 0.003, min_count 2; attn/train_option_table.hpp's rows hold them). attn train
// and attn.train apply the options given on top.
train_options task_defaults(text_task task);

// lm --pieces: pieces have no pre-trained vectors, so the model learns its embeddings (as wide
// as --dim, else 256) unless learn_embeddings is set. A usage error when word vectors are given
// too. attn train and attn.train call it after the options given are applied.
void settle_piece_embeddings(train_options& o, bool vectors_given);

// The names attn train and attn.train take: "next-word", "classify", "masked-word", "lm"; and a
// duration, "90s", "30m", "1h" or "1h30m" (a unit after every number, h, m, s each at most once
// and in that order), in seconds (> 0). A usage error quotes the text
// after `option`, as the caller spells it ("--task", "task").
text_task parse_task(const std::string& name, const std::string& option = "task");
double parse_duration(const std::string& text, const std::string& option = "time");

// How a caller names its options in errors: attn train's flags ("--max-tokens") or attn.train's
// keywords ("max_tokens"). check_task_options (attn/train_option_table.hpp) checks them.
enum class option_spelling { cli, python };

train_result train_text_model(const train_options& options, const train_callbacks& callbacks = {});

// train_options::save_steps' file for step N beside the output, named by the step as Hugging
// Face's checkpoint-N folders are: model.safetensors → model.step2000.safetensors.
std::string snapshot_path(const std::string& output, int64_t step);
// The files that exist now beside `output` with a snapshot's name (snapshot_path(output, N), any
// N): those a run with save_steps could replace, for its callers' check of inputs and outputs.
std::vector<std::string> existing_snapshots(const std::string& output);
// Writes on_snapshot's model file to snapshot_path(output, step), whole or not at all (a
// temporary renamed into place); returns that path.
std::string save_snapshot(const std::string& output, int64_t step, const std::string& model_file);

// Whether the file at `path` is a training checkpoint (it begins with the format's magic line).
bool is_training_checkpoint(const std::string& path);
// Removes the checkpoint at `path` once its run is complete, only when it is a training
// checkpoint holding the run id `run` (train_result::checkpoint_run): never a file that merely
// sits at that path, nor another run's checkpoint. Returns whether it removed it.
bool remove_training_checkpoint(const std::string& path, const std::string& run);

}  // namespace attn
