// Training on plain text streamed from a corpus: the masked-word task (a context model) and the
// lm task (a language model). One streaming pass surveys the corpus (word counts, each
// sequence's length, a held-out share of its sequences); the vocabulary follows; then epochs
// read the corpus again in chunks of sequences, shuffled within each chunk, and train:
//   masked-word: sentences, words hidden (masking.hpp), bidirectional attention predicting
//     them; the vocabulary is the word vectors' rows, learned rows for frequent words they lack
//     and the mask token's row.
//   lm: paragraphs as one stream cut into windows (lm_stream.hpp; each epoch the chunk's
//     stream starts at another paragraph), causal attention, every position predicting the next token; the vocabulary is the most frequent words plus the
//     unknown and end tokens, rows starting from the word vectors where a word has one.
// Both score against the output words' own embedding rows (the network's tied output).
// Memory stays flat in the corpus size.
//
// The parts by concern: the survey (corpus_survey.hpp), the vocabulary (vocabulary.hpp), the
// batches (corpus_batches.hpp), the held-out score (sequence_score.hpp); the loop, its budget and
// checkpoints are every task's (loop.hpp). Here: the options' checks, the model's set-up.
#include "train/corpus_trainer.hpp"

#include "train/device_training.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "attn/error.hpp"
#include "train/corpus_batches.hpp"
#include "train/corpus_pieces.hpp"
#include "train/corpus_survey.hpp"
#include "train/loop.hpp"
#include "train/masking.hpp"
#include "train/model_input.hpp"
#include "train/rng.hpp"
#include "train/sequence_score.hpp"
#include "train/trainer_parts.hpp"
#include "train/vocabulary.hpp"

namespace attn::train {

namespace {

constexpr int64_t default_min_steps = 3000;
constexpr int64_t default_lm_min_steps = 500;  // 2M tokens at the default shape
constexpr int64_t max_epochs = 100;

// --adaptive-softmax's cuts, closed by the output words' end (lm: by <unk> and <eos>, the last two
// outputs, which then stay in the head: <unk> is among the most frequent tokens of a corpus).
std::vector<int64_t> adaptive_cutoffs(const train_options& o, int64_t outputs) {
  if (o.adaptive_softmax.empty()) return {};
  std::vector<int64_t> cuts = o.adaptive_softmax;
  const int64_t end = is_lm(o) ? outputs - 2 : outputs;
  for (size_t i = 0; i < cuts.size(); ++i)
    if (cuts[i] < 1 || cuts[i] >= end || (i > 0 && cuts[i] <= cuts[i - 1]))
      throw_usage(fmt::format("--adaptive-softmax {}: the cuts must rise and stay below the {} output "
                              "words{}", fmt::join(o.adaptive_softmax, ","), end,
                              is_lm(o) ? " (the vocabulary, <unk> and <eos> aside)" : ""));
  cuts.push_back(end);
  return cuts;
}

// Usage errors for the streaming tasks' own options (check_options holds every option to its range).
void check_corpus_options(const train_options& o) {
  check_options(o);
  if (is_lm(o)) {
    constexpr int64_t max_context = 1 << 16;
    if (o.context > max_context)
      throw_usage(fmt::format("--context {} is past attn's limit of {}", o.context, max_context));
    if (o.layers < 1) throw_usage("--task lm needs --layers N (causal Transformer blocks)");
  }
  // A snapshot is taken where the held-out score is, which brings the deferred rows up to date
  // anyway: elsewhere that would round the run's later steps differently.
  if (o.save_steps > 0 && (o.eval_steps == 0 || o.save_steps % o.eval_steps != 0))
    throw_usage(fmt::format("--save-steps {} must be a multiple of --eval-steps (the steps where the run "
                            "scores its held-out text){}",
                            o.save_steps, o.eval_steps == 0 ? ", which is not given" : fmt::format(" {}", o.eval_steps)));
  if (!o.valid.empty())
    throw_usage(fmt::format("{} holds out its own sequences: --valid is not taken", task_name(o.task)));
  check_loop_options(o);
  check_device_options(o);
}

}  // namespace

train_result train_from_corpus(const train_options& o, const train_callbacks& cb) {
  check_corpus_options(o);
  const bool lm = is_lm(o);
  // lm --pieces: the pieces first, then everything reads them where it would read words.
  survey s = survey_corpus(o, lm && o.pieces > 0 ? learn_corpus_pieces(o) : text::text_tokenizer{});
  if (s.sequences == 0) throw_input(o.data, "no text (every line is blank)");
  const bool validating = !s.valid.empty();
  train_result result;
  result.train.source = o.data;
  if (validating)
    result.valid.source = fmt::format("{} {} held out from {} (every {}th)", s.valid.size(),
                                      lm ? "paragraphs" : "sequences", o.data, valid_every);

  text_model_config c = model_config(o);
  if (const text::subword_pieces* pieces = s.tokenizer.pieces()) c.pieces = pieces->size();
  c.pool = pooling::mean;   // not used: each predicting token's own vector is picked
  c.hidden = c.embed_dim;   // the tied output compares with embedding rows
  if (lm) {
    c.embeddings = embedding_source::stored;  // the vocabulary's own rows, stored
    c.embeddings_trained = !lm_rows_frozen(o);
    c.max_positions = o.context;
  } else if (o.positions) {
    c.max_positions = o.max_length;
  }

  vocabulary vocab = lm ? lm_vocabulary(o, s) : masked_word_vocabulary(o, s);
  if (vocab.outputs.size() == 0) throw_input(o.data, "no word of the corpus has an embedding (nothing to predict)");
  c.new_words = vocab.new_words;
  c.output_cutoffs = adaptive_cutoffs(o, vocab.outputs.size());
  result.train.new_words = lm ? 0 : std::max<int64_t>(0, vocab.new_words - vocab.tuned - 1);  // the mask row aside
  result.train.tuned_words = vocab.tuned;
  // The training text, counted once from the survey.
  result.train.lines = s.train_sequences;
  for (const auto& [w, n] : words_by_count(s.counts)) {
    if (vocab.inputs.find(w) >= 0) {
      result.train.tokens += n;
      continue;
    }
    result.train.unknown_words += n;
    if (result.train.unknown_examples.size() < 10) result.train.unknown_examples.push_back(w);
  }
  if (lm) {  // unknown words are read as <unk>, and each paragraph's end is a token too
    result.train.tokens += result.train.unknown_words + s.train_sequences;
    if (result.train.tokens == result.train.unknown_words + s.train_sequences)
      throw_input(o.data, fmt::format("no word of the training text occurs --min-count {} times (every "
                                      "word would be <unk>)", std::max<int64_t>(o.min_count, 1)));
  }
  masking m;
  m.share = o.mask_share;
  m.mask_id = vocab.inputs.find(mask_token);
  for (const std::string& w : vocab.outputs.words()) m.output_rows.push_back(vocab.inputs.find(w));

  // The held-out sequences with their hidden words fixed once, from a stream of their own
  // (masked-word), or the held-out paragraphs' own stream of windows (lm).
  std::vector<masked_sequence> valid;
  if (lm) {
    valid = lm_windows(s.valid, vocab.inputs, o.context, &result.valid);
  } else {
    rng r(mix_seeds(o.seed, 0x76616c6964ULL));
    for (const auto& tokens : s.valid) {
      const word_sequence w = encode(tokens, vocab.inputs, vocab.outputs, result.valid);
      ++result.valid.lines;
      result.valid.tokens += static_cast<int64_t>(w.ids.size());
      masked_sequence ms = mask_words(w, m, r);
      if (!ms.positions.empty()) valid.push_back(std::move(ms));
    }
  }
  s.valid.clear();
  // Training sentences only: the held-out ones are scored whole (as before the option).
  m.drop_final_stop = o.drop_final_stop;
  for (const char* stop : {".", "!", "?"})
    if (const int64_t row = vocab.inputs.find(stop); row >= 0) m.stop_ids.push_back(row);

  auto model = std::make_unique<text_model::impl>(c, std::move(vocab.inputs), std::move(vocab.outputs));
  model->tokenizer = s.tokenizer;
  models::network<float>& net = model->net;
  net.set_output_bf16(o.dtype == train_dtype::bf16);  // training only: the model reads in float32
  {
    rng init(o.seed);
    initialise(net, o, model->inputs, init);
  }

  // --device cuda: the steps on the GPU from these initial weights (device_training.hpp)
  std::unique_ptr<device_training> device;
  if (o.device == train_device::cuda) device = make_cuda_training(net, o);

  corpus_batches source(o, s, validating, model->inputs, model->outputs, m);
  int64_t steps = 0;
  for (int64_t n : source.part_steps()) steps += n;
  if (steps == 0) throw_input(o.data, "no sequence to train on");
  // --max-tokens counts lm's steps at full windows, masked-word's at the corpus's mean tokens a step.
  const int64_t tokens_per_step =
      lm ? o.batch * o.context : std::max<int64_t>(1, result.train.tokens / std::max<int64_t>(steps, 1));
  const loop_budget budget =
      plan_budget(o, steps, {.default_min_steps = lm ? default_lm_min_steps : default_min_steps,
                             .min_epochs = 1, .max_epochs = max_epochs, .tokens_per_step = tokens_per_step});
  result.planned_epochs = budget.epochs;
  model->training = training_record(o, budget.epochs);

  const checkpoint_identity identity{.path = o.checkpoint, .format = checkpoint_format(o.task),
                                     .fingerprint = run_fingerprint(c, *model, o), .run = new_run_id()};
  task_evaluation eval;
  eval.validating = validating;
  eval.held_out = [&] { return score_sequences(net, valid, device.get()); };
  // The language model keeps the lowest held-out loss; masked-word the best accuracy.
  eval.improves = [lm](const scored_examples& sc, const scored_examples& best) {
    return lm ? best.n == 0 || sc.loss < best.loss : better(sc, best);
  };
  // A language model runs its whole budget: its learning rate decays to the end, and an epoch
  // of overfitting at the peak rate is typically followed by better ones as it falls (on a
  // book, stopping after 3 worse epochs kept perplexity 157 where the full run reaches ~106).
  eval.patience = !lm;
  network_trainable trainable_net(net);
  run_training_loop(o, cb, trainable_net, [&] { return model->encode(); }, source, eval, budget, identity, s.sequences,
                    result, device.get());
  net.set_output_bf16(false);
  result.model = text_model(std::move(model));
  return result;
}

}  // namespace attn::train

