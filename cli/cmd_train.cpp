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
  int64_t learn_embeddings = 0, heads = 4, dim = 0, hidden = 0, epochs = 20, batch = 32;
  double lr = 3e-3, weight_decay = 0.01, clip = 1.0, warmup = 0.05;
  uint64_t seed = 0;
  bool finetune = false, positions = false;
};

std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int) {
  interrupted.store(true);
  // A second Ctrl-C ends the process at once (nothing has been written: the model file is
  // only written after training).
  std::signal(SIGINT, SIG_DFL);
}

void report_data(const char* what, const std::string& path, const data_summary& s) {
  fmt::print(stderr, "{} {}: {} lines, {} tokens\n", what, path, s.lines, s.tokens);
  if (s.unknown_words > 0)
    warn(fmt::format("{}: {} words without an embedding skipped (e.g. {})", path,
                     s.unknown_words, fmt::join(s.unknown_examples, ", ")));
  if (s.skipped_lines > 0)
    warn(fmt::format("{}: {} lines left nothing to learn from, skipped", path, s.skipped_lines));
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
  report_data("trained on", args.data, result.train);
  if (!args.valid.empty()) report_data("validated on", args.valid, result.valid);
  const text_model_config& c = result.model.config();
  write_output(args.output, result.model.encode());
  fmt::print(stderr, "saved {}: {} {}, {} embeddings ({} words, {} dims{}), {} heads, dim {}, "
                     "hidden {}{}\n",
             args.output, result.model.outputs().size(),
             c.task == text_task::classify ? "labels" : "output words",
             c.embeddings == embedding_source::default_vectors ? "default GloVe" :
             c.embeddings_trained ? "trained" : "stored",
             result.model.input_vocabulary(), c.embed_dim,
             c.embeddings_trained || c.embeddings == embedding_source::stored ? "" : ", frozen",
             c.heads, c.dim, c.hidden,
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
  sub->add_option("--valid", args->valid, "Validation file (same format), scored every epoch");
  sub->add_option("--vectors", args->vectors,
                  "Pre-trained word vectors (default: the embedded GloVe 6B 100d), frozen");
  sub->add_option("--learn-embeddings", args->learn_embeddings,
                  "Learn embeddings of this width from the data instead of pre-trained ones")
      ->check(CLI::PositiveNumber);
  sub->add_flag("--finetune-embeddings", args->finetune, "Train the pre-trained vectors too");
  sub->add_flag("--positions", args->positions, "Add learned positional embeddings");
  sub->add_option("--heads", args->heads, "Attention heads (default 4; divides --dim)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--dim", args->dim, "Attention width (default: the embedding width)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--hidden", args->hidden, "MLP hidden width (default: the attention width)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--epochs", args->epochs, "Passes over the data (default 20)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--lr", args->lr, "Peak learning rate (default 0.003)")
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
