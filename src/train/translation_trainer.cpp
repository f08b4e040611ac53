// attn::train_translation_model (attn train --task translate): pairs → held-out pairs → joint
// subword pieces → encoded pairs (too long or empty: skipped and counted) → the translator's
// starting weights → the one training loop (loop.hpp) with translation's trainable and batches
// (translation_training.hpp) and a held-out score → a translation_model.
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/translation_model.hpp"
#include "io/content_hash.hpp"
#include "train/loop.hpp"
#include "train/rng.hpp"
#include "train/run_threads.hpp"
#include "train/trainer_parts.hpp"
#include "train/translation_model_impl.hpp"
#include "train/translation_pairs.hpp"
#include "train/translation_training.hpp"

namespace attn {

namespace {

using train::encoded_pair;
using train::sentence_pair;

// Without held-out pairs given, this share of the pairs (at most max_valid_pairs) is held out
// when there are at least min_pairs_to_hold_out: enough to choose the best epoch by, while a
// corpus of Multi30k's size keeps 97% of its pairs for training.
constexpr double valid_share = 0.05;
constexpr int64_t max_valid_pairs = 1000, min_pairs_to_hold_out = 200;

// The automatic budget without --epochs or --time: enough epochs for this many steps.
constexpr int64_t default_min_steps = 10000;

std::vector<sentence_pair> read_training_pairs(const train_options& o) {
  const bool files = !o.source.empty() || !o.target.empty();
  if (files && !o.data.empty()) throw_usage("give the pairs as --source and --target, or as --data: not both");
  if (files && (o.source.empty() || o.target.empty()))
    throw_usage(o.source.empty() ? "--target needs --source (aligned by line)" : "--source needs --target (aligned by line)");
  if (!files && o.data.empty()) throw_usage("--task translate needs --source and --target (or --data of source<TAB>target lines)");
  return files ? train::read_pairs(o.source, o.target) : train::read_tab_separated_pairs(o.data);
}

std::vector<sentence_pair> read_valid_pairs(const train_options& o) {
  if (!o.valid_source.empty() || !o.valid_target.empty()) {
    if (o.valid_source.empty() || o.valid_target.empty())
      throw_usage(o.valid_source.empty() ? "--valid-target needs --valid-source" : "--valid-source needs --valid-target");
    if (!o.valid.empty()) throw_usage("give held-out pairs as --valid-source and --valid-target, or as --valid: not both");
    return train::read_pairs(o.valid_source, o.valid_target);
  }
  if (!o.valid.empty()) return train::read_tab_separated_pairs(o.valid);
  return {};
}

// A share of the pairs drawn by the seed (its own stream: the split does not move the weights).
std::vector<sentence_pair> hold_out(std::vector<sentence_pair>& pairs, uint64_t seed, std::string& reason) {
  const auto n = static_cast<int64_t>(pairs.size());
  if (n < min_pairs_to_hold_out) {
    reason = fmt::format("{} pairs are too few to hold some out", n);
    return {};
  }
  const int64_t take = std::min<int64_t>(max_valid_pairs, std::llround(valid_share * static_cast<double>(n)));
  std::vector<size_t> order(pairs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  train::rng r(seed ^ 0x76616c6964ULL);
  r.shuffle(order);
  std::vector<bool> held(pairs.size(), false);
  for (int64_t k = 0; k < take; ++k) held[order[static_cast<size_t>(k)]] = true;
  std::vector<sentence_pair> keep, valid;
  for (size_t i = 0; i < pairs.size(); ++i) (held[i] ? valid : keep).push_back(std::move(pairs[i]));
  pairs = std::move(keep);
  return valid;
}

// The options as JSON, saved in the model file for the record.
nlohmann::json translation_record(const train_options& o, int64_t epochs) {
  nlohmann::json j = {{"task", "translate"}, {"source", o.source}, {"target", o.target}, {"data", o.data},
          {"valid_source", o.valid_source}, {"valid_target", o.valid_target}, {"valid", o.valid},
          {"pieces", o.pieces}, {"max_length", o.max_length}, {"label_smoothing", o.label_smoothing},
          {"batch_tokens", o.batch_tokens}, {"epochs", epochs}, {"time", o.time_limit}, {"lr", o.lr},
          {"seed", o.seed}, {"weight_decay", o.weight_decay}, {"clip", o.clip}, {"warmup", o.warmup},
          {"dropout", o.dropout}, {"residual_dropout", o.residual_dropout}, {"patience", o.patience}};
  if (o.dtype == train_dtype::bf16) j["dtype"] = "bf16";  // absent: float32, as before it existed
  return j;
}

// What a checkpoint must match to be resumed: the record with each file's digest in place of its
// path, and the model's shape.
std::string fingerprint(const train_options& o, const translation_config& c, int64_t epochs) {
  nlohmann::json j = translation_record(o, epochs);
  for (const char* key : {"source", "target", "data", "valid_source", "valid_target", "valid"}) {
    const std::string path = j[key];
    if (path.empty()) continue;
    const io::file_digest d = io::digest_file(path);
    if (!d.readable) throw_input(path, d.problem);
    j[key] = d.describe();
  }
  j["shape"] = {c.vocabulary, c.width, c.heads, c.encoder_layers, c.decoder_layers, c.feedforward};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

translation_training train_translator(const train_options& o, const train_callbacks& cb) {
  if (o.device != train_device::cpu) throw_usage("--task translate trains on the CPU (no --device cuda yet)");
  train::check_loop_options(o);
  const int64_t width = o.dim > 0 ? o.dim : 256;
  if (width % o.heads != 0) throw_usage(fmt::format("--heads {} does not divide --dim {}", o.heads, width));
  if (o.layers < 1) throw_usage("--task translate needs --layers 1 or more");

  translation_training out;
  std::vector<sentence_pair> pairs, valid;
  // Each process of a data-parallel run reads the files itself; one that cannot fails them all.
  const auto read_files = [&] {
    pairs = read_training_pairs(o);
    valid = read_valid_pairs(o);
  };
  if (cb.exchange != nullptr) cb.exchange->agreed(read_files);
  else read_files();
  train_result& result = out.run;
  result.train.source = o.data.empty() ? fmt::format("{} → {}", o.source, o.target) : o.data;
  if (!valid.empty()) {
    result.valid.source = o.valid.empty() ? fmt::format("{} → {}", o.valid_source, o.valid_target) : o.valid;
  } else {
    valid = hold_out(pairs, o.seed, result.no_validation);
    if (!valid.empty()) result.valid.source = fmt::format("{} pairs held out", valid.size());
  }

  // The pieces: learned from both sides of the training pairs (never the held-out ones).
  std::vector<std::string> sentences;
  sentences.reserve(pairs.size() * 2);
  for (const sentence_pair& p : pairs) {
    sentences.push_back(p.source);
    sentences.push_back(p.target);
  }
  text::subword_pieces pieces(text::learn_pieces(sentences, {.vocabulary = o.pieces}), "the learned pieces");
  sentences = {};

  train::encoded_pairs train_pairs = train::encode_pairs(pairs, pieces, o.max_length);
  train::encoded_pairs valid_pairs = train::encode_pairs(valid, pieces, o.max_length);
  out.too_long = train_pairs.too_long;
  out.empty = train_pairs.empty;
  out.valid_too_long = valid_pairs.too_long;
  out.valid_empty = valid_pairs.empty;
  out.pairs = static_cast<int64_t>(train_pairs.pairs.size());
  out.valid_pairs = static_cast<int64_t>(valid_pairs.pairs.size());
  if (train_pairs.pairs.empty())
    throw_input(o.data.empty() ? o.source : o.data,
                fmt::format("no pair to train on ({} empty, {} longer than --max-length {})", train_pairs.empty,
                            train_pairs.too_long, o.max_length));
  for (const encoded_pair& p : train_pairs.pairs) {
    out.source_pieces += static_cast<int64_t>(p.source.size());
    out.target_pieces += static_cast<int64_t>(p.target.size());
  }
  result.train.lines = out.pairs;
  result.train.tokens = out.source_pieces + out.target_pieces;
  result.valid.lines = out.valid_pairs;

  translation_config c{.vocabulary = pieces.size(), .width = width, .heads = o.heads, .encoder_layers = o.layers,
                       .decoder_layers = o.layers, .feedforward = o.feedforward > 0 ? o.feedforward : 4 * width,
                       .dropout = o.dropout, .residual_dropout = o.residual_dropout,
                       .label_smoothing = o.label_smoothing, .max_length = o.max_length};
  auto model = std::make_unique<translation_model::impl>(c, std::move(pieces));
  train::rng random(o.seed);
  train::initialise(model->net, random);

  train::translation_batches source(train_pairs.pairs, o.batch_tokens, o.seed);
  const int64_t steps = source.part_steps().front();
  const train::loop_budget budget =
      train::plan_budget(o, steps, {.default_min_steps = default_min_steps, .min_epochs = 1, .max_epochs = 1000,
                                    .tokens_per_step = std::max<int64_t>(1, result.train.tokens / steps)});
  result.planned_epochs = budget.epochs;
  model->training = translation_record(o, budget.epochs).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const train::checkpoint_identity identity{.path = o.checkpoint, .format = train::checkpoint_format(o.task),
                                            .fingerprint = fingerprint(o, c, budget.epochs), .run = train::new_run_id()};
  // The held-out score: the cross-entropy of the references, and the BLEU of greedy translations,
  // which chooses the epoch kept (the task users care about: with label smoothing the held-out
  // loss turns up while the translations still improve).
  std::vector<std::string> valid_sources, valid_references;
  for (const sentence_pair& p : valid) {
    valid_sources.push_back(p.source);
    valid_references.push_back(p.target);
  }
  train::task_evaluation eval;
  eval.validating = !valid_pairs.pairs.empty();
  eval.held_out = [&] {
    train::scored_examples sc = train::score_pairs(model->net, valid_pairs.pairs, o.batch_tokens);
    std::vector<std::string> greedy;
    for (const translation& t : translate_texts(*model, valid_sources, {.beam = 1})) greedy.push_back(t.best().text);
    model->weights_changed();  // the packed copy is of these weights only: the next step moves them
    sc.accuracy = score_translations(greedy, valid_references).bleu / 100;  // (held in accuracy's place)
    return sc;
  };
  eval.improves = [](const train::scored_examples& sc, const train::scored_examples& best) {
    return best.n == 0 || sc.accuracy > best.accuracy || (sc.accuracy == best.accuracy && sc.loss < best.loss);
  };
  // A --time budget is spent whole: its learning rate decays to 0 at its end, and the last epochs,
  // at the lowest rates, are often the best (the hour on Multi30k was stopped by patience after 50
  // minutes, 10 minutes of decay unspent). The best epoch is kept either way.
  eval.patience = !(o.time_limit > 0);
  train::translator_trainable trainable(model->net, o.dtype == train_dtype::bf16);
  train::run_training_loop(o, cb, trainable, [&] { return model->encode(); }, source, eval, budget, identity,
                           out.pairs + out.valid_pairs, result);
  model->history = {result.epochs, result.evaluations};
  out.model = translation_model(std::move(model));
  return out;
}

}  // namespace

translation_training train_translation_model(const train_options& o, const train_callbacks& cb) {
  if (o.task != text_task::translate) throw_usage("train_translation_model trains --task translate");
  keep_freed_memory_for_reuse();
  const train::run_threads threads(o.threads);  // options.threads for this run only
  return train_translator(o, cb);
}

}  // namespace attn
