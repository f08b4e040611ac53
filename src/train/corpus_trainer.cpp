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

// Budgets in steps, from counts a user may set near 2^63: rounded up and multiplied without overflow.
int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }
int64_t saturating_product(int64_t a, int64_t b) {
  int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<int64_t>::max() : product;
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

// Where a run is: what the checkpoint holds besides weights and optimiser.
struct progress {
  int64_t epoch = 1, chunk = 0, batch = 0;  // the next batch to train
  corpus_position chunk_start;              // where the chunk's sequences begin
  int64_t done = 0, all_tokens = 0;         // steps and tokens so far
  double loss_sum = 0;                      // this epoch's, for the report
  int64_t rows_sum = 0, epoch_tokens = 0;
  int64_t best_epoch = 0;
  scored_examples best{.loss = 0, .accuracy = -1, .n = 0};
  bool best_saved = false;  // best weights kept apart (the best epoch is not the latest)
  double seconds = 0;       // lm: training time so far (a --time budget goes on from it)
  double window_loss_sum = 0;  // the training loss since the last --eval-steps evaluation
  int64_t window_rows = 0;
};

nlohmann::json to_json(const progress& p) {
  return {{"epoch", p.epoch}, {"chunk", p.chunk}, {"batch", p.batch},
          {"offset", p.chunk_start.offset}, {"skip", p.chunk_start.skip},
          {"sequence", p.chunk_start.sequence}, {"done", p.done}, {"all_tokens", p.all_tokens},
          {"loss_sum", p.loss_sum}, {"rows_sum", p.rows_sum}, {"epoch_tokens", p.epoch_tokens},
          {"best_epoch", p.best_epoch}, {"best_accuracy", p.best.accuracy},
          {"best_loss", p.best.loss}, {"best_n", p.best.n}, {"best_saved", p.best_saved},
          {"seconds", p.seconds}, {"window_loss_sum", p.window_loss_sum}, {"window_rows", p.window_rows}};
}

// A checkpoint's header is read as untrusted input (io/json_fields.hpp): every field by name, of
// the right type, finite, and (check_progress) within the run it resumes, so a damaged or
// edited file is an input error naming the field, never an out-of-range read or a silently
// wrong model.
using header_reader = io::json_fields;

progress from_json(const nlohmann::json& j, const header_reader& h) {
  progress p;
  p.epoch = h.integer(j, "progress.epoch");
  p.chunk = h.integer(j, "progress.chunk");
  p.batch = h.integer(j, "progress.batch");
  p.chunk_start = {h.integer(j, "progress.offset"), h.integer(j, "progress.skip"),
                   h.integer(j, "progress.sequence")};
  p.done = h.integer(j, "progress.done");
  p.all_tokens = h.integer(j, "progress.all_tokens");
  p.loss_sum = h.number(j, "progress.loss_sum");
  p.rows_sum = h.integer(j, "progress.rows_sum");
  p.epoch_tokens = h.integer(j, "progress.epoch_tokens");
  p.best_epoch = h.integer(j, "progress.best_epoch");
  p.best = {.loss = h.number(j, "progress.best_loss"), .accuracy = h.number(j, "progress.best_accuracy"),
            .n = h.integer(j, "progress.best_n")};
  p.best_saved = h.boolean(j, "progress.best_saved");
  p.seconds = h.has(j, "seconds") ? h.number(j, "progress.seconds") : 0.0;  // absent before lm
  if (h.has(j, "window_rows")) {  // absent before the history was kept
    p.window_loss_sum = h.number(j, "progress.window_loss_sum");
    p.window_rows = h.integer(j, "progress.window_rows");
  }
  return p;
}

// What the run itself fixes: its epochs, steps, chunks and the corpus's size.
struct run_shape {
  int64_t epochs = 0, steps = 0;
  std::vector<int64_t> chunk_steps;  // each chunk's steps (an epoch's sum to steps)
  int64_t sequences = 0, corpus_bytes = 0;
};

void check_progress(const progress& p, const run_shape& r, const header_reader& h) {
  const auto f = [](int64_t v) { return static_cast<double>(v); };
  const auto chunks = static_cast<int64_t>(r.chunk_steps.size());
  h.range("progress.epoch", f(p.epoch), 1, f(r.epochs));
  h.range("progress.chunk", f(p.chunk), 0, f(std::max<int64_t>(chunks - 1, 0)));
  const auto chunk = static_cast<size_t>(p.chunk);
  h.range("progress.batch", f(p.batch), 0, f(r.chunk_steps[chunk]));
  h.range("progress.seconds", p.seconds, 0, 1e12);
  h.range("progress.offset", f(p.chunk_start.offset), 0, f(r.corpus_bytes));
  h.range("progress.sequence", f(p.chunk_start.sequence), 0, f(r.sequences));
  h.range("progress.skip", f(p.chunk_start.skip), 0, f(p.chunk_start.sequence));
  // Every step counts, so where the run is fixes how many steps it took.
  int64_t expected = (p.epoch - 1) * r.steps + p.batch;
  for (size_t k = 0; k < chunk; ++k) expected += r.chunk_steps[k];
  h.range("progress.done", f(p.done), f(expected), f(expected));
  h.range("progress.all_tokens", f(p.all_tokens), 0, 9e18);
  h.range("progress.epoch_tokens", f(p.epoch_tokens), 0, f(p.all_tokens));
  h.range("progress.rows_sum", f(p.rows_sum), 0, f(p.epoch_tokens));
  h.range("progress.loss_sum", p.loss_sum, 0, 1e300);
  h.range("progress.window_loss_sum", p.window_loss_sum, 0, 1e300);
  h.range("progress.window_rows", f(p.window_rows), 0, 9e18);
  h.range("progress.best_epoch", f(p.best_epoch), 0, f(p.epoch - 1));
  h.range("progress.best_accuracy", p.best.accuracy, -1, 1);
  h.range("progress.best_loss", p.best.loss, 0, 1e300);
  h.range("progress.best_n", f(p.best.n), 0, f(r.sequences) * 1e6);
  if (p.best_saved && p.best_epoch < 1)
    h.fail("progress.best_saved", "is set with no best epoch");
}

nlohmann::json epoch_json(const train_epoch_report& r) {
  return {{"epoch", r.epoch}, {"loss", r.loss}, {"accuracy", r.accuracy}, {"eval_loss", r.eval_loss},
          {"n", r.n}, {"best", r.best}, {"seconds", r.seconds}, {"tokens_per_second", r.tokens_per_second}};
}

train_epoch_report epoch_from_json(const nlohmann::json& j, int64_t epochs, bool validating,
                                   const header_reader& h) {
  train_epoch_report r;
  r.epoch = h.integer(j, "epochs[].epoch");
  r.epochs = epochs;
  r.loss = h.number(j, "epochs[].loss");
  r.accuracy = h.number(j, "epochs[].accuracy");
  r.eval_loss = h.number(j, "epochs[].eval_loss");
  r.n = h.integer(j, "epochs[].n");
  r.best = h.boolean(j, "epochs[].best");
  r.seconds = h.number(j, "epochs[].seconds");
  r.tokens_per_second = h.number(j, "epochs[].tokens_per_second");
  r.on_validation = validating;
  return r;
}

// The training record as a checkpoint's fingerprint holds it: the data (and a vectors file) by
// their bytes' digest instead of their paths, so the same text under another name resumes and
// other text under the same name is refused.
std::string content_record(const std::string& record, const train_options& o) {
  nlohmann::json j = nlohmann::json::parse(record);
  const auto digest = [](const std::string& path) {
    const io::file_digest d = io::digest_file(path);
    if (!d.readable) throw_input(path, d.problem);
    return d.describe();
  };
  j["data"] = digest(o.data);
  if (o.word_vectors != nullptr && !uses_default_vectors(o) && std::filesystem::is_regular_file(o.word_vectors->source()))
    j["vectors"] = digest(o.word_vectors->source());
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Each task's checkpoints are their own format: one never resumes the other.
std::string checkpoint_format(text_task task) {
  return task == text_task::lm ? "attn-lm-training/1" : "attn-masked-word-training/1";
}

void save_checkpoint(const std::string& path, const std::string& format, const std::string& record,
                     const std::string& run, const progress& p,
                     const std::vector<train_epoch_report>& epochs,
                     const std::vector<train_eval_report>& evaluations,
                     const std::vector<nn::parameter<float>*>& params, const adamw& optimiser,
                     const std::vector<std::vector<float>>& best_weights) {
  checkpoint c;
  c.header = {{"format", format}, {"options", record}, {"run", run}, {"progress", to_json(p)}};
  nlohmann::json reports = nlohmann::json::array();
  for (const train_epoch_report& r : epochs) reports.push_back(epoch_json(r));
  c.header["epochs"] = reports;
  nlohmann::json scored = nlohmann::json::array();
  for (const train_eval_report& r : evaluations) scored.push_back(evaluation_json(r));
  c.header["evaluations"] = scored;
  for (const nn::parameter<float>* q : params)
    if (q->trainable) c.put("value." + q->name, q->value);
  const adamw::state s = optimiser.save();
  for (size_t i = 0, k = 0; i < params.size(); ++i) {
    if (!params[i]->trainable) continue;
    c.put("m." + params[i]->name, s.m[k]);
    c.put("v." + params[i]->name, s.v[k]);
    c.put("done." + params[i]->name, s.done[k]);
    if (p.best_saved) c.put("best." + params[i]->name, best_weights[i]);
    ++k;
  }
  c.put("lrs", s.lrs);
  c.put("replay_steps", s.replay_steps);
  c.put("step_sizes", s.step_sizes);
  c.put("inv_c2s", s.inv_c2s);
  c.put("t", std::vector<int64_t>{s.t});
  c.save(path);
}

// Loads a checkpoint into the run (weights, optimiser, the best weights) and returns where to
// go on from. An input error when it was made with other data or options.
progress load_checkpoint(const std::string& path, const std::string& format, const std::string& record,
                         std::string& run_id,
                         std::vector<train_epoch_report>& epochs, std::vector<train_eval_report>& evaluations,
                         const run_shape& run, bool validating,
                         const std::vector<nn::parameter<float>*>& params, adamw& optimiser,
                         std::vector<std::vector<float>>& best_weights) {
  const checkpoint c = checkpoint::load(path);
  const header_reader h(path, "checkpoint field");
  if (h.text(c.header, "format") != format)
    throw_input(path, format == checkpoint_format(text_task::lm) ? "not a language-model training checkpoint"
                                                                 : "not a masked-word training checkpoint");
  if (h.text(c.header, "options") != record)
    throw_input(path, "the checkpoint was made with other data or options (resume with the same command)");
  run_id = h.text(c.header, "run");  // the run goes on: its checkpoint stays its own
  const progress p = from_json(h.at(c.header, "progress"), h);
  check_progress(p, run, h);
  const nlohmann::json& reports = h.at(c.header, "epochs");
  if (!reports.is_array() || static_cast<int64_t>(reports.size()) != p.epoch - 1)
    throw_input(path, fmt::format("checkpoint field 'epochs' must list the {} finished epochs", p.epoch - 1));
  for (const auto& r : reports) {
    epochs.push_back(epoch_from_json(r, run.epochs, validating, h));
    h.range("epochs[].epoch", static_cast<double>(epochs.back().epoch),
            static_cast<double>(epochs.size()), static_cast<double>(epochs.size()));
  }
  if (h.has(c.header, "evaluations")) {  // absent before the history was kept
    const nlohmann::json& scored = h.at(c.header, "evaluations");
    if (!scored.is_array()) h.fail("evaluations", "must be a list");
    for (const auto& r : scored) {
      evaluations.push_back(evaluation_from_json(r, h));
      h.range("evaluations[].step", static_cast<double>(evaluations.back().step), 1, static_cast<double>(p.done));
    }
  }
  adamw::state s;
  const std::vector<double> t = c.doubles("lrs");
  s.lrs = t;
  s.replay_steps = c.doubles("replay_steps");
  s.step_sizes = c.floats("step_sizes", t.size());
  s.inv_c2s = c.floats("inv_c2s", t.size());
  s.t = c.integers("t", 1)[0];
  if (s.replay_steps.size() != t.size() || s.t + 1 != static_cast<int64_t>(t.size()) || s.t != p.done)
    throw_input(path, "inconsistent checkpoint (optimiser steps)");
  if (p.best_saved) best_weights.assign(params.size(), {});
  for (size_t i = 0; i < params.size(); ++i) {
    nn::parameter<float>& q = *params[i];
    if (!q.trainable) continue;
    q.value = c.floats("value." + q.name, q.value.size());
    s.m.push_back(c.floats("m." + q.name, q.value.size()));
    s.v.push_back(c.floats("v." + q.name, q.value.size()));
    const size_t rows = q.sparse() ? q.value.size() / static_cast<size_t>(q.row_width) : 0;
    s.done.push_back(c.integers("done." + q.name, rows));
    if (p.best_saved) best_weights[i] = c.floats("best." + q.name, q.value.size());
  }
  optimiser.load(std::move(s));
  return p;
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
  if (o.resume && o.checkpoint.empty()) throw_usage("--resume needs a checkpoint path");
}

}  // namespace

train_result train_from_corpus(const train_options& o, const train_callbacks& cb) {
  check_corpus_options(o);
  const bool lm = is_lm(o);
  if (!o.checkpoint.empty() && !o.resume && std::filesystem::exists(o.checkpoint) &&
      !checkpoint::is_checkpoint(o.checkpoint))
    throw_input(o.checkpoint, "exists and is not an attn checkpoint; attn will not overwrite it "
                              "(give another --checkpoint)");
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

  const auto batch = static_cast<size_t>(o.batch);
  const std::vector<int64_t> per_chunk = chunk_steps(o, s, validating);
  int64_t steps = 0;
  for (int64_t n : per_chunk) steps += n;
  if (steps == 0) throw_input(o.data, "no sequence to train on");
  // The budget: epochs (given, or enough for the automatic number of steps), cut short by
  // --max-tokens (the steps it takes: lm's at full windows, masked-word's at the corpus's mean
  // tokens a step, so the learning rate's schedule knows its end) and, as the run goes, by --time.
  const int64_t tokens_per_step =
      lm ? o.batch * o.context : std::max<int64_t>(1, result.train.tokens / std::max<int64_t>(steps, 1));
  // (Rounded up without a sum, which would overflow for a budget near 2^63.)
  const int64_t token_steps = o.max_tokens > 0 ? ceil_div(o.max_tokens, tokens_per_step) : 0;
  const int64_t min_steps = o.min_steps > 0 ? o.min_steps
                            : token_steps > 0 ? token_steps
                            : o.time_limit > 0 ? steps * max_epochs
                            : lm ? default_lm_min_steps : default_min_steps;
  const int64_t epochs = o.epochs > 0 ? o.epochs : std::clamp<int64_t>(ceil_div(min_steps, steps), 1, max_epochs);
  result.planned_epochs = epochs;
  model->training = training_record(o, epochs);
  const int64_t all_epochs = saturating_product(steps, epochs);
  const int64_t total = token_steps > 0 ? std::min(token_steps, all_epochs) : all_epochs;
  const int64_t warmup = std::max<int64_t>(1, std::llround(o.warmup * static_cast<double>(total)));
  const std::vector<nn::parameter<float>*> params = net.parameters();
  adamw optimiser(params, {.weight_decay = o.weight_decay});
  nn::network_cache<float> cache;
  shard_copies copies;  // --shards: the network's copies the shards run on, side by side
  std::vector<std::vector<float>> best_weights;

  // What a checkpoint must match to be resumed: the options and the network they made.
  nlohmann::json fingerprint_fields = nlohmann::json{
      {"training", content_record(model->training, o)}, {"layers", c.layers}, {"heads", c.heads}, {"dim", c.dim},
      {"feedforward", c.feedforward}, {"positions", c.max_positions}, {"new_words", c.new_words},
      {"inputs", model->inputs.size()}, {"outputs", model->outputs.size()}};
  if (c.norm_first) fingerprint_fields["norm_first"] = true;  // absent before pre-norm existed
  if (!c.output_cutoffs.empty()) fingerprint_fields["adaptive_cutoffs"] = c.output_cutoffs;
  const std::string fingerprint =
      fingerprint_fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string format = checkpoint_format(o.task);
  // The id the checkpoint holds, so that the run's end removes its own checkpoint and no other.
  {
    std::random_device device;
    result.checkpoint_run = fmt::format("{:08x}{:08x}", device(), device());
  }
  progress p;
  if (o.resume) {
    const run_shape run{.epochs = epochs, .steps = steps, .chunk_steps = per_chunk,
                        .sequences = s.sequences, .corpus_bytes = s.bytes};
    p = load_checkpoint(o.checkpoint, format, fingerprint, result.checkpoint_run, result.epochs, result.evaluations, run, validating, params,
                        optimiser, best_weights);
    result.resumed_at = p.done;
    result.checkpoint_written = true;  // the run goes on in that file: it is the run's own
    result.best_epoch = p.best_epoch;
  }

  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const double seconds_before = p.seconds;  // a resumed run's time budget goes on from here
  const auto seconds_since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  const auto run_seconds = [&] { return seconds_before + seconds_since(start); };
  const int64_t first_done = p.done, first_tokens = p.all_tokens;
  const bool shared = cb.exchange != nullptr && cb.exchange->processes > 1;
  const bool writes = cb.exchange == nullptr || cb.exchange->process == 0;  // the checkpoint
  const auto stop_here = [&]() -> bool {
    // A data-parallel run's processes could not agree on the step a signal came at: they are
    // stopped by ending them, and resume from the last periodic checkpoint.
    const bool asked = !shared && cb.stop != nullptr && cb.stop->load();
    return asked || (o.stop_after_steps > 0 && p.done >= o.stop_after_steps);
  };
  // The time budget's clock, read once a step: process 0's in a data-parallel run, so that every
  // process takes the same learning rate and stops at the same step.
  double step_seconds = seconds_before;
  const auto read_clock = [&] {
    step_seconds = run_seconds();
    if (!shared || !(o.time_limit > 0)) return;
    std::vector<char> mine(sizeof(double));
    std::memcpy(mine.data(), &step_seconds, sizeof(double));
    const std::vector<char> every = cb.exchange->all_gather(mine);
    std::memcpy(&step_seconds, every.data(), sizeof(double));
  };
  // Whether a budget other than the epochs is spent (then the epoch in progress is the last).
  const auto budget_spent = [&]() -> std::string {
    if (p.done >= total) return o.max_tokens > 0 && token_steps <= all_epochs ? "--max-tokens" : "";
    if (o.time_limit > 0 && step_seconds >= o.time_limit) return "--time";
    return "";
  };
  // The learning rate's schedule by steps, or, with a time budget, by the share of it spent.
  const auto schedule_step = [&]() -> int64_t {
    if (!(o.time_limit > 0)) return p.done;
    const double share = std::min(1.0, step_seconds / o.time_limit);
    return std::max<int64_t>(p.done, std::llround(share * static_cast<double>(total)));
  };
  const auto score_valid = [&] {
    optimiser.flush();  // bring deferred rows up to date
    return score(net, valid);
  };
  corpus_reader reader = open_corpus(o);
  std::vector<std::string> tokens;
  auto epoch_start = clock::now();
  double epoch_train_seconds = 0;
  // A resumed epoch's tokens from before this sitting: its tokens a second count only this one's.
  int64_t epoch_tokens_before = p.epoch_tokens;
  bool last_epoch = false;
  for (; p.epoch <= epochs && !last_epoch; ++p.epoch) {
    const int64_t epoch = p.epoch;
    for (;; ++p.chunk, p.batch = 0) {
      // The chunk: the next chunk_sequences training sequences, shuffled by their own stream.
      if (p.chunk == 0 && p.batch == 0) p.chunk_start = {};
      if (p.chunk >= static_cast<int64_t>(per_chunk.size())) break;
      reader.seek(p.chunk_start);
      std::vector<word_sequence> chunk;            // masked-word: sentences, masked per step
      std::vector<std::vector<std::string>> text;  // lm: paragraphs, cut into windows
      std::vector<int64_t> lengths;                // --pack-sentences: the sentences' token counts
      int64_t read = 0;
      while (read < chunk_sequences) {
        const int64_t i = reader.position().sequence;
        if (!reader.next(tokens)) break;
        if (held_out(i, validating)) continue;
        ++read;
        if (lm) {
          text.push_back(std::move(tokens));
          continue;
        }
        data_summary unused;  // the survey counted the corpus already
        chunk.push_back(encode(tokens, model->inputs, model->outputs, unused));
        if (o.pack_sentences) lengths.push_back(static_cast<int64_t>(tokens.size()));
      }
      if (read == 0) break;
      if (o.pack_sentences) chunk = pack_sentences(chunk, lengths, o.max_length);  // before the shuffle: neighbours
      rng shuffle(mix(mix(o.seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(p.chunk)));
      // lm: each epoch cuts the chunk's stream at other places. The stream starts at a paragraph
      // drawn for the epoch and wraps around to the ones before it, so every window still
      // starts its paragraphs after an end token, the count of windows does not change, and a
      // book read fifty times is not cut into the same windows fifty times (nanoGPT draws its
      // windows anywhere in the text).
      // (Drawn from a generator of its own, so that the shuffle's draws are those of a stream
      // that starts at its first paragraph.)
      if (lm) {
        rng cut(mix(mix(mix(o.seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(p.chunk)), 1));
        std::rotate(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(cut.below(text.size())), text.end());
      }
      std::vector<masked_sequence> windows = lm ? lm_windows(text, model->inputs, o.context, nullptr)
                                                : std::vector<masked_sequence>{};
      text.clear();
      const corpus_position next_chunk = reader.position();
      if (lm) shuffle.shuffle(windows);
      else {
        shuffle.shuffle(chunk);
        if (o.group_by_length) group_by_length(chunk, batch, shuffle);
      }
      const size_t items = lm ? windows.size() : chunk.size();
      const auto chunk_batches = static_cast<int64_t>((items + batch - 1) / batch);
      const auto t0 = clock::now();
      for (; p.batch < chunk_batches; ++p.batch) {
        if (stop_here()) {
          p.seconds = run_seconds();
          if (!o.checkpoint.empty() && writes)
            save_checkpoint(o.checkpoint, format, fingerprint, result.checkpoint_run, p, result.epochs, result.evaluations, params, optimiser,
                            best_weights);
          result.checkpoint_written = !o.checkpoint.empty() || result.checkpoint_written;
          result.checkpoint = o.checkpoint;
          result.stopped = true;
          result.trained_tokens = p.all_tokens;
          optimiser.flush();
          net.set_output_bf16(false);
          result.model = text_model(std::move(model));
          return result;
        }
        // This step's masks and dropout, from the step's number.
        rng r(mix(o.seed ^ 0x6d61736bULL, static_cast<uint64_t>(p.done)));
        std::vector<masked_sequence> masked;
        std::vector<const masked_sequence*> group;
        const size_t first = static_cast<size_t>(p.batch) * batch, end = std::min(items, first + batch);
        for (size_t k = first; k < end && !lm; ++k) masked.push_back(mask_words(chunk[k], m, r));
        for (size_t k = first; k < end; ++k) group.push_back(lm ? &windows[k] : &masked[k - first]);
        // The step's gradient: the batch's, or its shards' summed in order (attn-mpi: each
        // process computes its own shards and they swap them).
        // Never 0, which means "evaluating": a training forward also scores the adaptive
        // softmax without every class, and takes the full softmax's gradients in the same pass
        // (nn/fused_output.hpp). (r is this step's own stream, drawn from after the masking.)
        const uint64_t dropout_seed = r.next() | 1;
        int64_t rows = 0;
        for (const masked_sequence* g : group) rows += static_cast<int64_t>(g->positions.size());
        const auto batch_of = [&](int64_t from, int64_t to) {
          return make_masked_batch({group.begin() + from, group.begin() + to});
        };
        const step_totals t = sharded_gradients(net, static_cast<int64_t>(group.size()), rows, batch_of,
                                                o.shards, dropout_seed, cb.exchange, cache, &copies);
        check_finite_loss(o, t.loss_sum, p.done + 1);
        if (t.rows > 0) clip_gradients(params, o.clip);
        p.loss_sum += t.loss_sum;
        p.rows_sum += t.rows;
        p.window_loss_sum += t.loss_sum;
        p.window_rows += t.rows;
        // Every step counts, even one with nothing to predict, so the schedule stays fixed.
        read_clock();
        const double lr = learning_rate(schedule_step(), total, warmup, o.lr);
        optimiser.step(lr);
        ++p.done;
        p.epoch_tokens += t.tokens;
        p.all_tokens += t.tokens;
        if (cb.on_step) {
          const double elapsed = seconds_since(start);
          const auto here = static_cast<double>(p.done - first_done);
          double eta = here > 0 ? elapsed / here * static_cast<double>(total - p.done) : 0.0;
          if (o.time_limit > 0) eta = std::min(eta, std::max(0.0, o.time_limit - run_seconds()));
          int64_t in_epoch = p.done - (epoch - 1) * steps;
          cb.on_step({epoch, epochs, in_epoch, steps, p.loss_sum / static_cast<double>(std::max<int64_t>(p.rows_sum, 1)), lr,
                      elapsed > 0 ? static_cast<double>(p.all_tokens - first_tokens) / elapsed : 0.0, eta});
        }
        // Scored before the checkpoint of the same step, which then keeps the score: a resumed
        // run's history is the uninterrupted run's.
        if (o.eval_steps > 0 && p.done % o.eval_steps == 0 && validating) {
          const scored_examples sc = score_valid();
          result.evaluations.push_back({p.done, total, p.all_tokens, sc.loss, sc.accuracy,
                                        p.window_loss_sum / static_cast<double>(std::max<int64_t>(p.window_rows, 1))});
          p.window_loss_sum = 0;
          p.window_rows = 0;
          if (cb.on_eval) cb.on_eval(result.evaluations.back());
        }
        const bool snapshot_now = o.save_steps > 0 && p.done % o.save_steps == 0;
        const bool checkpoint_now = o.checkpoint_steps > 0 && p.done % o.checkpoint_steps == 0;
        if (snapshot_now && writes && cb.on_snapshot)
          optimiser.flush();  // done by the held-out score above (when the run holds text out)
        // Never a diverged state over a sound one. Every rank checks (their weights are the
        // same), not only the one that writes: a rank that stopped alone would leave the others
        // waiting in the next step's exchange.
        if (snapshot_now || checkpoint_now) check_finite_weights(o, params, p.done);
        if (snapshot_now && writes && cb.on_snapshot) cb.on_snapshot(p.done, model->encode());
        if (checkpoint_now && !o.checkpoint.empty() && writes) {
          progress at = p;
          ++at.batch;  // this batch is done
          at.seconds = run_seconds();
          save_checkpoint(o.checkpoint, format, fingerprint, result.checkpoint_run, at, result.epochs, result.evaluations, params, optimiser,
                          best_weights);
          result.checkpoint_written = true;
        }
        result.budget_end = budget_spent();
        if (!result.budget_end.empty() || p.done >= total) {
          last_epoch = true;
          ++p.batch;
          break;
        }
      }
      epoch_train_seconds += seconds_since(t0);
      if (last_epoch) break;
      p.chunk_start = next_chunk;
    }
    // The epoch's end: bring deferred rows up to date, score, keep the best.
    train_epoch_report r;
    r.epoch = epoch;
    r.epochs = epochs;
    r.loss = p.loss_sum / static_cast<double>(std::max<int64_t>(p.rows_sum, 1));
    r.on_validation = validating;
    const scored_examples sc = validating ? score_valid() : scored_examples{};
    optimiser.flush();
    r.accuracy = sc.accuracy;
    r.eval_loss = sc.loss;
    r.n = sc.n;
    // The epoch's score joins the curve too, unless --eval-steps scored this very step.
    if (validating && (result.evaluations.empty() || result.evaluations.back().step != p.done)) {
      result.evaluations.push_back({p.done, total, p.all_tokens, sc.loss, sc.accuracy,
                                    p.window_loss_sum / static_cast<double>(std::max<int64_t>(p.window_rows, 1))});
      p.window_loss_sum = 0;
      p.window_rows = 0;
    }
    r.seconds = seconds_since(epoch_start);
    r.tokens_per_second =
        epoch_train_seconds > 0 ? static_cast<double>(p.epoch_tokens - epoch_tokens_before) / epoch_train_seconds : 0.0;
    // The language model keeps the lowest held-out loss; masked-word the best accuracy.
    r.best = !validating || (lm ? p.best.n == 0 || sc.loss < p.best.loss : better(sc, p.best));
    if (r.best) {
      p.best = sc;
      p.best_epoch = epoch;
      // Kept apart unless it is the last epoch (then the weights in place are the best).
      p.best_saved = validating && epoch < epochs && !last_epoch;
      best_weights = p.best_saved ? snapshot(params) : std::vector<std::vector<float>>{};
    }
    result.best_epoch = p.best_epoch;
    result.epochs.push_back(r);
    if (cb.on_epoch) cb.on_epoch(r);
    p.loss_sum = 0;
    p.rows_sum = 0;
    p.epoch_tokens = 0;
    p.chunk = 0;
    p.batch = 0;
    epoch_start = clock::now();
    epoch_train_seconds = 0;
    epoch_tokens_before = 0;
    // A language model runs its whole budget: its learning rate decays to the end, and an epoch
    // of overfitting at the peak rate is typically followed by better ones as it falls (on a
    // book, stopping after 3 worse epochs kept perplexity 157 where the full run reaches ~106).
    if (!lm && validating && epoch - p.best_epoch >= o.patience && epoch < epochs && !last_epoch) {
      result.stopped_early = true;
      break;
    }
  }
  if (p.best_saved && result.best_epoch != result.epochs.back().epoch) restore(params, best_weights);
  check_finite_weights(o, params, p.done);
  result.trained_tokens = p.all_tokens;
  net.set_output_bf16(false);
  result.model = text_model(std::move(model));
  return result;
}

}  // namespace attn::train
