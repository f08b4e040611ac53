// attn::train_text_model, and the labelled tasks' set-up (classify, next-word): data →
// validation split → vocabulary (vocabulary.hpp) → initial weights → the lines as an in-memory
// batch source for the one training loop (loop.hpp: epochs of shuffled mini-batches, the
// schedule, checkpoints, the best epoch's weights) → a text_model. The streamed tasks' set-up is
// corpus_trainer.cpp.
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/train.hpp"
#include "train/rng.hpp"
#include "train/run_threads.hpp"
#include "train/text_model_impl.hpp"
#include "train/corpus_trainer.hpp"
#include "train/loop.hpp"
#include "train/trainer_parts.hpp"
#include "train/vocabulary.hpp"

namespace attn {

namespace {

using train::better;
using train::checkpoint_identity;
using train::loop_budget;
using train::check_options;
using train::encoded_example;
using train::initialise;
using train::text_example;
using train::training_record;
using train::uses_default_vectors;
using train::word_index;

// The automatic budget: enough optimiser steps to fit a small file (seed 003's four lines take
// one step an epoch), at least min_epochs passes over a large one, and never more than
// max_epochs. Early stopping ends large runs once the validation score stops improving.
constexpr int64_t default_min_steps = 1000;
constexpr int64_t min_epochs = 4;
constexpr int64_t max_epochs = 1000;
constexpr int64_t max_valid_lines = 5000;



// Token sequences as hashes (FNV-1a over the tokens, each followed by a separator), to find the
// lines that are contained in others without storing every span. The hash extends one token at a
// time, so all spans starting at one place cost one pass.
constexpr uint64_t fnv_offset = 0xcbf29ce484222325ULL;

uint64_t extend_hash(uint64_t h, const std::string& token) {
  for (unsigned char ch : token) h = (h ^ ch) * 0x100000001b3ULL;
  return (h ^ 0x1fU) * 0x100000001b3ULL;
}

uint64_t line_hash(const std::vector<std::string>& tokens) {
  uint64_t h = fnv_offset;
  for (const std::string& t : tokens) h = extend_hash(h, t);
  return h;
}

// Without a validation file, a share of the training lines (chosen by the seed) is held out when
// there are enough lines to spare; the rest trains. Returns the held-out lines and counts in
// `dropped` the training lines left out because a held-out line contains them.
//
// Some corpora label the phrases of their sentences too (SST-2: a sentence, then its parts,
// each a line). A held-out sentence whose phrases stay in training would be scored on what the
// model was shown, and early stopping would chase memorisation. So the held-out lines are drawn
// from the lines that no other line contains, and the training lines inside a held-out line
// are left out. In a corpus without such lines this is a plain random split.
std::vector<text_example> hold_out(std::vector<text_example>& lines, const train_options& o,
                                   int64_t& dropped, std::string& reason) {
  dropped = 0;
  const auto n = static_cast<int64_t>(lines.size());
  if (n < o.valid_min_lines) {
    reason = fmt::format("{} lines are too few to hold some out", n);
    return {};
  }
  std::unordered_map<uint64_t, std::vector<size_t>> by_hash;  // a whole line → its indices
  for (size_t i = 0; i < lines.size(); ++i)
    by_hash[line_hash(lines[i].tokens)].push_back(i);
  // A line is contained when it is a proper span of another (hash equality, then the tokens).
  std::vector<bool> contained(lines.size(), false);
  const auto visit_spans = [&](size_t i, auto&& found) {
    const std::vector<std::string>& t = lines[i].tokens;
    for (size_t b = 0; b < t.size(); ++b) {
      uint64_t h = fnv_offset;
      for (size_t e = b + 1; e <= t.size(); ++e) {
        h = extend_hash(h, t[e - 1]);  // the span [b, e)
        if (e - b == t.size()) continue;
        auto it = by_hash.find(h);
        if (it == by_hash.end()) continue;
        for (size_t j : it->second)
          if (lines[j].tokens.size() == e - b &&
              std::equal(t.begin() + static_cast<std::ptrdiff_t>(b),
                         t.begin() + static_cast<std::ptrdiff_t>(e), lines[j].tokens.begin()))
            found(j);
      }
    }
  };
  for (size_t i = 0; i < lines.size(); ++i) visit_spans(i, [&](size_t j) { contained[j] = true; });
  // Whole distinct texts are held out, every copy with it: data often repeats lines, and
  // holding out one copy while leaving the others out (they would leak) emptied small files.
  // The first copy of each text stands for all of them.
  std::vector<size_t> candidates;
  std::unordered_map<uint64_t, std::vector<size_t>> firsts;  // hash → first copies seen
  const auto first_copy = [&](size_t i) -> size_t {
    for (size_t j : firsts[line_hash(lines[i].tokens)])
      if (lines[j].tokens == lines[i].tokens) return j;
    firsts[line_hash(lines[i].tokens)].push_back(i);
    return i;
  };
  std::vector<size_t> first_of(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    first_of[i] = first_copy(i);
    if (first_of[i] == i && !contained[i] && !lines[i].tokens.empty()) candidates.push_back(i);
  }
  const auto share = static_cast<int64_t>(std::llround(o.valid_share * static_cast<double>(candidates.size())));
  int64_t take = std::min(max_valid_lines, share);
  if (take < 1) {
    reason = fmt::format("{} distinct lines are too few to hold some out", candidates.size());
    return {};
  }
  train::rng r(o.seed ^ 0x76616c6964ULL);  // its own stream: the split does not move the weights
  r.shuffle(candidates);
  // 0: trains; 1: held out; 2: inside a held-out line, left out (its label would leak)
  std::vector<int> role(lines.size(), 0);
  for (int64_t k = 0; k < take; ++k) role[candidates[static_cast<size_t>(k)]] = 1;
  for (size_t i = 0; i < lines.size(); ++i)
    if (role[first_of[i]] == 1) role[i] = 1;  // every copy of a held-out text
  for (int64_t k = 0; k < take; ++k)
    visit_spans(candidates[static_cast<size_t>(k)], [&](size_t j) { if (role[j] == 0) role[j] = 2; });
  if (std::find(role.begin(), role.end(), 0) == role.end()) {
    // Every line is a held-out text or inside one: nothing would train. Keep them all.
    reason = "every training line is inside a line that would be held out, so none is";
    return {};
  }
  std::vector<text_example> keep, valid;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (role[i] == 1) valid.push_back(std::move(lines[i]));
    else if (role[i] == 0) keep.push_back(std::move(lines[i]));
    else ++dropped;
  }
  lines = std::move(keep);
  return valid;
}





std::vector<encoded_example> encode_all(const std::vector<text_example>& set, text_task task,
                                        const word_index& inputs, const word_index& outputs,
                                        int64_t max_positions, data_summary& summary) {
  std::vector<encoded_example> out;
  out.reserve(set.size());
  for (const text_example& ex : set)
    out.push_back(train::encode_example(ex, task, inputs, outputs, max_positions, summary));
  return out;
}





}  // namespace

std::string pooling_name(pooling p) {
  switch (p) {
    case pooling::mean: return "mean";
    case pooling::max: return "max";
    case pooling::mean_max: return "mean+max";
    case pooling::attention: return "attention";
  }
  return "mean";
}

pooling parse_pooling(const std::string& name) {
  for (pooling p : {pooling::mean, pooling::max, pooling::mean_max, pooling::attention})
    if (pooling_name(p) == name) return p;
  throw_usage(fmt::format("--pool '{}': expected mean, max, mean+max or attention", name));
}

namespace {

// classify and next-word: the encoded lines in memory, one part an epoch, reshuffled at its start
// by the run's stream, which also draws each step's dropout; a checkpoint keeps the order and the
// stream.
class example_batches final : public train::batch_source {
 public:
  example_batches(const std::vector<encoded_example>& data, std::vector<size_t> order, text_task task,
                  int64_t batch, train::rng& random, bool dropout, int64_t steps)
      : data_(data), order_(std::move(order)), task_(task), batch_(static_cast<size_t>(batch)), random_(random),
        dropout_(dropout), part_steps_{steps} {}

  const std::vector<int64_t>& part_steps() const override { return part_steps_; }

  int64_t begin_part(int64_t, int64_t, bool resumed) override {
    if (!resumed) random_.shuffle(order_);  // (a resumed epoch's order came with the checkpoint)
    return part_steps_[0];
  }

  train::step_batch batch(int64_t index, int64_t) override {
    group_.clear();
    const size_t first = static_cast<size_t>(index) * batch_;
    for (size_t i = first; i < std::min(order_.size(), first + batch_); ++i) group_.push_back(&data_[order_[i]]);
    train::step_batch b;
    b.items = static_cast<int64_t>(group_.size());
    for (const encoded_example* e : group_) b.rows += e->predictions();
    // A dropout seed from the run's stream (never 0, which means "evaluating").
    b.dropout_seed = dropout_ ? (random_.next() | 1) : 0;
    b.batch_of = [this](int64_t from, int64_t to) {
      return train::make_batch(std::vector<const encoded_example*>(group_.begin() + from, group_.begin() + to), task_);
    };
    return b;
  }

  void save(nlohmann::json&, train::checkpoint& c) const override {
    c.put("order", std::vector<int64_t>(order_.begin(), order_.end()));
    std::vector<int64_t> state;
    for (const uint64_t word : random_.state()) state.push_back(static_cast<int64_t>(word));
    c.put("random", state);
  }
  void load(const nlohmann::json&, const io::json_fields& h, const train::checkpoint& c) override {
    const std::vector<int64_t> order = c.integers("order", order_.size());
    std::vector<size_t> loaded(order.begin(), order.end()), expected = order_;
    std::sort(loaded.begin(), loaded.end());
    std::sort(expected.begin(), expected.end());
    if (loaded != expected) h.fail("order", "is not an order of the training lines");
    const std::vector<int64_t> state = c.integers("random", 4);
    std::array<uint64_t, 4> words{};
    for (size_t i = 0; i < 4; ++i) words[i] = static_cast<uint64_t>(state[i]);
    if (words == std::array<uint64_t, 4>{}) h.fail("random", "is the one state the generator cannot be in");
    order_.assign(order.begin(), order.end());
    random_.set_state(words);
  }

 private:
  const std::vector<encoded_example>& data_;
  std::vector<size_t> order_;  // the lines with something to predict, in this epoch's order
  text_task task_;
  size_t batch_;
  train::rng& random_;
  bool dropout_;
  std::vector<int64_t> part_steps_;
  std::vector<const encoded_example*> group_;  // this step's lines
};

// classify and next-word: labelled lines, read whole.
train_result train_on_examples(const train_options& o, const train_callbacks& cb) {
  check_options(o);
  train::check_loop_options(o);
  const gradient_exchange* exchange = cb.exchange;
  std::vector<text_example> train_set, valid_set;
  // Each process reads the files itself; a process that cannot fails every process.
  const auto read_files = [&] {
    train_set = train::read_examples(o.data, o.task);
    if (train_set.empty()) throw_input(o.data, "no training examples (every line is blank)");
    if (!o.valid.empty()) {
      valid_set = train::read_examples(o.valid, o.task);
      if (valid_set.empty()) throw_input(o.valid, "no validation examples (every line is blank)");
    }
  };
  if (exchange != nullptr) exchange->agreed(read_files);
  else read_files();
  train_result result;
  if (!o.valid.empty()) {
    result.valid.source = o.valid;
  } else {
    int64_t dropped = 0;
    valid_set = hold_out(train_set, o, dropped, result.no_validation);
    result.left_out = dropped;
    if (!valid_set.empty())
      result.valid.source = fmt::format("{} lines held out from {}", valid_set.size(), o.data);
  }
  result.train.source = o.data;

  text_model_config c = train::model_config(o);

  train::vocabulary vocab = train::examples_input_words(o, train_set, valid_set);
  c.new_words = vocab.new_words;
  result.train.new_words = vocab.new_words - vocab.tuned;
  result.train.tuned_words = vocab.tuned;
  word_index outputs = train::examples_output_words(o.task, train_set, vocab.inputs);
  if (outputs.size() == 0)
    throw_input(o.data, "no word of the training data has an embedding (nothing to predict)");
  if (o.positions) {
    for (const text_example& ex : train_set) {
      int64_t known = 0;
      for (const std::string& t : ex.tokens) known += vocab.inputs.find(t) >= 0 ? 1 : 0;
      c.max_positions = std::max(c.max_positions, known);
    }
    c.max_positions = std::max<int64_t>(c.max_positions, 1);
  }

  auto model = std::make_unique<text_model::impl>(c, std::move(vocab.inputs), std::move(outputs));
  models::network<float>& net = model->net;
  train::rng random(o.seed);
  initialise(net, o, model->inputs, random);

  const std::vector<encoded_example> train_data =
      encode_all(train_set, o.task, model->inputs, model->outputs, c.max_positions, result.train);
  const std::vector<encoded_example> valid_data =
      encode_all(valid_set, o.task, model->inputs, model->outputs, c.max_positions, result.valid);
  std::vector<size_t> order;
  for (size_t i = 0; i < train_data.size(); ++i)
    if (train_data[i].predictions() > 0) order.push_back(i);
  if (order.empty()) throw_input(o.data, "no line has anything to learn from (too few known words)");

  const auto steps = static_cast<int64_t>((order.size() + static_cast<size_t>(o.batch) - 1) / static_cast<size_t>(o.batch));
  int64_t tokens = 0;
  for (const encoded_example& e : train_data) tokens += e.predictions();
  const loop_budget budget =
      train::plan_budget(o, steps, {.default_min_steps = default_min_steps, .min_epochs = min_epochs,
                                    .max_epochs = max_epochs, .tokens_per_step = std::max<int64_t>(1, tokens / steps)});
  result.planned_epochs = budget.epochs;
  model->training = training_record(o, budget.epochs);
  const checkpoint_identity identity{.path = o.checkpoint, .format = train::checkpoint_format(o.task),
                                     .fingerprint = train::run_fingerprint(c, *model, o), .run = train::new_run_id()};
  example_batches source(train_data, std::move(order), o.task, o.batch, random, c.dropout > 0, steps);
  const bool validating = !valid_data.empty();
  train::task_evaluation eval;
  eval.validating = validating;
  eval.held_out = [&] { return train::score_examples(net, o.task, valid_data); };
  eval.without_held_out = [&] { return train::score_examples(net, o.task, train_data); };
  eval.improves = [](const train::scored_examples& sc, const train::scored_examples& best) { return better(sc, best); };
  eval.epoch_history = false;  // the curve holds --eval-steps' scores only (the epochs' are in the reports)
  train::network_trainable trainable_net(net);
  train::run_training_loop(o, cb, trainable_net, [&] { return model->encode(); }, source, eval, budget, identity,
                           static_cast<int64_t>(train_data.size() + valid_data.size()), result);
  result.model = text_model(std::move(model));
  return result;
}

}  // namespace

train_result train_text_model(const train_options& o, const train_callbacks& cb) {
  keep_freed_memory_for_reuse();
  const train::run_threads threads(o.threads);  // options.threads for this run only
  train_result r = kind_of(o.task).streamed ? train::train_from_corpus(o, cb)
                                                                                : train_on_examples(o, cb);
  // The model file keeps what the run scored as it went (attn train --plot, the page).
  r.model.internals().history = {r.epochs, r.evaluations};
  return r;
}

}  // namespace attn
