// attn::train_text_model: data → vocabulary → initial weights → epochs of shuffled mini-batches
// (forward, backward, clipping, AdamW at the scheduled learning rate) → a text_model.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/train.hpp"
#include "train/optimizer.hpp"
#include "train/rng.hpp"
#include "train/text_model_impl.hpp"

namespace attn {

namespace {

using train::encoded_example;
using train::text_example;
using train::word_index;

void check_options(const train_options& o) {
  if (o.data.empty()) throw_usage("no training data (--data FILE)");
  if (o.epochs < 1) throw_usage(fmt::format("--epochs must be at least 1, got {}", o.epochs));
  if (o.batch < 1) throw_usage(fmt::format("--batch must be at least 1, got {}", o.batch));
  if (!(o.lr > 0) || !std::isfinite(o.lr)) throw_usage(fmt::format("--lr must be positive, got {}", o.lr));
  if (o.heads < 1) throw_usage(fmt::format("--heads must be at least 1, got {}", o.heads));
  if (o.dim < 0 || o.hidden < 0) throw_usage("--dim and --hidden must be positive");
  if ((o.word_vectors == nullptr) == (o.learn_embeddings <= 0))
    throw_usage("give word vectors or --learn-embeddings DIM, not both");
  if (o.finetune_embeddings && o.word_vectors == nullptr)
    throw_usage("--finetune-embeddings needs pre-trained vectors (not --learn-embeddings)");
  if (!(o.weight_decay >= 0) || !(o.clip >= 0) || !(o.warmup >= 0 && o.warmup <= 1))
    throw_usage("weight decay and clip must be ≥ 0, warm-up between 0 and 1");
}

bool uses_default_vectors(const train_options& o) {
  return o.word_vectors != nullptr && o.word_vectors->source() == "<default>" &&
         !o.finetune_embeddings;
}

// The words with an embedding: every word of the default vectors (they are in the binary, so
// predict can use words never seen in training); otherwise the data's words (known to the
// vectors, when pre-trained).
word_index input_words(const train_options& o, const std::vector<text_example>& train_set,
                       const std::vector<text_example>& valid_set) {
  word_index words;
  if (uses_default_vectors(o)) {
    for (int64_t i = 0; i < o.word_vectors->size(); ++i)
      words.add(std::string(o.word_vectors->word(i)));
    return words;
  }
  const auto add_all = [&](const std::vector<text_example>& set) {
    for (const text_example& ex : set)
      for (const std::string& t : ex.tokens)
        if (o.word_vectors == nullptr || o.word_vectors->find(t)) words.add(t);
  };
  add_all(train_set);
  // Pre-trained vectors of the validation words are real; learned ones would stay random.
  if (o.word_vectors != nullptr) add_all(valid_set);
  return words;
}

// next-word: the training data's words, most frequent first (ties alphabetical); classify: the
// labels, alphabetical.
word_index output_words(text_task task, const std::vector<text_example>& set,
                        const word_index& inputs) {
  std::map<std::string, int64_t> counts;
  for (const text_example& ex : set) {
    if (task == text_task::classify) {
      counts[ex.label] += 1;
      continue;
    }
    for (const std::string& t : ex.tokens)
      if (inputs.find(t) >= 0) counts[t] += 1;
  }
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  if (task == text_task::next_word)
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
  word_index out;
  for (const auto& [w, n] : sorted) out.add(w);
  return out;
}

void fill_uniform(std::vector<float>& v, train::rng& r, double bound) {
  for (float& x : v) x = static_cast<float>(r.uniform(-bound, bound));
}

// PyTorch's initialisations: xavier-uniform attention projections with zero biases, nn.Linear's
// U(±1/√fan_in) for the MLP head, N(0, 1) learned embeddings, zero positions.
void initialise(nn::network<float>& net, const train_options& o, const word_index& inputs,
                train::rng& r) {
  const nn::network_shape& s = net.shape();
  if (o.word_vectors != nullptr) {
    for (int64_t i = 0; i < inputs.size(); ++i) {
      auto row = o.word_vectors->vector(*o.word_vectors->find(inputs.words()[static_cast<size_t>(i)]));
      std::copy(row.begin(), row.end(), net.embedding.value.begin() + i * s.embed);
    }
  } else {
    for (float& x : net.embedding.value) x = static_cast<float>(r.normal());
  }
  const double xavier_in = std::sqrt(6.0 / static_cast<double>(s.embed + s.width));
  const double xavier_out = std::sqrt(6.0 / static_cast<double>(2 * s.width));
  fill_uniform(net.wq.value, r, xavier_in);
  fill_uniform(net.wk.value, r, xavier_in);
  fill_uniform(net.wv.value, r, xavier_in);
  fill_uniform(net.wo.value, r, xavier_out);
  const double head1 = 1.0 / std::sqrt(static_cast<double>(s.width));
  const double head2 = 1.0 / std::sqrt(static_cast<double>(s.hidden));
  fill_uniform(net.w1.value, r, head1);
  fill_uniform(net.b1.value, r, head1);
  fill_uniform(net.w2.value, r, head2);
  fill_uniform(net.b2.value, r, head2);
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

std::string training_record(const train_options& o) {
  nlohmann::json j = {{"data", o.data}, {"valid", o.valid}, {"epochs", o.epochs}, {"lr", o.lr},
                      {"batch", o.batch}, {"seed", o.seed}, {"weight_decay", o.weight_decay},
                      {"clip", o.clip}, {"warmup", o.warmup},
                      {"vectors", o.word_vectors != nullptr ? o.word_vectors->source() : ""}};
  return j.dump();
}

}  // namespace

train_result train_text_model(const train_options& o, const train_callbacks& cb) {
  check_options(o);
  const std::vector<text_example> train_set = train::read_examples(o.data, o.task);
  const std::vector<text_example> valid_set =
      o.valid.empty() ? std::vector<text_example>{} : train::read_examples(o.valid, o.task);
  if (train_set.empty()) throw_input(o.data, "no training examples (every line is blank)");

  text_model_config c;
  c.task = o.task;
  c.embeddings = uses_default_vectors(o) ? embedding_source::default_vectors : embedding_source::stored;
  c.embeddings_trained = o.word_vectors == nullptr || o.finetune_embeddings;
  c.embed_dim = o.word_vectors != nullptr ? o.word_vectors->dim() : o.learn_embeddings;
  c.dim = o.dim > 0 ? o.dim : c.embed_dim;
  c.heads = o.heads;
  if (c.dim % c.heads != 0)
    throw_usage(fmt::format("--heads {} does not divide the attention width {}{}", c.heads, c.dim,
                            o.dim > 0 ? "" : " (the embedding width; choose --dim)"));
  c.hidden = o.hidden > 0 ? o.hidden : c.dim;

  word_index inputs = input_words(o, train_set, valid_set);
  word_index outputs = output_words(o.task, train_set, inputs);
  if (outputs.size() == 0)
    throw_input(o.data, "no word of the training data has an embedding (nothing to predict)");
  if (o.positions) {
    for (const text_example& ex : train_set) {
      int64_t known = 0;
      for (const std::string& t : ex.tokens) known += inputs.find(t) >= 0 ? 1 : 0;
      c.max_positions = std::max(c.max_positions, known);
    }
    c.max_positions = std::max<int64_t>(c.max_positions, 1);
  }

  train_result result;
  auto model = std::make_unique<text_model::impl>(c, std::move(inputs), std::move(outputs));
  model->training = training_record(o);
  nn::network<float>& net = model->net;
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

  const auto n_batch = static_cast<size_t>(o.batch);
  const auto steps = static_cast<int64_t>((order.size() + n_batch - 1) / n_batch);
  const int64_t total = steps * o.epochs;
  const int64_t warmup = std::max<int64_t>(1, std::llround(o.warmup * static_cast<double>(total)));
  const std::vector<nn::parameter<float>*> params = net.parameters();
  train::adamw optimiser(params, {.weight_decay = o.weight_decay});
  nn::network_cache<float> cache;

  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto seconds_since = [](clock::time_point t) {
    return std::chrono::duration<double>(clock::now() - t).count();
  };
  int64_t done = 0, all_tokens = 0;
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    const auto epoch_start = clock::now();
    random.shuffle(order);
    double loss_sum = 0;
    int64_t rows_sum = 0, epoch_tokens = 0;
    for (int64_t step = 0; step < steps; ++step) {
      std::vector<const encoded_example*> group;
      for (size_t i = static_cast<size_t>(step) * n_batch;
           i < std::min(order.size(), static_cast<size_t>(step + 1) * n_batch); ++i)
        group.push_back(&train_data[order[i]]);
      const nn::batch b = train::make_batch(group, o.task);
      net.zero_grad();
      const float loss = net.forward(b, cache);
      net.backward(b, cache);
      train::clip_gradients(params, o.clip);
      const double lr = train::learning_rate(done, total, warmup, o.lr);
      optimiser.step(lr);
      ++done;
      loss_sum += static_cast<double>(loss) * static_cast<double>(b.rows.size());
      rows_sum += static_cast<int64_t>(b.rows.size());
      epoch_tokens += b.tokens();
      all_tokens += b.tokens();
      if (cb.on_step) {
        const double elapsed = seconds_since(start);
        train_step_report r{epoch, o.epochs, step + 1, steps,
                            loss_sum / static_cast<double>(std::max<int64_t>(rows_sum, 1)), lr,
                            elapsed > 0 ? static_cast<double>(all_tokens) / elapsed : 0.0,
                            elapsed / static_cast<double>(done) * static_cast<double>(total - done)};
        cb.on_step(r);
      }
      if (cb.stop != nullptr && cb.stop->load()) {
        result.stopped = true;
        result.model = text_model(std::move(model));
        return result;
      }
    }
    train_epoch_report r;
    r.epoch = epoch;
    r.epochs = o.epochs;
    r.loss = loss_sum / static_cast<double>(std::max<int64_t>(rows_sum, 1));
    r.on_validation = !valid_data.empty();
    const train::scored_examples s =
        train::score_examples(net, o.task, r.on_validation ? valid_data : train_data);
    r.accuracy = s.accuracy;
    r.eval_loss = s.loss;
    r.n = s.n;
    r.seconds = seconds_since(epoch_start);
    r.tokens_per_second = r.seconds > 0 ? static_cast<double>(epoch_tokens) / r.seconds : 0.0;
    result.epochs.push_back(r);
    if (cb.on_epoch) cb.on_epoch(r);
  }
  result.model = text_model(std::move(model));
  return result;
}

}  // namespace attn
