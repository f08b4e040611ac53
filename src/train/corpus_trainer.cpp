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
// Every random draw derives from the seed and the place in the run (the chunk's first paragraph
// and shuffle from its epoch and index, a step's masks and dropout from the step's number), and the optimiser's
// state is saved whole, so a run resumed from a checkpoint takes exactly the steps of one that
// never stopped and writes the same model file.
#include "train/corpus_trainer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <unordered_map>

#include "attn/error.hpp"
#include "io/content_hash.hpp"
#include "io/json_fields.hpp"
#include "train/checkpoint.hpp"
#include "train/corpus.hpp"
#include "train/lm_stream.hpp"
#include "train/loop.hpp"
#include "train/masking.hpp"
#include "train/model_input.hpp"
#include "train/optimizer.hpp"
#include "train/sharded_step.hpp"
#include "train/trainer_parts.hpp"
#include "train/training_history.hpp"

namespace attn::train {

namespace {

constexpr int64_t chunk_sequences = 4096;  // shuffled together; the memory a run holds
constexpr int64_t valid_every = 20;        // sequence i is held out when i % 20 == 0 …
constexpr int64_t max_valid = 2000;        // … among the first 20 × 2000
constexpr int64_t default_min_steps = 3000;
constexpr int64_t default_lm_min_steps = 500;  // 2M tokens at the default shape
constexpr int64_t max_epochs = 100;
constexpr size_t score_batch = 64;

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

bool held_out(int64_t sequence, bool validating) {
  return validating && sequence % valid_every == 0 && sequence / valid_every < max_valid;
}

bool is_lm(const train_options& o) { return o.task == text_task::lm; }

// lm --frozen-embeddings: the word vectors' rows stay as they are (words without one, <unk> and
// <eos> learn theirs), so a small text trains the layers and not a table it is too short for.
bool lm_rows_frozen(const train_options& o) { return o.word_vectors != nullptr && !o.finetune_embeddings; }

// masked-word reads sentences cut at max_length; lm reads whole paragraphs.
corpus_reader open_corpus(const train_options& o) { return {o.data, is_lm(o) ? 0 : o.max_length}; }

struct survey {
  std::unordered_map<std::string, int64_t> counts;  // training sequences' words
  std::vector<std::vector<std::string>> valid;      // the held-out sequences
  std::vector<int64_t> lengths;                     // every sequence's tokens
  int64_t sequences = 0, train_sequences = 0;
  int64_t bytes = 0;  // of text (decompressed, for .xz and .gz)
};

survey survey_corpus(const train_options& o) {
  survey s;
  corpus_reader reader = open_corpus(o);
  std::vector<std::string> tokens;
  while (true) {
    const int64_t i = reader.position().sequence;
    if (!reader.next(tokens)) break;
    ++s.sequences;
    s.lengths.push_back(static_cast<int64_t>(tokens.size()));
    if (held_out(i, true)) {
      s.valid.push_back(std::move(tokens));
      continue;
    }
    for (const std::string& t : tokens) s.counts[t] += 1;
  }
  // Too little text to spare some: everything trains.
  if (s.sequences < o.valid_min_lines) {
    for (const auto& v : s.valid)
      for (const std::string& t : v) s.counts[t] += 1;
    s.valid.clear();
  }
  s.train_sequences = s.sequences - static_cast<int64_t>(s.valid.size());
  s.bytes = reader.position().offset;
  return s;
}

// The optimiser steps of each chunk of an epoch: a chunk is the next chunk_sequences training
// sequences; masked-word batches sequences, lm batches the windows of the chunk's stream.
std::vector<int64_t> chunk_steps(const train_options& o, const survey& s, bool validating) {
  std::vector<int64_t> steps;
  int64_t in_chunk = 0, ids = 1;  // an lm chunk's stream starts with the end token
  std::vector<int64_t> lengths;   // --pack-sentences: the chunk's sentences' lengths
  const auto close = [&] {
    const int64_t items = is_lm(o)            ? count_windows(ids, o.context)
                          : o.pack_sentences ? static_cast<int64_t>(pack_sizes(lengths, o.max_length).size())
                                             : in_chunk;
    steps.push_back((items + o.batch - 1) / o.batch);
    in_chunk = 0;
    ids = 1;
    lengths.clear();
  };
  for (int64_t i = 0; i < s.sequences; ++i) {
    if (held_out(i, validating)) continue;
    ++in_chunk;
    ids += s.lengths[static_cast<size_t>(i)] + 1;
    if (o.pack_sentences) lengths.push_back(s.lengths[static_cast<size_t>(i)]);
    if (in_chunk == chunk_sequences) close();
  }
  if (in_chunk > 0) close();
  return steps;
}

// Words by count, most frequent first (ties alphabetical).
std::vector<std::pair<std::string, int64_t>> by_count(const std::unordered_map<std::string, int64_t>& counts) {
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return sorted;
}

struct vocabulary {
  word_index inputs, outputs;
  int64_t new_words = 0, tuned = 0;
};

// Inputs: the word vectors' rows (all of the embedded default's; the corpus words' of another
// table; with learned embeddings, the words seen min_count times), then learned rows for the
// words the vectors lack (min_count times or more), fine-tuned copies when asked, and the mask
// token. Outputs: the most frequent corpus words with a row, at most max_outputs.
vocabulary make_vocabulary(const train_options& o, const survey& s) {
  vocabulary v;
  const auto sorted = by_count(s.counts);
  if (o.word_vectors == nullptr) {
    for (const auto& [w, n] : sorted)
      if (n >= std::max<int64_t>(o.min_count, 1)) v.inputs.add(w);
  } else if (uses_default_vectors(o)) {
    for (int64_t i = 0; i < o.word_vectors->size(); ++i) v.inputs.add(std::string(o.word_vectors->word(i)));
  } else {
    for (const auto& [w, n] : sorted)
      if (o.word_vectors->find(w)) v.inputs.add(w);
    for (const auto& seq : s.valid)
      for (const std::string& t : seq)
        if (o.word_vectors->find(t)) v.inputs.add(t);
  }
  const int64_t table = o.word_vectors == nullptr ? v.inputs.size() + 1 : v.inputs.size();
  if (o.word_vectors == nullptr) {
    v.inputs.add(mask_token);  // a table row like the others
  } else {
    v.tuned = add_learned_rows(o, sorted, v.inputs);
    v.inputs.add(mask_token);
    v.new_words = v.inputs.size() - table;
  }
  for (const auto& [w, n] : sorted) {
    if (v.outputs.size() >= o.max_outputs) break;
    if (v.inputs.find(w) >= 0 && w != mask_token) v.outputs.add(w);
  }
  return v;
}

// lm: the `vocab` most frequent training words seen at least min_count times (the rarer are
// <unk>, so <unk> is a target in training too), the unknown token and the end token, each row
// both an input and an output (the same order, so class c is row c).
// With frozen word vectors the words that have one come first (the frozen table), then learned
// rows for the others and the two tokens (new_words).
vocabulary make_lm_vocabulary(const train_options& o, const survey& s) {
  std::vector<std::string> words;
  for (const auto& [w, n] : by_count(s.counts)) {
    // by_count is most frequent first: the rest are rarer still
    if (static_cast<int64_t>(words.size()) >= o.vocab || n < std::max<int64_t>(o.min_count, 1)) break;
    words.push_back(w);
  }
  vocabulary v;
  const bool frozen = lm_rows_frozen(o);
  for (const std::string& w : words)
    if (!frozen || o.word_vectors->find(w)) v.inputs.add(w);
  const int64_t table = v.inputs.size();
  for (const std::string& w : words)
    if (frozen && !o.word_vectors->find(w)) v.inputs.add(w);
  v.inputs.add(unknown_token);
  v.inputs.add(end_token);
  v.new_words = frozen ? v.inputs.size() - table : 0;
  v.outputs = v.inputs;
  return v;
}

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

// lm: a chunk's (or the held-out text's) paragraphs as one stream, cut into windows.
std::vector<masked_sequence> lm_windows(const std::vector<std::vector<std::string>>& paragraphs,
                                        const word_index& words, int64_t context, data_summary* summary) {
  std::vector<int64_t> stream{words.find(end_token)};
  for (const auto& p : paragraphs) {
    const int64_t unknown = append_paragraph(p, words, stream);
    if (summary != nullptr) {
      ++summary->lines;
      summary->unknown_words += unknown;
    }
  }
  if (summary != nullptr) summary->tokens += static_cast<int64_t>(stream.size()) - 1;
  return next_token_windows(stream, context);
}

word_sequence encode(const std::vector<std::string>& tokens, const word_index& inputs,
                     const word_index& outputs, data_summary& summary) {
  word_sequence s;
  for (const std::string& t : tokens) {
    const int64_t id = inputs.find(t);
    if (id < 0) {
      ++summary.unknown_words;
      if (summary.unknown_examples.size() < 10 &&
          std::find(summary.unknown_examples.begin(), summary.unknown_examples.end(), t) == summary.unknown_examples.end())
        summary.unknown_examples.push_back(t);
      continue;
    }
    s.ids.push_back(id);
    s.classes.push_back(outputs.find(t));
  }
  return s;
}

// Mean cross-entropy and accuracy over the hidden words of the held-out sequences.
// Groups of up to score_batch sequences, fewer when their logits would pass max_scoring_logits
// (a 16k-word language model's 64 windows of 512 would be 2 GB).
scored_examples score(const nn::network<float>& net, const std::vector<masked_sequence>& valid) {
  score_tally tally;
  const auto classes = static_cast<size_t>(net.shape().classes);
  std::vector<const masked_sequence*> group;
  size_t rows = 0;
  const auto flush = [&] {
    if (!group.empty()) tally.add(net, make_masked_batch(group));
    group.clear();
    rows = 0;
  };
  for (const masked_sequence& s : valid) {
    const size_t more = s.positions.size();
    if (group.size() == score_batch || (rows + more) * classes > max_scoring_logits) flush();
    group.push_back(&s);
    rows += more;
  }
  flush();
  return tally.result();
}


// The corpus's batches: a part of an epoch is a chunk, the next chunk_sequences training
// sequences, read again from where it starts and shuffled by a stream of its own; a step's
// masks and dropout come from the step's number.
class corpus_batches final : public batch_source {
 public:
  corpus_batches(const train_options& o, const survey& s, bool validating, const word_index& inputs,
                 const word_index& outputs, const masking& m)
      : o_(o), validating_(validating), inputs_(inputs), outputs_(outputs), masking_(m),
        part_steps_(chunk_steps(o, s, validating)), reader_(open_corpus(o)), sequences_(s.sequences),
        corpus_bytes_(s.bytes) {}

  const std::vector<int64_t>& part_steps() const override { return part_steps_; }

  int64_t begin_part(int64_t epoch, int64_t part, bool) override {
    const bool lm = is_lm(o_);
    if (part == 0) chunk_start_ = {};
    reader_.seek(chunk_start_);
    chunk_.clear();
    windows_.clear();
    std::vector<std::vector<std::string>> text;  // lm: paragraphs, cut into windows
    std::vector<int64_t> lengths;                // --pack-sentences: the sentences' token counts
    std::vector<std::string> tokens;
    int64_t read = 0;
    while (read < chunk_sequences) {
      const int64_t i = reader_.position().sequence;
      if (!reader_.next(tokens)) break;
      if (held_out(i, validating_)) continue;
      ++read;
      if (lm) {
        text.push_back(std::move(tokens));
        continue;
      }
      data_summary unused;  // the survey counted the corpus already
      chunk_.push_back(encode(tokens, inputs_, outputs_, unused));
      if (o_.pack_sentences) lengths.push_back(static_cast<int64_t>(tokens.size()));
    }
    if (read == 0) return 0;
    if (o_.pack_sentences) chunk_ = pack_sentences(chunk_, lengths, o_.max_length);  // before the shuffle: neighbours
    rng shuffle(mix(mix(o_.seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(part)));
    // lm: each epoch cuts the chunk's stream at other places. The stream starts at a paragraph
    // drawn for the epoch and wraps around to the ones before it, so every window still
    // starts its paragraphs after an end token, the count of windows does not change, and a
    // book read fifty times is not cut into the same windows fifty times (nanoGPT draws its
    // windows anywhere in the text).
    // (Drawn from a generator of its own, so that the shuffle's draws are those of a stream
    // that starts at its first paragraph.)
    if (lm) {
      rng cut(mix(mix(mix(o_.seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(part)), 1));
      std::rotate(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(cut.below(text.size())), text.end());
      windows_ = lm_windows(text, inputs_, o_.context, nullptr);
    }
    next_chunk_ = reader_.position();
    const auto batch = static_cast<size_t>(o_.batch);
    if (lm) {
      shuffle.shuffle(windows_);
    } else {
      shuffle.shuffle(chunk_);
      if (o_.group_by_length) group_by_length(chunk_, batch, shuffle);
    }
    const size_t items = lm ? windows_.size() : chunk_.size();
    return static_cast<int64_t>((items + batch - 1) / batch);
  }

  step_batch batch(int64_t index, int64_t step) override {
    const bool lm = is_lm(o_);
    // This step's masks and dropout, from the step's number.
    rng r(mix(o_.seed ^ 0x6d61736bULL, static_cast<uint64_t>(step)));
    const auto batch = static_cast<size_t>(o_.batch);
    const size_t items = lm ? windows_.size() : chunk_.size();
    const size_t first = static_cast<size_t>(index) * batch, end = std::min(items, first + batch);
    masked_.clear();
    group_.clear();
    for (size_t k = first; k < end && !lm; ++k) masked_.push_back(mask_words(chunk_[k], masking_, r));
    for (size_t k = first; k < end; ++k) group_.push_back(lm ? &windows_[k] : &masked_[k - first]);
    step_batch b;
    b.items = static_cast<int64_t>(group_.size());
    for (const masked_sequence* g : group_) b.rows += static_cast<int64_t>(g->positions.size());
    // Never 0, which means "evaluating": a training forward also scores the adaptive softmax
    // without every class, and takes the full softmax's gradients in the same pass
    // (nn/fused_output.hpp). (r is this step's own stream, drawn from after the masking.)
    b.dropout_seed = r.next() | 1;
    b.batch_of = [this](int64_t from, int64_t to) {
      return make_masked_batch({group_.begin() + from, group_.begin() + to});
    };
    return b;
  }

  void end_part() override { chunk_start_ = next_chunk_; }

  // Where the chunk's sequences begin.
  void save(nlohmann::json& progress_fields, checkpoint&) const override {
    progress_fields["offset"] = chunk_start_.offset;
    progress_fields["skip"] = chunk_start_.skip;
    progress_fields["sequence"] = chunk_start_.sequence;
  }
  void load(const nlohmann::json& j, const io::json_fields& h, const checkpoint&) override {
    chunk_start_ = {h.integer(j, "progress.offset"), h.integer(j, "progress.skip"), h.integer(j, "progress.sequence")};
    const auto f = [](int64_t v) { return static_cast<double>(v); };
    h.range("progress.offset", f(chunk_start_.offset), 0, f(corpus_bytes_));
    h.range("progress.sequence", f(chunk_start_.sequence), 0, f(sequences_));
    h.range("progress.skip", f(chunk_start_.skip), 0, f(chunk_start_.sequence));
  }

 private:
  const train_options& o_;
  bool validating_;
  const word_index& inputs_;
  const word_index& outputs_;
  const masking& masking_;
  std::vector<int64_t> part_steps_;
  corpus_reader reader_;
  int64_t sequences_, corpus_bytes_;
  corpus_position chunk_start_, next_chunk_;
  std::vector<word_sequence> chunk_;        // masked-word: sentences, masked per step
  std::vector<masked_sequence> windows_;    // lm: the chunk's stream cut into windows
  std::vector<masked_sequence> masked_;     // masked-word: this step's masked sentences
  std::vector<const masked_sequence*> group_;
};

// Usage errors for the streaming tasks' own options.
void check_corpus_options(const train_options& o) {
  check_options(o);
  if (is_lm(o)) {
    if (o.vocab < 1) throw_usage(fmt::format("--vocab must be at least 1, got {}", o.vocab));
    if (o.context < 1) throw_usage(fmt::format("--context must be at least 1, got {}", o.context));
    constexpr int64_t max_context = 1 << 16;
    if (o.context > max_context)
      throw_usage(fmt::format("--context {} is past attn's limit of {}", o.context, max_context));
    if (o.max_tokens < 0) throw_usage(fmt::format("--max-tokens must be ≥ 0, got {}", o.max_tokens));
    if (o.layers < 1) throw_usage("--task lm needs --layers N (causal Transformer blocks)");
  } else {
    if (!(o.mask_share > 0 && o.mask_share < 1))
      throw_usage(fmt::format("--mask must be in (0, 1), got {}", o.mask_share));
    if (!(o.drop_final_stop >= 0 && o.drop_final_stop <= 1))
      throw_usage(fmt::format("--drop-final-stop must be in [0, 1], got {}", o.drop_final_stop));
    if (o.max_length < 2) throw_usage(fmt::format("--max-length must be at least 2, got {}", o.max_length));
    if (o.max_outputs < 1) throw_usage(fmt::format("--outputs must be at least 1, got {}", o.max_outputs));
  }
  // A snapshot is taken where the held-out score is, which brings the deferred rows up to date
  // anyway: elsewhere that would round the run's later steps differently.
  if (o.save_steps < 0) throw_usage(fmt::format("--save-steps must be ≥ 0, got {}", o.save_steps));
  if (o.save_steps > 0 && (o.eval_steps == 0 || o.save_steps % o.eval_steps != 0))
    throw_usage(fmt::format("--save-steps {} must be a multiple of --eval-steps (the steps where the run "
                            "scores its held-out text){}",
                            o.save_steps, o.eval_steps == 0 ? ", which is not given" : fmt::format(" {}", o.eval_steps)));
  if (!o.valid.empty())
    throw_usage(fmt::format("{} holds out its own sequences: --valid is not taken", task_name(o.task)));
  check_loop_options(o);
}

}  // namespace

train_result train_from_corpus(const train_options& o, const train_callbacks& cb) {
  check_corpus_options(o);
  const bool lm = is_lm(o);
  survey s = survey_corpus(o);
  if (s.sequences == 0) throw_input(o.data, "no text (every line is blank)");
  const bool validating = !s.valid.empty();
  train_result result;
  result.train.source = o.data;
  if (validating)
    result.valid.source = fmt::format("{} {} held out from {} (every {}th)", s.valid.size(),
                                      lm ? "paragraphs" : "sequences", o.data, valid_every);

  text_model_config c = model_config(o);
  c.pool = pooling::mean;   // not used: each predicting token's own vector is picked
  c.hidden = c.embed_dim;   // the tied output compares with embedding rows
  if (lm) {
    c.embeddings = embedding_source::stored;  // the vocabulary's own rows, stored
    c.embeddings_trained = !lm_rows_frozen(o);
    c.max_positions = o.context;
  } else if (o.positions) {
    c.max_positions = o.max_length;
  }

  vocabulary vocab = lm ? make_lm_vocabulary(o, s) : make_vocabulary(o, s);
  if (vocab.outputs.size() == 0) throw_input(o.data, "no word of the corpus has an embedding (nothing to predict)");
  c.new_words = vocab.new_words;
  c.output_cutoffs = adaptive_cutoffs(o, vocab.outputs.size());
  result.train.new_words = lm ? 0 : std::max<int64_t>(0, vocab.new_words - vocab.tuned - 1);  // the mask row aside
  result.train.tuned_words = vocab.tuned;
  // The training text, counted once from the survey.
  result.train.lines = s.train_sequences;
  for (const auto& [w, n] : by_count(s.counts)) {
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
    rng r(mix(o.seed, 0x76616c6964ULL));
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
  nn::network<float>& net = model->net;
  net.set_output_bf16(o.dtype == train_dtype::bf16);  // training only: the model reads in float32
  {
    rng init(o.seed);
    initialise(net, o, model->inputs, init);
  }

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
  evaluation eval;
  eval.validating = validating;
  eval.held_out = [&] { return score(net, valid); };
  // The language model keeps the lowest held-out loss; masked-word the best accuracy.
  eval.improves = [lm](const scored_examples& sc, const scored_examples& best) {
    return lm ? best.n == 0 || sc.loss < best.loss : better(sc, best);
  };
  // A language model runs its whole budget: its learning rate decays to the end, and an epoch
  // of overfitting at the peak rate is typically followed by better ones as it falls (on a
  // book, stopping after 3 worse epochs kept perplexity 157 where the full run reaches ~106).
  eval.patience = !lm;
  run_training_loop(o, cb, net, [&] { return model->encode(); }, source, eval, budget, identity, s.sequences,
                    result);
  net.set_output_bf16(false);
  result.model = text_model(std::move(model));
  return result;
}

}  // namespace attn::train
