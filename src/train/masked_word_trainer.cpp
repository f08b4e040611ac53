// Training a context model on plain text: the masked-word task. One streaming pass surveys the
// corpus (word counts, a held-out share of its sequences); the vocabulary follows (the word
// vectors' rows, learned rows for frequent words they lack, the mask token's row); then epochs
// read the corpus again in chunks of sequences, shuffled within each chunk, hide words
// (masking.hpp) and train bidirectional attention to predict them, scored against the output
// words' own embedding rows (the network's tied output). Memory stays flat in the corpus size.
//
// Every random draw derives from the seed and the place in the run (the chunk's shuffle from
// its epoch and index, a step's masks and dropout from the step's number), and the optimiser's
// state is saved whole, so a run resumed from a checkpoint takes exactly the steps of one that
// never stopped and writes the same model file.
#include "train/masked_word_trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "attn/error.hpp"
#include "io/json_fields.hpp"
#include "train/checkpoint.hpp"
#include "train/corpus.hpp"
#include "train/masking.hpp"
#include "train/model_input.hpp"
#include "train/optimizer.hpp"
#include "train/trainer_parts.hpp"

namespace attn::train {

namespace {

constexpr int64_t chunk_sequences = 4096;  // shuffled together; the memory a run holds
constexpr int64_t valid_every = 20;        // sequence i is held out when i % 20 == 0 …
constexpr int64_t max_valid = 2000;        // … among the first 20 × 2000
constexpr int64_t default_min_steps = 3000;
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

struct survey {
  std::unordered_map<std::string, int64_t> counts;  // training sequences' words
  std::vector<std::vector<std::string>> valid;      // the held-out sequences
  int64_t sequences = 0, train_sequences = 0;
  int64_t bytes = 0;  // of text (decompressed, for .xz and .gz)
};

survey survey_corpus(const train_options& o) {
  survey s;
  corpus_reader reader(o.data, o.max_length);
  std::vector<std::string> tokens;
  while (true) {
    const int64_t i = reader.position().sequence;
    if (!reader.next(tokens)) break;
    ++s.sequences;
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
scored_examples score(const nn::network<float>& net, const std::vector<masked_sequence>& valid) {
  score_tally tally;
  for (size_t begin = 0; begin < valid.size(); begin += score_batch) {
    std::vector<const masked_sequence*> group;
    for (size_t i = begin; i < std::min(valid.size(), begin + score_batch); ++i) group.push_back(&valid[i]);
    tally.add(net, make_masked_batch(group));
  }
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
};

nlohmann::json to_json(const progress& p) {
  return {{"epoch", p.epoch}, {"chunk", p.chunk}, {"batch", p.batch},
          {"offset", p.chunk_start.offset}, {"skip", p.chunk_start.skip},
          {"sequence", p.chunk_start.sequence}, {"done", p.done}, {"all_tokens", p.all_tokens},
          {"loss_sum", p.loss_sum}, {"rows_sum", p.rows_sum}, {"epoch_tokens", p.epoch_tokens},
          {"best_epoch", p.best_epoch}, {"best_accuracy", p.best.accuracy},
          {"best_loss", p.best.loss}, {"best_n", p.best.n}, {"best_saved", p.best_saved}};
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
  return p;
}

// What the run itself fixes: its epochs, steps, chunks and the corpus's size.
struct run_shape {
  int64_t epochs = 0, steps = 0, batch = 0;
  int64_t sequences = 0, train_sequences = 0, corpus_bytes = 0;
};

void check_progress(const progress& p, const run_shape& r, const header_reader& h) {
  const auto f = [](int64_t v) { return static_cast<double>(v); };
  const int64_t chunk_steps = (chunk_sequences + r.batch - 1) / r.batch;
  const int64_t chunks = (r.train_sequences + chunk_sequences - 1) / chunk_sequences;
  h.range("progress.epoch", f(p.epoch), 1, f(r.epochs));
  h.range("progress.chunk", f(p.chunk), 0, f(std::max<int64_t>(chunks - 1, 0)));
  h.range("progress.batch", f(p.batch), 0, f(chunk_steps));
  h.range("progress.offset", f(p.chunk_start.offset), 0, f(r.corpus_bytes));
  h.range("progress.sequence", f(p.chunk_start.sequence), 0, f(r.sequences));
  h.range("progress.skip", f(p.chunk_start.skip), 0, f(p.chunk_start.sequence));
  // Every step counts, so where the run is fixes how many steps it took.
  const int64_t expected = (p.epoch - 1) * r.steps + p.chunk * chunk_steps + p.batch;
  h.range("progress.done", f(p.done), f(expected), f(expected));
  h.range("progress.all_tokens", f(p.all_tokens), 0, 9e18);
  h.range("progress.epoch_tokens", f(p.epoch_tokens), 0, f(p.all_tokens));
  h.range("progress.rows_sum", f(p.rows_sum), 0, f(p.epoch_tokens));
  h.range("progress.loss_sum", p.loss_sum, 0, 1e300);
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

void save_checkpoint(const std::string& path, const std::string& record, const progress& p,
                     const std::vector<train_epoch_report>& epochs,
                     const std::vector<nn::parameter<float>*>& params, const adamw& optimiser,
                     const std::vector<std::vector<float>>& best_weights) {
  checkpoint c;
  c.header = {{"format", "attn-masked-word-training/1"}, {"options", record}, {"progress", to_json(p)}};
  nlohmann::json reports = nlohmann::json::array();
  for (const train_epoch_report& r : epochs) reports.push_back(epoch_json(r));
  c.header["epochs"] = reports;
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
progress load_checkpoint(const std::string& path, const std::string& record,
                         std::vector<train_epoch_report>& epochs, const run_shape& run, bool validating,
                         const std::vector<nn::parameter<float>*>& params, adamw& optimiser,
                         std::vector<std::vector<float>>& best_weights) {
  const checkpoint c = checkpoint::load(path);
  const header_reader h(path, "checkpoint field");
  if (h.text(c.header, "format") != "attn-masked-word-training/1")
    throw_input(path, "not a masked-word training checkpoint");
  if (h.text(c.header, "options") != record)
    throw_input(path, "the checkpoint was made with other data or options (resume with the same command)");
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

}  // namespace

train_result train_masked_word(const train_options& o, const train_callbacks& cb) {
  check_options(o);
  if (!(o.mask_share > 0 && o.mask_share < 1))
    throw_usage(fmt::format("--mask must be in (0, 1), got {}", o.mask_share));
  if (o.max_length < 2) throw_usage(fmt::format("--max-length must be at least 2, got {}", o.max_length));
  if (o.max_outputs < 1) throw_usage(fmt::format("--outputs must be at least 1, got {}", o.max_outputs));
  if (!o.valid.empty()) throw_usage("masked-word holds out its own sequences: --valid is not taken");
  if (o.checkpoint_steps < 0 || o.stop_after_steps < 0) throw_usage("checkpoint and stop steps must be ≥ 0");
  if (o.resume && o.checkpoint.empty()) throw_usage("--resume needs a checkpoint path");

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
    result.valid.source = fmt::format("{} sequences held out from {} (every {}th)", s.valid.size(), o.data, valid_every);

  text_model_config c = model_config(o);
  c.pool = pooling::mean;   // not used: the hidden tokens are picked one by one
  c.hidden = c.embed_dim;   // the tied output compares with embedding rows
  if (o.positions) c.max_positions = o.max_length;

  vocabulary vocab = make_vocabulary(o, s);
  if (vocab.outputs.size() == 0) throw_input(o.data, "no word of the corpus has an embedding (nothing to predict)");
  c.new_words = vocab.new_words;
  result.train.new_words = std::max<int64_t>(0, vocab.new_words - vocab.tuned - 1);  // the mask row aside
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
  masking m;
  m.share = o.mask_share;
  m.mask_id = vocab.inputs.find(mask_token);
  for (const std::string& w : vocab.outputs.words()) m.output_rows.push_back(vocab.inputs.find(w));

  // The held-out sequences with their hidden words fixed once, from a stream of their own.
  std::vector<masked_sequence> valid;
  {
    rng r(mix(o.seed, 0x76616c6964ULL));
    for (const auto& tokens : s.valid) {
      const word_sequence w = encode(tokens, vocab.inputs, vocab.outputs, result.valid);
      ++result.valid.lines;
      result.valid.tokens += static_cast<int64_t>(w.ids.size());
      masked_sequence ms = mask_words(w, m, r);
      if (!ms.positions.empty()) valid.push_back(std::move(ms));
    }
    s.valid.clear();
  }

  auto model = std::make_unique<text_model::impl>(c, std::move(vocab.inputs), std::move(vocab.outputs));
  nn::network<float>& net = model->net;
  {
    rng init(o.seed);
    initialise(net, o, model->inputs, init);
  }

  const auto batch = static_cast<size_t>(o.batch);
  const auto chunk_steps = [&](int64_t n) { return (n + o.batch - 1) / o.batch; };
  const int64_t steps = (s.train_sequences / chunk_sequences) * chunk_steps(chunk_sequences) +
                        chunk_steps(s.train_sequences % chunk_sequences);
  if (steps == 0) throw_input(o.data, "no sequence to train on");
  const int64_t min_steps = o.min_steps > 0 ? o.min_steps : default_min_steps;
  const int64_t epochs = o.epochs > 0 ? o.epochs : std::clamp<int64_t>((min_steps + steps - 1) / steps, 1, max_epochs);
  result.planned_epochs = epochs;
  model->training = training_record(o, epochs);
  const int64_t total = steps * epochs;
  const int64_t warmup = std::max<int64_t>(1, std::llround(o.warmup * static_cast<double>(total)));
  const std::vector<nn::parameter<float>*> params = net.parameters();
  adamw optimiser(params, {.weight_decay = o.weight_decay});
  nn::network_cache<float> cache;
  std::vector<std::vector<float>> best_weights;

  // What a checkpoint must match to be resumed: the options and the network they made.
  nlohmann::json fingerprint_fields = nlohmann::json{
      {"training", model->training}, {"layers", c.layers}, {"heads", c.heads}, {"dim", c.dim},
      {"feedforward", c.feedforward}, {"positions", c.max_positions}, {"new_words", c.new_words},
      {"inputs", model->inputs.size()}, {"outputs", model->outputs.size()}};
  if (c.norm_first) fingerprint_fields["norm_first"] = true;  // absent before pre-norm existed
  const std::string fingerprint =
      fingerprint_fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  progress p;
  if (o.resume) {
    const run_shape run{.epochs = epochs, .steps = steps, .batch = o.batch, .sequences = s.sequences,
                        .train_sequences = s.train_sequences, .corpus_bytes = s.bytes};
    p = load_checkpoint(o.checkpoint, fingerprint, result.epochs, run, validating, params,
                        optimiser, best_weights);
    result.resumed_at = p.done;
    result.checkpoint_written = true;  // the run goes on in that file: it is the run's own
    result.best_epoch = p.best_epoch;
  }

  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto seconds_since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  const int64_t first_done = p.done;
  const auto stop_here = [&]() -> bool {
    const bool asked = cb.stop != nullptr && cb.stop->load();
    return asked || (o.stop_after_steps > 0 && p.done >= o.stop_after_steps);
  };
  corpus_reader reader(o.data, o.max_length);
  std::vector<std::string> tokens;
  auto epoch_start = clock::now();
  double epoch_train_seconds = 0;
  for (; p.epoch <= epochs; ++p.epoch) {
    const int64_t epoch = p.epoch;
    for (;; ++p.chunk, p.batch = 0) {
      // The chunk: the next chunk_sequences training sequences, shuffled by their own stream.
      if (p.chunk == 0 && p.batch == 0) p.chunk_start = {};
      reader.seek(p.chunk_start);
      std::vector<word_sequence> chunk;
      int64_t read = 0;
      while (read < chunk_sequences) {
        const int64_t i = reader.position().sequence;
        if (!reader.next(tokens)) break;
        if (held_out(i, validating)) continue;
        ++read;
        data_summary unused;  // the survey counted the corpus already
        chunk.push_back(encode(tokens, model->inputs, model->outputs, unused));
      }
      if (read == 0) break;
      const corpus_position next_chunk = reader.position();
      rng shuffle(mix(mix(o.seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(p.chunk)));
      shuffle.shuffle(chunk);
      const auto chunk_batches = static_cast<int64_t>((chunk.size() + batch - 1) / batch);
      const auto t0 = clock::now();
      for (; p.batch < chunk_batches; ++p.batch) {
        if (stop_here()) {
          if (!o.checkpoint.empty())
            save_checkpoint(o.checkpoint, fingerprint, p, result.epochs, params, optimiser, best_weights);
          result.checkpoint_written = !o.checkpoint.empty() || result.checkpoint_written;
          result.checkpoint = o.checkpoint;
          result.stopped = true;
          optimiser.flush();
          result.model = text_model(std::move(model));
          return result;
        }
        // This step's masks and dropout, from the step's number.
        rng r(mix(o.seed ^ 0x6d61736bULL, static_cast<uint64_t>(p.done)));
        std::vector<masked_sequence> masked;
        for (size_t k = static_cast<size_t>(p.batch) * batch; k < std::min(chunk.size(), static_cast<size_t>(p.batch + 1) * batch); ++k)
          masked.push_back(mask_words(chunk[k], m, r));
        std::vector<const masked_sequence*> group;
        for (const masked_sequence& ms : masked) group.push_back(&ms);
        const nn::batch b = make_masked_batch(group);
        if (!b.rows.empty()) {
          net.zero_grad();
          const uint64_t dropout_seed = c.dropout > 0 ? (r.next() | 1) : 0;
          const float loss = net.forward(b, cache, dropout_seed);
          net.backward(b, cache);
          clip_gradients(params, o.clip);
          p.loss_sum += static_cast<double>(loss) * static_cast<double>(b.rows.size());
          p.rows_sum += static_cast<int64_t>(b.rows.size());
        }
        // Every step counts, even one with nothing to predict, so the schedule stays fixed.
        const double lr = learning_rate(p.done, total, warmup, o.lr);
        optimiser.step(lr);
        ++p.done;
        p.epoch_tokens += b.tokens();
        p.all_tokens += b.tokens();
        if (cb.on_step) {
          const double elapsed = seconds_since(start);
          const auto here = static_cast<double>(p.done - first_done);
          int64_t in_epoch = p.done - (epoch - 1) * steps;
          cb.on_step({epoch, epochs, in_epoch, steps, p.loss_sum / static_cast<double>(std::max<int64_t>(p.rows_sum, 1)), lr,
                      elapsed > 0 ? static_cast<double>(p.all_tokens) / elapsed : 0.0,
                      here > 0 ? elapsed / here * static_cast<double>(total - p.done) : 0.0});
        }
        if (o.checkpoint_steps > 0 && p.done % o.checkpoint_steps == 0 && !o.checkpoint.empty()) {
          progress at = p;
          ++at.batch;  // this batch is done
          save_checkpoint(o.checkpoint, fingerprint, at, result.epochs, params, optimiser, best_weights);
          result.checkpoint_written = true;
        }
      }
      epoch_train_seconds += seconds_since(t0);
      p.chunk_start = next_chunk;
    }
    // The epoch's end: bring deferred rows up to date, score, keep the best.
    optimiser.flush();
    train_epoch_report r;
    r.epoch = epoch;
    r.epochs = epochs;
    r.loss = p.loss_sum / static_cast<double>(std::max<int64_t>(p.rows_sum, 1));
    r.on_validation = validating;
    const scored_examples sc = validating ? score(net, valid) : scored_examples{};
    r.accuracy = sc.accuracy;
    r.eval_loss = sc.loss;
    r.n = sc.n;
    r.seconds = seconds_since(epoch_start);
    r.tokens_per_second = epoch_train_seconds > 0 ? static_cast<double>(p.epoch_tokens) / epoch_train_seconds : 0.0;
    r.best = !validating || better(sc, p.best);
    if (r.best) {
      p.best = sc;
      p.best_epoch = epoch;
      // Kept apart unless it is the last epoch (then the weights in place are the best).
      p.best_saved = validating && epoch < epochs;
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
    if (validating && epoch - p.best_epoch >= o.patience && epoch < epochs) {
      result.stopped_early = true;
      break;
    }
  }
  if (p.best_saved && result.best_epoch != result.epochs.back().epoch) restore(params, best_weights);
  result.model = text_model(std::move(model));
  return result;
}

}  // namespace attn::train
