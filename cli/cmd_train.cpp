// attn train: trains the text model (next-word, classify, masked-word or lm) and saves it as
// safetensors.
#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "attn/error.hpp"
#include "attn/train.hpp"
#include "attn/train_option_table.hpp"
#include "attn/training_curve.hpp"
#include "attn/translation_model.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"
#include "interrupt.hpp"
#include "run_lock.hpp"
#include "train_command.hpp"
#include "train_flags.hpp"
#include "train_progress.hpp"

namespace attn::cli {

namespace {

// What attn train's own flags say; every training option is in flags (cli/train_flags.hpp).
struct train_args {
  std::string task, data, vectors, output, plot;
  std::shared_ptr<train_flags> flags = std::make_shared<train_flags>();
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

// --task translate: the pairs, the pieces and the translator (attn/translation_model.hpp).
void report_translation(const translation_training& t, const train_options& o, const std::string& output) {
  const train_result& r = t.run;
  fmt::print(stderr, "trained on {}: {} pairs, {} source and {} target pieces ({} joint pieces learned)\n",
             r.train.source, t.pairs, t.source_pieces, t.target_pieces, t.model.config().vocabulary);
  if (t.too_long > 0 || t.empty > 0)
    warn(fmt::format("{}: {} pairs skipped ({} with a side longer than --max-length {} pieces, {} with an empty side)",
                     r.train.source, t.too_long + t.empty, t.too_long, o.max_length, t.empty));
  if (!r.valid.source.empty())
    fmt::print(stderr, "validated on {}: {} pairs{}\n", r.valid.source, t.valid_pairs,
               t.valid_too_long + t.valid_empty > 0
                   ? fmt::format(" ({} skipped: {} too long, {} empty)", t.valid_too_long + t.valid_empty,
                                 t.valid_too_long, t.valid_empty)
                   : "");
  else
    fmt::print(stderr, "no validation: {} (the last epoch is kept)\n", r.no_validation);
  if (!r.budget_end.empty()) fmt::print(stderr, "{} tokens trained on (the {} budget)\n", r.trained_tokens, r.budget_end);
  const auto& epochs = r.epochs;
  if (!r.valid.source.empty() && r.best_epoch >= 1 && r.best_epoch <= static_cast<int64_t>(epochs.size()))
    fmt::print(stderr, "kept epoch {} of {} (valid BLEU {:.2f} greedy, perplexity {:.2f}){}\n", r.best_epoch,
               epochs.size(), 100 * epochs[static_cast<size_t>(r.best_epoch - 1)].accuracy,
               std::exp(epochs[static_cast<size_t>(r.best_epoch - 1)].eval_loss),
               r.stopped_early ? ": stopped early" : "");
  const translation_config& c = t.model.config();
  fmt::print(stderr, "saved {}: a translator, {} joint pieces, {} encoder and {} decoder layers (pre-norm, width {}, "
                     "{} heads, feed-forward {}), sinusoidal positions, tied embeddings\n",
             output, c.vocabulary, c.encoder_layers, c.decoder_layers, c.width, c.heads, c.feedforward);
}

void run(const train_args& args, const train_hooks& hooks, const CLI::App& command) {
  if (!args.plot.empty() && !has_extension(args.plot, ".svg"))
    throw error(error_kind::usage, args.plot, "cannot tell the format from the extension", "--plot takes a .svg file");
  const text_task task = parse_task(args.task, "--task");
  const bool pairs = kind_of(task).pairs;  // translate: its own model
  if (!pairs && args.data.empty()) throw_usage("--data is required");
  if (pairs && !args.vectors.empty()) throw_usage("--vectors is for the word models (translate learns its pieces' embeddings)");
  const bool lm = kind_of(task).autoregressive;  // the language model: scored by perplexity
  const bool streamed = kind_of(task).streamed;  // the corpus trainer's tasks
  const train_flags& flags = *args.flags;
  // The task's defaults (attn/train.hpp), and on top the options the command line set.
  train_options o = task_defaults(task);
  flags.apply_given(o);
  settle_piece_embeddings(o, !args.vectors.empty());
  if (o.learn_embeddings > 0 && !args.vectors.empty())
    throw_usage("--vectors and --learn-embeddings exclude each other");
  const gradient_exchange* exchange = hooks.exchange;
  const int processes = exchange != nullptr ? exchange->processes : 1;
  const bool checkpointed = find_train_option("checkpoint")->tasks.has(task);
  if (checkpointed && o.checkpoint.empty()) o.checkpoint = args.output + ".checkpoint";
  // The run holds its checkpoint from here to its end (attn-mpi: rank 0, which writes it).
  run_lock lock;
  if (checkpointed) {
    const auto take = [&] {
      if (hooks.speaks) lock.acquire(o.checkpoint);
    };
    if (exchange != nullptr) exchange->agreed(take);
    else take();
  }
  std::optional<vectors> word_vectors;
  if (o.learn_embeddings <= 0 && !pairs) {
    const auto load = [&] { word_vectors = load_vectors(args.vectors); };
    if (exchange != nullptr) exchange->agreed(load);
    else load();
    o.word_vectors = &*word_vectors;
  }
  o.data = args.data;
  // --shards: one per process unless given.
  if (!flags.was_given("shards")) o.shards = processes;
  if (o.shards % processes != 0)
    throw_usage(fmt::format("--shards {} is not a multiple of the {} ranks", o.shards, processes));
  check_task_options(o, flags.given(), option_spelling::cli);
  if (o.resume && !std::filesystem::exists(o.checkpoint))
    throw_input(o.checkpoint, "no checkpoint to resume from");

  train_progress progress(lm, streamed, pairs);
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
  std::optional<translation_training> translated;
  if (pairs) translated = train_translation_model(o, callbacks);
  train_result result = pairs ? std::move(translated->run) : train_text_model(o, callbacks);
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
  if (pairs) {
    translated->run = std::move(result);
    std::vector<std::pair<std::string, std::string>> outputs{{args.output, translated->model.encode()}};
    if (!args.plot.empty())
      outputs.emplace_back(args.plot, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" +
                                          render_training_curve_svg({translated->run.epochs, translated->run.evaluations},
                                                                    args.output));
    write_outputs(outputs);
    if (checkpointed && translated->run.checkpoint_written)
      remove_training_checkpoint(o.checkpoint, translated->run.checkpoint_run);
    report_translation(*translated, o, args.output);
    return;
  }
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
  if (checkpointed && result.checkpoint_written) remove_training_checkpoint(o.checkpoint, result.checkpoint_run);
  const bool defaults = c.embeddings == embedding_source::default_vectors;
  std::string rows;
  if (defaults && c.embeddings_trained)
    rows = fmt::format(", {} rows learned (the training words' fine-tuned, the rest frozen)",
                       c.new_words);
  else if (defaults)
    rows = c.new_words > 0 ? fmt::format(", frozen, {} new words learned", c.new_words) : ", frozen";
  const task_kind& kind = kind_of(c.task);
  const std::string head = *kind.tied_head != '\0' ? std::string(kind.tied_head)
                                                   : fmt::format("{} pooling, hidden {}", pooling_name(c.pool), c.hidden);
  fmt::print(stderr, "saved {}: {} {}, {} embeddings ({} words, {} dims{}), {}{}, {} heads, dim {}, "
                     "{}{}\n",
             args.output, result.model.outputs().size(),
             kind.labelled ? "labels" : "output words",
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
  reads(sub->add_option("--data", args->data, "Training file (translate: source<TAB>target lines, or --source and --target)"));
  reads(sub->add_option("--vectors", args->vectors,
                        "Pre-trained word vectors (default: the embedded GloVe 6B 100d)"));
  add_train_flags(sub, args->flags);
  for (const char* input : {"--valid", "--source", "--target", "--valid-source", "--valid-target"})
    reads(sub->get_option(input));
  writes(sub->add_option("-o,--output", args->output, "Model file (.safetensors)"))->required();
  writes(sub->add_option("--plot", args->plot,
                         "Also draw the training curve (losses and held-out accuracy per epoch, or every "
                         "--eval-steps) as FILE.svg; the model file keeps it too (attn heatmap --model shows it)"));
  add_threads_option(sub);
  sub->callback([args, sub, hooks] {
    // The checkpoint is written, resumed from and removed: it must be none of the
    // other files, whether --checkpoint names it or it defaults to OUTPUT.checkpoint.
    std::vector<named_file> checkpoint;
    // --save-steps' snapshots (OUTPUT.stepN.safetensors) are outputs too: every file with such a
    // name that exists now is one the run may replace, so none may be an input (or a link to one).
    if (task_takes(args->task, "checkpoint")) {
      const std::string given = args->flags->parsed.checkpoint;
      const std::string path = given.empty() ? args->output + ".checkpoint" : given;
      checkpoint.emplace_back("--checkpoint", path);
      checkpoint.emplace_back("--checkpoint", run_lock::path_for(path));  // created and removed
      if (args->flags->parsed.save_steps > 0)
        for (const std::string& snapshot : existing_snapshots(args->output)) checkpoint.emplace_back("--save-steps", snapshot);
    }
    check_file_roles(*sub, {}, checkpoint);
    run(*args, hooks, *sub);
  });
}

}  // namespace attn::cli
