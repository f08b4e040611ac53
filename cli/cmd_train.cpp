// attn train: trains the text model (next-word, classify, masked-word or lm) and saves it as
// safetensors.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <limits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "attn/error.hpp"
#include "attn/train.hpp"
#include "attn/training_curve.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"
#include "interrupt.hpp"
#include "run_lock.hpp"
#include "train_command.hpp"
#include "train_progress.hpp"

namespace attn::cli {

namespace {

struct train_args {
  std::string task, data, valid, vectors, output, plot;
  int64_t learn_embeddings = 0, heads = 4, dim = 0, hidden = 0, epochs = 0, batch = 32;
  bool finetune = train_options{}.finetune_embeddings;
  int64_t min_count = train_options{}.min_count, layers = train_options{}.layers, feedforward = 0;
  int64_t patience = train_options{}.patience;
  std::string pool = pooling_name(train_options{}.pool);
  double dropout = train_options{}.dropout;
  int64_t shards = 0;  // 0: one per process
  int64_t window = train_options{}.window;
  double lr = train_options{}.lr, weight_decay = 0.01, clip = 1.0, warmup = 0.05;
  uint64_t seed = 0;
  bool positions = false, norm_first = false;
  // masked-word
  double mask = train_options{}.mask_share;
  int64_t max_length = train_options{}.max_length, outputs = train_options{}.max_outputs;
  std::string checkpoint;
  int64_t checkpoint_steps = train_options{}.checkpoint_steps, stop_after_steps = 0, save_steps = 0;
  bool resume = false, group_by_length = false, pack_sentences = false;
  double drop_final_stop = 0;
  // lm
  int64_t vocab = train_options{}.vocab, context = train_options{}.context, max_tokens = 0, eval_steps = 0;
  double time_limit = 0;
  std::string dtype = "float32";  // masked-word, lm: the output layer's products
  std::vector<int64_t> adaptive_softmax;  // masked-word, lm: the adaptive softmax's cuts
  // Which options the command line set (masked-word has defaults of its own for the others).
  bool min_count_given = false, layers_given = false, dropout_given = false, finetune_given = false, positions_given = false;
  bool lr_given = false;
};

std::atomic<bool> interrupted{false};
std::atomic<int> stop_signal{0};  // which signal asked: the exit status is 128 + its number

// Ctrl-C (SIGINT) and kill (SIGTERM) stop the run the same way: the checkpoint saved, the same
// line printed.
extern "C" void on_interrupt(int signal_number) {
  stop_signal.store(signal_number);
  interrupted.store(true);
  // A second signal ends the process at once (nothing has been written: the model file is
  // only written after training), removing a checkpoint's temporary if one is being saved.
  std::signal(SIGINT, remove_temporaries_and_exit);
  std::signal(SIGTERM, remove_temporaries_and_exit);
}

int interrupted_status() { return 128 + (stop_signal.load() != 0 ? stop_signal.load() : SIGINT); }

// --adaptive-softmax's comma-separated cuts: each field a positive integer, none empty.
std::vector<int64_t> parse_cuts(const std::string& text) {
  std::vector<int64_t> cuts;
  size_t start = 0;
  for (int field = 1;; ++field) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string piece = text.substr(start, comma - start);
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), value);
    if (piece.empty() || ec != std::errc() || end != piece.data() + piece.size() || value < 1)
      throw_usage(fmt::format("--adaptive-softmax '{}': field {} is {}; expected positive whole numbers "
                              "between commas, such as 2000,6000",
                              text, field, piece.empty() ? "empty" : fmt::format("'{}'", piece)));
    cuts.push_back(value);
    if (comma == text.size()) break;
    start = comma + 1;
  }
  return cuts;
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

// lm: unknown words are read as <unk> (and counted in every figure), not skipped.
void report_lm_data(const char* what, const data_summary& s) {
  fmt::print(stderr, "{} {}: {} paragraphs, {} tokens ({} outside the vocabulary, read as <unk>: "
                     "{:.2f}%)\n",
             what, s.source, s.lines, s.tokens, s.unknown_words,
             s.tokens > 0 ? 100.0 * static_cast<double>(s.unknown_words) / static_cast<double>(s.tokens) : 0.0);
}

void run(const train_args& args, const train_hooks& hooks, const CLI::App& command) {
  if (!args.plot.empty() && !has_extension(args.plot, ".svg"))
    throw error(error_kind::usage, args.plot, "cannot tell the format from the extension", "--plot takes a .svg file");
  train_options o;
  o.task = parse_task(args.task, "--task");
  const bool lm = o.task == text_task::lm;
  const bool masked = o.task == text_task::masked_word;
  const bool streamed = masked || lm;  // the corpus trainer's tasks
  if (args.learn_embeddings > 0 && !args.vectors.empty())
    throw_usage("--vectors and --learn-embeddings exclude each other");
  const gradient_exchange* exchange = hooks.exchange;
  const int processes = exchange != nullptr ? exchange->processes : 1;
  // The run holds its checkpoint from here to its end (attn-mpi: rank 0, which writes it).
  run_lock lock;
  {
    const auto take = [&] {
      if (hooks.speaks) lock.acquire(args.checkpoint.empty() ? args.output + ".checkpoint" : args.checkpoint);
    };
    if (exchange != nullptr) exchange->agreed(take);
    else take();
  }
  std::optional<vectors> word_vectors;
  if (args.learn_embeddings <= 0) {
    const auto load = [&] { word_vectors = load_vectors(args.vectors); };
    if (exchange != nullptr) exchange->agreed(load);
    else load();
    o.word_vectors = &*word_vectors;
  }
  o.data = args.data;
  o.valid = args.valid;
  o.learn_embeddings = args.learn_embeddings;
  // The task's defaults (attn/train.hpp), where the command line did not set the option.
  const train_options task_default = task_defaults(o.task);
  o.finetune_embeddings = args.finetune_given ? args.finetune : task_default.finetune_embeddings;
  o.positions = args.positions_given ? args.positions : task_default.positions;
  o.heads = args.heads;
  o.dim = args.dim;
  o.hidden = args.hidden;
  o.min_count = args.min_count_given ? args.min_count : task_default.min_count;
  o.layers = args.layers_given ? args.layers : task_default.layers;
  o.feedforward = args.feedforward;
  o.norm_first = args.norm_first || task_default.norm_first;
  o.pool = parse_pooling(args.pool);
  o.dropout = args.dropout_given ? args.dropout : task_default.dropout;
  o.vocab = args.vocab;
  o.context = args.context;
  o.max_tokens = args.max_tokens;
  o.time_limit = args.time_limit;
  o.eval_steps = args.eval_steps;
  o.dtype = args.dtype == "bf16" ? train_dtype::bf16 : train_dtype::float32;
  o.adaptive_softmax = args.adaptive_softmax;
  o.window = args.window;
  o.shards = args.shards > 0 ? args.shards : processes;
  if (o.shards % processes != 0)
    throw_usage(fmt::format("--shards {} is not a multiple of the {} ranks", o.shards, processes));
  o.patience = args.patience;
  o.epochs = args.epochs;
  o.lr = args.lr_given ? args.lr : task_default.lr;
  o.batch = args.batch;
  o.seed = args.seed;
  o.weight_decay = args.weight_decay;
  o.clip = args.clip;
  o.warmup = args.warmup;
  o.mask_share = args.mask;
  o.max_length = args.max_length;
  o.max_outputs = args.outputs;
  o.group_by_length = args.group_by_length;
  o.pack_sentences = args.pack_sentences;
  o.drop_final_stop = args.drop_final_stop;
  o.checkpoint = args.checkpoint.empty() ? args.output + ".checkpoint" : args.checkpoint;
  o.checkpoint_steps = args.checkpoint_steps;
  o.resume = args.resume;
  o.stop_after_steps = args.stop_after_steps;
  o.save_steps = args.save_steps;
  check_task_options(o, option_spelling::cli);
  if (args.resume && !std::filesystem::exists(o.checkpoint))
    throw_input(o.checkpoint, "no checkpoint to resume from");

  train_progress progress(lm, streamed);
  train_callbacks callbacks;
  if (hooks.speaks) {
    callbacks.on_step = [&](const train_step_report& r) { progress.step(r); };
    callbacks.on_epoch = [&](const train_epoch_report& r) { progress.epoch(r); };
    callbacks.on_eval = [&](const train_eval_report& r) { progress.eval(r); };
  }
  callbacks.on_snapshot = [&](int64_t step, const std::string& model_file) {
    const std::string path = snapshot_path(args.output, step);
    // Checked at the start among the outputs when it existed; a name that came since is checked now.
    check_output_is_no_input(command, {"--save-steps", path});
    write_output(path, model_file);
    progress.clear();
    fmt::print(stderr, "saved {}: the model at step {}\n", path, step);
  };
  callbacks.stop = &interrupted;
  callbacks.exchange = exchange;
  interrupted.store(false);
  stop_signal.store(0);
  auto previous = std::signal(SIGINT, on_interrupt);
  auto previous_term = std::signal(SIGTERM, on_interrupt);
  if (previous_term == SIG_IGN) std::signal(SIGTERM, SIG_IGN);  // ignored when attn started: stays so
  train_result result = train_text_model(o, callbacks);
  std::signal(SIGINT, previous);
  std::signal(SIGTERM, previous_term);
  progress.clear();
  if (result.stopped && !result.checkpoint.empty()) {
    const bool asked = interrupted.load();
    if (hooks.speaks)
      fmt::print(stderr, "{}: the training state is in {}; the same command with --resume goes "
                         "on from there ({} not written)\n",
                 asked ? "interrupted" : fmt::format("stopped after {} steps", o.stop_after_steps),
                 result.checkpoint, args.output);
    lock.release();
    std::exit(asked ? interrupted_status() : 0);
  }
  if (result.stopped) {
    fmt::print(stderr, "interrupted: stopped before the end, {} not written\n", args.output);
    lock.release();
    std::exit(interrupted_status());
  }
  if (!hooks.speaks) return;  // another rank of a data-parallel run: rank 0 reports and writes
  if (result.resumed_at > 0) fmt::print(stderr, "resumed from {} at step {}\n", o.checkpoint, result.resumed_at);
  if (lm) {
    report_lm_data("trained on", result.train);
    if (!result.valid.source.empty()) report_lm_data("validated on", result.valid);
    fmt::print(stderr, "{} tokens trained on{}\n", result.trained_tokens,
               result.budget_end.empty() ? "" : fmt::format(" (the {} budget)", result.budget_end));
  } else {
    report_data("trained on", result.train);
    if (!result.budget_end.empty())
      fmt::print(stderr, "{} tokens trained on (the {} budget)\n", result.trained_tokens, result.budget_end);
  }
  if (result.left_out > 0)
    fmt::print(stderr, "  {} training lines inside held-out lines left out (their labels would "
                       "leak)\n", result.left_out);
  if (!result.valid.source.empty() && !lm)
    report_data("validated on", result.valid);
  else if (result.valid.source.empty())
    fmt::print(stderr, "no validation: {} (the last epoch is kept)\n",
               result.no_validation.empty()
                   ? fmt::format("{} lines are too few to hold some out", result.train.lines)
                   : result.no_validation);
  const auto& epochs = result.epochs;
  if (!result.valid.source.empty() && result.best_epoch >= 1 &&
      result.best_epoch <= static_cast<int64_t>(epochs.size())) {
    const train_epoch_report& best = epochs[static_cast<size_t>(result.best_epoch - 1)];
    fmt::print(stderr, "kept epoch {} of {} ({}){}\n", result.best_epoch, epochs.size(),
               lm ? fmt::format("valid perplexity {:.2f}", std::exp(best.eval_loss))
                  : fmt::format("valid accuracy {:.4f}", best.accuracy),
               result.stopped_early ? fmt::format(": stopped early, no better score in the last "
                                                  "{} epochs", epochs.size() - static_cast<size_t>(result.best_epoch))
                                    : "");
  }
  const text_model_config& c = result.model.config();
  // The model and its curve land together or not at all (staged, then renamed).
  std::vector<std::pair<std::string, std::string>> outputs{{args.output, result.model.encode()}};
  if (!args.plot.empty())
    outputs.emplace_back(args.plot, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" +
                                        render_training_curve_svg(result.model.history(), args.output));
  write_outputs(outputs);
  // The run is complete: its checkpoint has nothing left to resume. Only a file this run saved
  // or resumed from, holding its run id, is removed (never a file that merely sits at that path,
  // nor another run's checkpoint).
  if (result.checkpoint_written) remove_training_checkpoint(o.checkpoint, result.checkpoint_run);
  const bool defaults = c.embeddings == embedding_source::default_vectors;
  std::string rows;
  if (defaults && c.embeddings_trained)
    rows = fmt::format(", {} rows learned (the training words' fine-tuned, the rest frozen)",
                       c.new_words);
  else if (defaults)
    rows = c.new_words > 0 ? fmt::format(", frozen, {} new words learned", c.new_words) : ", frozen";
  const std::string head = c.task == text_task::lm ? std::string("tied output (the input rows score the next token)")
                           : c.task == text_task::masked_word
                               ? std::string("tied output (scored against the word vectors)")
                               : fmt::format("{} pooling, hidden {}", pooling_name(c.pool), c.hidden);
  fmt::print(stderr, "saved {}: {} {}, {} embeddings ({} words, {} dims{}), {}{}, {} heads, dim {}, "
                     "{}{}\n",
             args.output, result.model.outputs().size(),
             c.task == text_task::classify ? "labels" : "output words",
             defaults ? "default GloVe" : c.embeddings_trained ? "trained" : "stored",
             result.model.input_vocabulary(), c.embed_dim, rows,
             c.window > 0 ? fmt::format("a word window of {}, ", c.window) : std::string(),
             c.layers == 0 ? std::string("the seeds' attention layer")
                           : fmt::format("{} encoder layer{} ({}feed-forward {})", c.layers,
                                         c.layers == 1 ? "" : "s", c.norm_first ? "pre-norm, " : "",
                                         c.feedforward),
             c.heads, c.dim, head,
             c.max_positions > 0 ? fmt::format(", {} positions", c.max_positions) : "");
}

}  // namespace

void add_train_command(CLI::App& app) { add_train_command(app, train_hooks{}); }

void add_train_command(CLI::App& app, const train_hooks& hooks) {
  auto args = std::make_shared<train_args>();
  CLI::App* sub = app.add_subcommand(
      "train",
      "Train a text model: word embeddings → a word window (classify's default) → self-attention "
      "(or --layers N encoder layers) → pool (max by default) → MLP → next word or label; "
      "masked-word: a context model predicting hidden words");
  sub->add_option("--task", args->task, "next-word (each prefix predicts its next word), "
                                        "classify (lines 'label<TAB>text'), masked-word (plain "
                                        "text: hidden words predicted from both sides; a context model) "
                                        "or lm (plain text, one paragraph a line: a causal language "
                                        "model, every position predicting the next token; docs/LM.md)")
      ->required();
  reads(sub->add_option("--data", args->data, "Training file"))->required();
  reads(sub->add_option("--valid", args->valid,
                        "Validation file (same format), scored every epoch; default: 10% of the "
                        "training lines (at most 5000) held out when there are at least 200"));
  reads(sub->add_option("--vectors", args->vectors,
                        "Pre-trained word vectors (default: the embedded GloVe 6B 100d)"));
  sub->add_option("--learn-embeddings", args->learn_embeddings,
                  "Learn embeddings of this width from the data instead of pre-trained ones")
      ->check(positive_number);
  sub->add_flag("--finetune-embeddings,!--frozen-embeddings", args->finetune,
                "Train the pre-trained vectors too (the default; with the embedded GloVe, a copy "
                "of each training word's vector), or keep them frozen");
  sub->add_flag("--positions", args->positions, "Add learned positional embeddings");
  sub->add_option("--heads", args->heads, "Attention heads (default 4; divides --dim)")
      ->check(positive_number);
  sub->add_option("--dim", args->dim, "Attention width (default: the embedding width)")
      ->check(positive_number);
  sub->add_option("--hidden", args->hidden, "MLP hidden width (default: the attention width)")
      ->check(positive_number);
  sub->add_option("--epochs", args->epochs,
                  "Most passes over the data (default: enough for 1000 optimiser steps, at least "
                  "4, at most 1000; early stopping may end sooner)")
      ->check(positive_number);
  sub->add_option("--patience", args->patience,
                  "Stop after this many epochs without a better validation score (default 3)")
      ->check(positive_number);
  sub->add_option("--min-count", args->min_count,
                  "Training words without a pre-trained vector that occur at least N times get "
                  "a learned row (default 1; 0: skip them). lm: words seen fewer than N times are <unk> "
                  "(default 2, so the model learns how often unknown words come)")
      ->check(non_negative_number);
  sub->add_option("--layers", args->layers,
                  "0: the seeds' attention layer; N: N Transformer encoder layers (residuals, "
                  "layer norm, feed-forward)")
      ->check(non_negative_number);
  sub->add_flag("--norm-first", args->norm_first,
                "Encoder layers pre-norm (PyTorch's norm_first=True, GPT-2's blocks), with a final "
                "layer norm after them; default: post-norm, PyTorch's default");
  sub->add_option("--feedforward", args->feedforward,
                  "Encoder layers' feed-forward width (default: twice --dim)")
      ->check(positive_number);
  sub->add_option("--pool", args->pool, "How token vectors become one: max (default), mean (the seeds'), mean+max or "
                  "attention (a learned query's weights)");
  sub->add_option("--dropout", args->dropout, "Dropout on the embeddings and the pooled vector (default 0.3)")
      ->check(CLI::Range(0.0, 0.95));
  sub->add_option("--window", args->window,
                  "Tokens per word window before the attention: each token's vector mixed with "
                  "its neighbours' (a 1-D convolution; centred, causal for next-word); 0: none "
                  "(default: 3 for classify, none otherwise)")
      ->check(CLI::Range(int64_t{0}, int64_t{64}));
  sub->add_option("--shards", args->shards,
                  "Cut each batch into N shards, their gradients computed apart and summed in "
                  "order (default 1; attn-mpi: one per rank); the shards run side by side, one "
                  "per thread, each on its own copy of the network, and the model is the same on "
                  "any number of threads; attn train --shards K writes the model of mpirun -n K "
                  "attn-mpi train bit for bit")
      ->check(positive_number);
  sub->add_option("--lr", args->lr, "Peak learning rate, above 0 and at most 1 (default 0.001; lm: 0.003)")
      ->check(positive_number)
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            double value = 0;
            // Past 1 AdamW moves each weight by about the rate every step: the run only diverges.
            if (CLI::detail::lexical_cast(text, value) && value > 1)
              return fmt::format("must be at most 1, not {}", text);
            return "";
          },
          ""));
  sub->add_option("--batch", args->batch, "Lines per step (default 32; lm: windows)")
      ->check(positive_number);
  // Parsed by attn, not CLI11, whose unsigned conversion wraps -1 and 2^64 into valid seeds.
  sub->add_option_function<std::string>(
         "--seed", [args](const std::string& text) { args->seed = parse_seed(text); },
         "Random seed, 0 to 2^64 − 1 (default 0): same seed, same model")
      ->type_name("UINT");
  sub->add_option("--weight-decay", args->weight_decay, "AdamW weight decay (default 0.01)")
      ->check(non_negative_number);
  sub->add_option("--clip", args->clip, "Gradient norm limit (default 1; 0 = none)")
      ->check(non_negative_number);
  sub->add_option("--warmup", args->warmup, "Share of steps warming up (default 0.05)")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--mask", args->mask, "masked-word: share of the words hidden (default 0.15)")
      ->check(CLI::Range(0.01, 0.9));
  sub->add_option("--max-length", args->max_length,
                  "masked-word: longer sentences are cut into pieces of this many tokens (default 64)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 16));
  sub->add_flag("--group-by-length", args->group_by_length,
               "masked-word: batches of sentences of like length, so little of a batch is padding "
               "(Hugging Face's group_by_length; off by default)");
  sub->add_flag("--pack-sentences", args->pack_sentences,
               "masked-word: consecutive sentences joined into sequences of up to --max-length tokens, so "
               "that little of a batch is padding (RoBERTa's FULL-SENTENCES inputs; off by default)");
  sub->add_option("--drop-final-stop", args->drop_final_stop,
                  "masked-word: the share of sentences read without their final . ! or ?, so that a text "
                  "ending without one reads as text (default 0)")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--outputs", args->outputs,
                  "masked-word: the most frequent corpus words it can predict (default 30000)")
      ->check(positive_number);
  sub->add_option("--checkpoint", args->checkpoint,
                  "Training state file (default: OUTPUT.checkpoint), saved every "
                  "--checkpoint-steps and on Ctrl-C, removed when the run completes");
  sub->add_option("--checkpoint-steps", args->checkpoint_steps,
                  "Save the training state every N steps (default 500; 0: only on Ctrl-C)")
      ->check(non_negative_number);
  sub->add_flag("--resume", args->resume,
                "Go on from the checkpoint (same command otherwise); the model comes "
                "out as if never stopped");
  sub->add_option("--stop-after-steps", args->stop_after_steps,
                  "Stop after N steps in all, saving the checkpoint, as Ctrl-C does")
      ->check(positive_number);
  sub->add_option("--save-steps", args->save_steps,
                  "masked-word, lm: every N steps (a multiple of --eval-steps) also write the model so far "
                  "to OUTPUT with .stepN before its extension (model.step2000.safetensors)")
      ->check(positive_number);
  sub->add_option("--vocab", args->vocab,
                  "lm: the N most frequent training words, plus <unk> and <eos> (default 10000)")
      ->check(positive_number);
  sub->add_option("--context", args->context,
                  "lm: tokens each window holds (learned positions up to it; default 128)")
      ->check(positive_number);
  sub->add_option("--max-tokens", args->max_tokens, "masked-word, lm: stop after training on about N tokens (lm: N exactly, in full windows; masked-word: the steps that read N at the corpus's mean tokens a step)")
      ->check(positive_number);
  sub->add_option_function<std::string>(
         "--time", [args](const std::string& text) { args->time_limit = parse_duration(text, "--time"); },
         "Stop after this much training time (90s, 30m, 1h30m); the learning "
         "rate decays over it")
      ->type_name("DURATION");
  sub->add_option("--dtype", args->dtype,
                  "masked-word, lm: float32 (default) or bf16: the tied output's three products on "
                  "bf16 operands with float32 sums, as PyTorch's autocast (the model file stays float32)")
      ->check(CLI::IsMember({"float32", "bf16"}));
  // Parsed by attn, not CLI11, which reads an empty field ("100,,200") as nothing at all.
  sub->add_option_function<std::string>(
         "--adaptive-softmax", [args](const std::string& text) { args->adaptive_softmax = parse_cuts(text); },
         "masked-word, lm: an adaptive softmax with these cuts over the output words, most "
         "frequent first (PyTorch's AdaptiveLogSoftmaxWithLoss cutoffs, e.g. 2000,6000): a "
         "head of the first CUT words and a cluster between each cut and the next, or the end")
      ->type_name("CUT,...");
  sub->add_option("--eval-steps", args->eval_steps,
                  "Also score the held-out text every N steps (default: each epoch's end)")
      ->check(positive_number);
  writes(sub->add_option("-o,--output", args->output, "Model file (.safetensors)"))->required();
  writes(sub->add_option("--plot", args->plot,
                         "Also draw the training curve (losses and held-out accuracy per epoch, or every "
                         "--eval-steps) as FILE.svg; the model file keeps it too (attn heatmap --model shows it)"));
  add_threads_option(sub);
  sub->callback([args, sub, hooks] {
    args->min_count_given = sub->get_option("--min-count")->count() > 0;
    args->layers_given = sub->get_option("--layers")->count() > 0;
    args->dropout_given = sub->get_option("--dropout")->count() > 0;
    args->finetune_given = sub->get_option("--finetune-embeddings")->count() > 0;
    args->positions_given = sub->get_option("--positions")->count() > 0;
    args->lr_given = sub->get_option("--lr")->count() > 0;
    // The checkpoint is written, resumed from and removed: it must be none of the other files,
    // whether --checkpoint names it or it defaults to OUTPUT.checkpoint.
    std::vector<named_file> checkpoint;
    // --save-steps' snapshots (OUTPUT.stepN.safetensors) are outputs too: every file with such a
    // name that exists now is one the run may replace, so none may be an input (or a link to one).
    {
      const std::string path = args->checkpoint.empty() ? args->output + ".checkpoint" : args->checkpoint;
      checkpoint.emplace_back("--checkpoint", path);
      checkpoint.emplace_back("--checkpoint", run_lock::path_for(path));  // created and removed
      if (args->save_steps > 0)
        for (const std::string& snapshot : existing_snapshots(args->output)) checkpoint.emplace_back("--save-steps", snapshot);
    }
    check_file_roles(*sub, {}, checkpoint);
    run(*args, hooks, *sub);
  });
}

}  // namespace attn::cli
