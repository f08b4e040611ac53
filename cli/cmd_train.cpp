// attn train: trains the text model (next-word or classify) and saves it as safetensors.
#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <optional>

#include "attn/error.hpp"
#include "attn/train.hpp"
#include "cli_common.hpp"
#include "train_progress.hpp"

namespace attn::cli {

namespace {

struct train_args {
  std::string task, data, valid, vectors, output;
  int64_t learn_embeddings = 0, heads = 4, dim = 0, hidden = 0, epochs = 0, batch = 32;
  bool finetune = train_options{}.finetune_embeddings;
  int64_t min_count = train_options{}.min_count, layers = train_options{}.layers, feedforward = 0;
  int64_t patience = train_options{}.patience;
  std::string pool = pooling_name(train_options{}.pool);
  double dropout = train_options{}.dropout;
  double lr = train_options{}.lr, weight_decay = 0.01, clip = 1.0, warmup = 0.05;
  uint64_t seed = 0;
  bool positions = false;
};

std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int) {
  interrupted.store(true);
  // A second Ctrl-C ends the process at once (nothing has been written: the model file is
  // only written after training).
  std::signal(SIGINT, SIG_DFL);
}

void report_data(const char* what, const data_summary& s) {
  fmt::print(stderr, "{} {}: {} lines, {} tokens\n", what, s.source, s.lines, s.tokens);
  if (s.new_words > 0)
    fmt::print(stderr, "  {} words without a pre-trained vector got learned rows\n", s.new_words);
  if (s.tuned_words > 0)
    fmt::print(stderr, "  {} words' default vectors fine-tuned (every other word keeps its "
                       "vector)\n", s.tuned_words);
  if (s.unknown_words > 0)
    warn(fmt::format("{}: {} tokens without an embedding skipped (e.g. {})", s.source,
                     s.unknown_words, fmt::join(s.unknown_examples, ", ")));
  if (s.skipped_lines > 0)
    warn(fmt::format("{}: {} lines left nothing to learn from, skipped", s.source, s.skipped_lines));
}

void run(const train_args& args) {
  train_options o;
  if (args.task != "next-word" && args.task != "classify")
    throw_usage(fmt::format("--task '{}': expected next-word or classify", args.task));
  o.task = args.task == "classify" ? text_task::classify : text_task::next_word;
  if (args.learn_embeddings > 0 && !args.vectors.empty())
    throw_usage("--vectors and --learn-embeddings exclude each other");
  std::optional<vectors> word_vectors;
  if (args.learn_embeddings <= 0) {
    word_vectors = load_vectors(args.vectors);
    o.word_vectors = &*word_vectors;
  }
  o.data = args.data;
  o.valid = args.valid;
  o.learn_embeddings = args.learn_embeddings;
  o.finetune_embeddings = args.finetune;
  o.positions = args.positions;
  o.heads = args.heads;
  o.dim = args.dim;
  o.hidden = args.hidden;
  o.min_count = args.min_count;
  o.layers = args.layers;
  o.feedforward = args.feedforward;
  o.pool = parse_pooling(args.pool);
  o.dropout = args.dropout;
  o.patience = args.patience;
  o.epochs = args.epochs;
  o.lr = args.lr;
  o.batch = args.batch;
  o.seed = args.seed;
  o.weight_decay = args.weight_decay;
  o.clip = args.clip;
  o.warmup = args.warmup;

  train_progress progress;
  train_callbacks callbacks;
  callbacks.on_step = [&](const train_step_report& r) { progress.step(r); };
  callbacks.on_epoch = [&](const train_epoch_report& r) { progress.epoch(r); };
  callbacks.stop = &interrupted;
  interrupted.store(false);
  auto previous = std::signal(SIGINT, on_interrupt);
  train_result result = train_text_model(o, callbacks);
  std::signal(SIGINT, previous);
  progress.clear();
  if (result.stopped) {
    fmt::print(stderr, "interrupted: stopped before the end, {} not written\n", args.output);
    std::exit(130);
  }
  report_data("trained on", result.train);
  if (result.left_out > 0)
    fmt::print(stderr, "  {} training lines inside held-out lines left out (their labels would "
                       "leak)\n", result.left_out);
  if (!result.valid.source.empty())
    report_data("validated on", result.valid);
  else
    fmt::print(stderr, "no validation: {} lines are too few to hold some out (the last epoch is "
                       "kept)\n", result.train.lines);
  const auto& epochs = result.epochs;
  if (!result.valid.source.empty() && !epochs.empty()) {
    const train_epoch_report& best = epochs[static_cast<size_t>(result.best_epoch - 1)];
    fmt::print(stderr, "kept epoch {} of {} (valid accuracy {:.4f}){}\n", result.best_epoch,
               epochs.size(), best.accuracy,
               result.stopped_early ? fmt::format(": stopped early, no better score in the last "
                                                  "{} epochs", epochs.size() - static_cast<size_t>(result.best_epoch))
                                    : "");
  }
  const text_model_config& c = result.model.config();
  write_output(args.output, result.model.encode());
  const bool defaults = c.embeddings == embedding_source::default_vectors;
  std::string rows;
  if (defaults && c.embeddings_trained)
    rows = fmt::format(", {} rows learned (the training words' fine-tuned, the rest frozen)",
                       c.new_words);
  else if (defaults)
    rows = c.new_words > 0 ? fmt::format(", frozen, {} new words learned", c.new_words) : ", frozen";
  fmt::print(stderr, "saved {}: {} {}, {} embeddings ({} words, {} dims{}), {}, {} heads, dim {}, "
                     "{} pooling, hidden {}{}\n",
             args.output, result.model.outputs().size(),
             c.task == text_task::classify ? "labels" : "output words",
             defaults ? "default GloVe" : c.embeddings_trained ? "trained" : "stored",
             result.model.input_vocabulary(), c.embed_dim, rows,
             c.layers == 0 ? std::string("the seeds' attention layer")
                           : fmt::format("{} encoder layer{} (feed-forward {})", c.layers,
                                         c.layers == 1 ? "" : "s", c.feedforward),
             c.heads, c.dim, pooling_name(c.pool), c.hidden,
             c.max_positions > 0 ? fmt::format(", {} positions", c.max_positions) : "");
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto args = std::make_shared<train_args>();
  CLI::App* sub = app.add_subcommand(
      "train", "Train a text model: embeddings → self-attention → mean → MLP → next word or label");
  sub->add_option("--task", args->task, "next-word (each prefix predicts its next word) or "
                                        "classify (lines 'label<TAB>text')")
      ->required();
  sub->add_option("--data", args->data, "Training file")->required();
  sub->add_option("--valid", args->valid,
                  "Validation file (same format), scored every epoch; default: 10% of the "
                  "training lines (at most 5000) held out when there are at least 200");
  sub->add_option("--vectors", args->vectors,
                  "Pre-trained word vectors (default: the embedded GloVe 6B 100d), frozen");
  sub->add_option("--learn-embeddings", args->learn_embeddings,
                  "Learn embeddings of this width from the data instead of pre-trained ones")
      ->check(CLI::PositiveNumber);
  sub->add_flag("--finetune-embeddings,!--frozen-embeddings", args->finetune,
                "Train the pre-trained vectors too (the default; with the embedded GloVe, a copy "
                "of each training word's vector), or keep them frozen");
  sub->add_flag("--positions", args->positions, "Add learned positional embeddings");
  sub->add_option("--heads", args->heads, "Attention heads (default 4; divides --dim)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--dim", args->dim, "Attention width (default: the embedding width)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--hidden", args->hidden, "MLP hidden width (default: the attention width)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--epochs", args->epochs,
                  "Most passes over the data (default: enough for 1000 optimiser steps, at least "
                  "4, at most 1000; early stopping may end sooner)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--patience", args->patience,
                  "Stop after this many epochs without a better validation score (default 3)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--min-count", args->min_count,
                  "Training words without a pre-trained vector that occur at least N times get "
                  "a learned row (default 1; 0: skip them)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--layers", args->layers,
                  "0: the seeds' attention layer; N: N Transformer encoder layers (residuals, "
                  "layer norm, feed-forward)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--feedforward", args->feedforward,
                  "Encoder layers' feed-forward width (default: twice --dim)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--pool", args->pool, "How token vectors become one: max (default), mean (the seeds'), mean+max or "
                  "attention (a learned query's weights)");
  sub->add_option("--dropout", args->dropout, "Dropout on the embeddings and the pooled vector (default 0.3)")
      ->check(CLI::Range(0.0, 0.95));
  sub->add_option("--lr", args->lr, "Peak learning rate (default 0.001)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--batch", args->batch, "Lines per step (default 32)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--seed", args->seed, "Random seed (default 0): same seed, same model");
  sub->add_option("--weight-decay", args->weight_decay, "AdamW weight decay (default 0.01)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--clip", args->clip, "Gradient norm limit (default 1; 0 = none)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--warmup", args->warmup, "Share of steps warming up (default 0.05)")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("-o,--output", args->output, "Model file (.safetensors)")->required();
  sub->callback([args] { run(*args); });
}

}  // namespace attn::cli
