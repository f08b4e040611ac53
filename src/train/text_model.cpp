// attn::text_model: the model file (safetensors + metadata), prediction and evaluation.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "attn/error.hpp"
#include "attn/safetensors.hpp"
#include "attn/sdpa.hpp"
#include "attn/tokenizer.hpp"
#include "attn/translation_model.hpp"
#include "attn/vectors.hpp"
#include "io/base64.hpp"
#include "io/json_fields.hpp"
#include "io/read_file.hpp"
#include "io/replace_file.hpp"
#include "nn/cross_entropy.hpp"
#include "train/lm_evaluate.hpp"
#include "train/masked_evaluate.hpp"
#include "train/model_input.hpp"
#include "train/parameter_file.hpp"
#include "train/text_model_impl.hpp"
#include "train/training_history.hpp"

namespace attn {

namespace {

// Version 2 adds new words' rows, encoder layers, pooling and dropout to version 1, whose
// files (the seeds' layer with a mean) read the same as before.
constexpr const char* model_format = "attn-text-model/2";
constexpr const char* model_format_v1 = "attn-text-model/1";

std::string embedding_name(embedding_source s) {
  return s == embedding_source::default_vectors ? "default" : "stored";
}

}  // namespace

namespace {

// A masked-word model's output words score against their own embedding rows, so the network
// is told which rows those are.
std::vector<int64_t> output_rows(const text_model_config& c, const train::word_index& inputs,
                                 const train::word_index& outputs) {
  std::vector<int64_t> rows;
  if (kind_of(c.task).word_output)
    for (const std::string& w : outputs.words()) rows.push_back(inputs.find(w));
  return rows;
}

}  // namespace

text_model::impl::impl(text_model_config c, train::word_index in, train::word_index out)
    : config(c), inputs(std::move(in)), outputs(std::move(out)), net(train::network_shape_for(c, inputs.size(), outputs.size()), output_rows(c, inputs, outputs), c.output_cutoffs) {}

text_model::text_model() = default;
text_model::~text_model() = default;
text_model::text_model(text_model&&) noexcept = default;
text_model& text_model::operator=(text_model&&) noexcept = default;
text_model::text_model(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

const text_model_config& text_model::config() const { return impl_->config; }
const std::vector<std::string>& text_model::outputs() const { return impl_->outputs.words(); }
int64_t text_model::input_vocabulary() const { return impl_->inputs.distinct(); }

std::string text_model::encode() const { return impl_->encode(); }

std::string text_model::impl::encode() const {
  const impl& m = *this;
  safetensors_file file;
  for (const nn::parameter<float>* p : m.net.parameters()) {
    // The embedded default vectors are in every attn binary: the model names them instead.
    if (p == &m.net.trunk().embedding && m.config.embeddings == embedding_source::default_vectors)
      continue;
    file.tensors.emplace(p->name, tensor(p->shape, p->value));
  }
  const text_model_config& c = m.config;
  nlohmann::json shape = {{"task", task_name(c.task)},
                          {"embeddings", embedding_name(c.embeddings)},
                          {"embeddings_trained", c.embeddings_trained},
                          {"embed_dim", c.embed_dim},
                          {"new_words", c.new_words},
                          {"dim", c.dim},
                          {"heads", c.heads},
                          {"layers", c.layers},
                          {"feedforward", c.feedforward},
                          {"norm_first", c.norm_first},
                          {"pool", pooling_name(c.pool)},
                          {"hidden", c.hidden},
                          {"max_positions", c.max_positions},
                          {"window", c.window},
                          {"dropout", c.dropout}};
  if (!c.output_cutoffs.empty()) shape["adaptive_cutoffs"] = c.output_cutoffs;  // absent: full softmax
  if (c.pieces > 0) shape["pieces"] = c.pieces;  // absent: words
  file.metadata["format"] = model_format;
  file.metadata["config"] = shape.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  file.metadata["outputs"] = nlohmann::json(m.outputs.words()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // The table's words (unless they are the default vectors'), then the new words' rows.
  const auto& words = m.inputs.words();
  const auto table_end = words.end() - static_cast<std::ptrdiff_t>(c.new_words);
  if (c.embeddings == embedding_source::stored)
    file.metadata["input_words"] = nlohmann::json(std::vector<std::string>(words.begin(), table_end)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (c.new_words > 0)
    file.metadata["new_words"] = nlohmann::json(std::vector<std::string>(table_end, words.end())).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (const text::subword_pieces* pieces = m.tokenizer.pieces())
    file.metadata["pieces"] = io::base64_encode(pieces->serialized());  // one file is one model
  if (!m.training.empty()) file.metadata["training"] = m.training;
  if (!m.history.empty()) file.metadata["history"] = train::history_json(m.history);
  return encode_safetensors(file);
}

void text_model::save(const std::string& path) const {
  const std::string bytes = encode();
  io::replace_file(path, "model file",
                   [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
}

text_model text_model::load(const std::string& path) {
  if (path == "builtin") return builtin();
  if (path == "builtin-lm") return builtin_lm();
  return decode(read_file(path), path);
}

text_model text_model::decode(const std::string& bytes, const std::string& source) {
  safetensors_file file = parse_safetensors(bytes, source);
  const auto meta = [&](const char* key) -> const std::string& {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end())
      throw_input(source, fmt::format("not an attn text model: no '{}' in __metadata__", key));
    return it->second;
  };
  if (meta("format") == translation_model_format)
    throw_input(source, "is a translation model (attn translate, attn eval and attn heatmap read it), not a text model");
  if (meta("format") != model_format && meta("format") != model_format_v1)
    throw_input(source, fmt::format("unsupported model format '{}' (expected '{}')",
                                    meta("format"), model_format));
  text_model_config c;
  std::vector<std::string> outputs, input_words, new_words;
  {
    // The metadata is untrusted: each field typed and named in the message (io/json_fields).
    const io::json_fields f(source, "model config field");
    const nlohmann::json j = f.parse(meta("config"), "config");
    if (!j.is_object()) f.fail("config", "must be a JSON object");
    const std::string task = f.text(j, "task");
    const task_kind* kind = task_named(task);
    if (kind == nullptr || kind->pairs)
      f.fail("task", fmt::format("is '{}', expected next-word, classify, masked-word or lm", task));
    c.task = kind->task;
    const std::string emb = f.text(j, "embeddings");
    if (emb != "default" && emb != "stored")
      f.fail("embeddings", fmt::format("is '{}', expected default or stored", emb));
    c.embeddings = emb == "default" ? embedding_source::default_vectors : embedding_source::stored;
    c.embeddings_trained = f.boolean(j, "embeddings_trained");
    c.embed_dim = f.integer(j, "embed_dim");
    c.dim = f.integer(j, "dim");
    c.heads = f.integer(j, "heads");
    c.hidden = f.integer(j, "hidden");
    c.max_positions = f.integer(j, "max_positions");
    // Absent from version 1 files: the seeds' layer, a mean, no new words.
    const auto integer_or = [&](const char* key, int64_t fallback) {
      return f.has(j, key) ? f.integer(j, key) : fallback;
    };
    c.new_words = integer_or("new_words", 0);
    c.layers = integer_or("layers", 0);
    c.feedforward = integer_or("feedforward", 0);
    c.norm_first = f.has(j, "norm_first") && f.boolean(j, "norm_first");  // absent: post-norm
    c.dropout = f.has(j, "dropout") ? f.number(j, "dropout") : 0.0;
    c.window = integer_or("window", 0);  // absent before word windows: none
    const std::string pool = f.has(j, "pool") ? f.text(j, "pool") : std::string("mean");
    if (pool != "mean" && pool != "max" && pool != "mean+max" && pool != "attention")
      f.fail("pool", fmt::format("is '{}', expected mean, max, mean+max or attention", pool));
    c.pool = parse_pooling(pool);
    if (f.has(j, "adaptive_cutoffs")) {
      const nlohmann::json& cuts = f.at(j, "adaptive_cutoffs");
      if (!cuts.is_array()) f.fail("adaptive_cutoffs", "is not a list of integers");
      for (const nlohmann::json& v : cuts) {
        if (!v.is_number_integer()) f.fail("adaptive_cutoffs", "is not a list of integers");
        c.output_cutoffs.push_back(v.get<int64_t>());
      }
    }
    c.pieces = integer_or("pieces", 0);
    if (c.pieces != 0 && !kind_of(c.task).autoregressive)
      f.fail("pieces", fmt::format("is set on a {} model (lm only)", task_name(c.task)));
    const io::json_fields lists(source, "model metadata");
    outputs = lists.texts(lists.parse(meta("outputs"), "outputs"), "outputs");
    if (c.embeddings == embedding_source::stored)
      input_words = lists.texts(lists.parse(meta("input_words"), "input_words"), "input_words");
    if (c.new_words > 0)
      new_words = lists.texts(lists.parse(meta("new_words"), "new_words"), "new_words");
  }
  {
    // Sizes a network is built from, each named when out of range.
    const io::json_fields f(source, "model config field");
    const auto d = [](int64_t v) { return static_cast<double>(v); };
    constexpr double limit = 1 << 20;
    f.range("embed_dim", d(c.embed_dim), 1, limit);
    f.range("dim", d(c.dim), 1, limit);
    f.range("heads", d(c.heads), 1, d(c.dim));
    if (c.dim % c.heads != 0) f.fail("heads", fmt::format("is {}, which does not divide dim {}", c.heads, c.dim));
    f.range("hidden", d(c.hidden), 1, limit);
    // A language model reads its last max_positions tokens: it has no context without them.
    f.range("max_positions", d(c.max_positions), kind_of(c.task).autoregressive ? 1 : 0, limit);
    f.range("layers", d(c.layers), 0, 64);
    f.range("feedforward", d(c.feedforward), c.layers > 0 ? 1 : 0, limit);
    if (c.layers > 0 && c.dim != c.embed_dim)
      f.fail("dim", fmt::format("is {}, but encoder layers need it equal to embed_dim {}", c.dim, c.embed_dim));
    f.range("window", d(c.window), 0, 64);
    f.range("dropout", c.dropout, 0, 1);
    f.range("new_words", d(c.new_words), d(new_words.size()), d(new_words.size()));
    if (outputs.empty()) throw_input(source, "bad model metadata: 'outputs' is empty");
    // A masked-word or language model scores its output words against their embedding rows.
    if (kind_of(c.task).word_output && c.hidden != c.embed_dim)
      f.fail("hidden", fmt::format("is {}, but a {} model's hidden width must be its embedding width {}",
                                   c.hidden, task_name(c.task), c.embed_dim));
    // Every matrix the sizes make is stored in the file (bar the default vectors), so sizes whose
    // matrices hold more values than the file's tensors are damaged, and are refused before any
    // is allocated (a dim of 2^20 would ask for 2^40 values).
    double stored = 0;
    for (const auto& [name, t] : file.tensors) stored += d(t.numel());
    const auto fits = [&](const char* name, int64_t value, double values, const char* what) {
      if (values > stored)
        f.fail(name, fmt::format("is {}, which makes {} of {} values, more than the file's {} hold", value,
                                 what, values, stored));
    };
    const double e = d(c.dim), in = d(c.embed_dim);
    fits(c.embed_dim >= c.dim ? "embed_dim" : "dim", std::max(c.embed_dim, c.dim), e * in, "attention weights");
    if (c.embeddings == embedding_source::stored)
      fits("embed_dim", c.embed_dim, d(input_words.size()) * in, "an embedding table");
    fits("new_words", c.new_words, d(c.new_words) * in, "new words' rows");
    fits("layers", c.layers, d(c.layers) * 4 * e * e, "encoder layers");
    fits("feedforward", c.feedforward, d(c.layers) * 2 * d(c.feedforward) * e, "feed-forward weights");
    fits("max_positions", c.max_positions, d(c.max_positions) * in, "a position table");
    fits("window", c.window, d(c.window) * in * in, "word-window weights");
    const bool tied = kind_of(c.task).word_output;
    fits("hidden", c.hidden, d(c.hidden) * (c.pool == pooling::mean_max && !tied ? 2 * e : e), "output weights");
    if (!c.output_cutoffs.empty()) {  // c₀ < … < cₙ ≤ the output words, on a tied output
      const auto& cuts = c.output_cutoffs;
      if (!kind_of(c.task).word_output)
        f.fail("adaptive_cutoffs", fmt::format("is set on a {} model (lm and masked-word only)", task_name(c.task)));
      bool rising = true;
      for (size_t i = 1; i < cuts.size(); ++i) rising = rising && cuts[i] > cuts[i - 1];
      if (cuts.size() < 2 || !rising || cuts.front() < 1 || cuts.back() > static_cast<int64_t>(outputs.size()))
        f.fail("adaptive_cutoffs", fmt::format("must rise from 1 to at most the {} output words, at "
                                               "least two of them", outputs.size()));
    }
  }

  std::optional<vectors> defaults;
  if (c.embeddings == embedding_source::default_vectors) {
    defaults = vectors::load_default();
    if (defaults->dim() != c.embed_dim)
      io::json_fields(source, "model config field")
          .fail("embed_dim", fmt::format("is {}: the model expects {}-dimensional default vectors, this attn has {}",
                                         c.embed_dim, c.embed_dim, defaults->dim()));
    input_words.reserve(static_cast<size_t>(defaults->size()));
    for (int64_t i = 0; i < defaults->size(); ++i) input_words.emplace_back(defaults->word(i));
  }
  train::word_index in(input_words), out(outputs), learned(new_words);
  // A learned row may replace a default vector (fine-tuned), but no word has two learned rows.
  for (const std::string& w : new_words)
    if (c.embeddings == embedding_source::default_vectors) in.add_row(w);
    else in.add(w);
  // Checked before the network is sized from them: a repeated word would shrink the table.
  if (in.size() != static_cast<int64_t>(input_words.size() + new_words.size()) ||
      learned.size() != c.new_words || out.size() != static_cast<int64_t>(outputs.size()))
    throw_input(source, "bad model metadata: repeated words or labels");
  if (kind_of(c.task).word_output) {
    for (const std::string& w : outputs)
      if (in.find(w) < 0)
        throw_input(source, fmt::format("bad model metadata: output word '{}' has no embedding row", w));
  }
  // lm --pieces: the piece table, checked as a translator's is.
  text::text_tokenizer tokenizer;
  if (c.pieces > 0) {
    const std::optional<std::string> piece_bytes = io::base64_decode(meta("pieces"));
    if (!piece_bytes) throw_input(source, "the piece table (metadata 'pieces') is not base64");
    auto pieces = std::make_shared<const text::subword_pieces>(*piece_bytes, source);
    if (pieces->size() != c.pieces)
      throw_input(source, fmt::format("the piece table holds {} pieces, but the config says {}", pieces->size(), c.pieces));
    tokenizer = text::text_tokenizer(std::move(pieces));
  }
  auto m = std::make_unique<impl>(c, std::move(in), std::move(out));
  m->tokenizer = std::move(tokenizer);
  for (nn::parameter<float>* p : m->net.parameters()) {
    if (p == &m->net.trunk().embedding && defaults) {
      for (int64_t i = 0; i < defaults->size(); ++i) {
        auto row = defaults->vector(i);
        std::copy(row.begin(), row.end(), p->value.begin() + i * c.embed_dim);
      }
      continue;
    }
    train::read_parameter(file, *p, source);
  }
  if (auto it = file.metadata.find("training"); it != file.metadata.end()) m->training = it->second;
  if (auto it = file.metadata.find("history"); it != file.metadata.end())
    m->history = train::parse_history(it->second, io::json_fields(source, "model metadata field"));
  return text_model(std::move(m));
}

// A text as the model reads it (train/model_input.hpp).
using train::model_input;
using train::read_input;

prediction text_model::predict(std::string_view text, int64_t k) const {
  const impl& m = *impl_;
  const model_input in = read_input(m, text);
  if (kind_of(m.config.task).hides_words && in.mask_position < 0)
    throw_usage("a masked-word model fills a gap: write [MASK] where the word to guess goes");
  prediction p;
  p.unknown = in.unknown;
  p.tokens_used = static_cast<int64_t>(in.encoded.inputs.size());
  const nn::batch& b = in.batch;
  models::network_cache<float> cache;
  m.net.forward(b, cache);
  const auto classes = static_cast<size_t>(m.outputs.size());
  std::vector<double> probs(classes);
  const std::vector<float>& logits = cache.head().logits;
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (size_t i = 0; i < classes; ++i) sum += probs[i] = std::exp(logits[i] - top);
  std::vector<size_t> order(classes);
  std::iota(order.begin(), order.end(), size_t{0});
  // Ties go to the earlier class, so the answer never depends on the sort's whims.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b2) { return probs[a] > probs[b2]; });
  const auto count = static_cast<size_t>(std::clamp<int64_t>(k, 1, static_cast<int64_t>(classes)));
  for (size_t i = 0; i < count; ++i)
    p.top.push_back({m.outputs.words()[order[i]], probs[order[i]] / sum});
  return p;
}

training_history text_model::history() const { return impl_->history; }

attention_map text_model::attention(std::string_view text) const {
  return attention(text, attention_layers(impl_->config) - 1);
}

attention_map text_model::attention(std::string_view text, int64_t layer) const {
  const impl& m = *impl_;
  if (layer < 0 || layer >= attention_layers(m.config))
    throw_usage(fmt::format("layer {} is out of range: the model has {} layer(s)", layer,
                            attention_layers(m.config)));
  const model_input in = read_input(m, text);
  models::network_cache<float> cache;
  m.net.forward(in.batch, cache);
  // The forward keeps each head's Q and K ([1, H, L, D]) and the log-sum-exp of every row, not
  // the L×L weights; sdpa recomputes them from Q and K under the same mask and scale.
  const int64_t h = m.config.heads, l = in.batch.length, d = m.config.dim / h;
  const shape_t shape{1, h, l, d};
  sdpa_options options;
  options.causal = m.net.shape().causal;
  tensor weights;
  // That block's heads (the only one, in the seeds' model).
  const auto& a = m.config.layers == 0 ? cache.trunk().attention : cache.trunk().blocks[static_cast<size_t>(layer)].attention;
  const tensor q = tensor::view(a.q.data(), shape);
  const tensor k = tensor::view(a.k.data(), shape);
  sdpa(q, k, tensor::view(a.v.data(), shape), options, &weights);
  attention_map out;
  out.tokens = in.tokens;
  out.unknown = in.unknown;
  out.weights = weights.reshape({h, l, l});
  return out;
}

evaluation text_model::evaluate(const std::string& path, int64_t hide_every, uint64_t seed) const {
  const impl& m = *impl_;
  if (kind_of(m.config.task).autoregressive) return train::evaluate_lm(m, path);
  if (kind_of(m.config.task).hides_words) return train::evaluate_masked_words(m, path, hide_every, seed);
  const std::vector<train::text_example> examples = train::read_examples(path, m.config.task);
  if (examples.empty()) throw_input(path, "no line to score (the file is empty or blank)");
  data_summary summary;
  std::vector<train::encoded_example> encoded;
  evaluation result;
  for (const train::text_example& ex : examples) {
    train::encoded_example e =
        train::encode_example(ex, m.config.task, m.inputs, m.outputs, m.config.max_positions, summary);
    if (kind_of(m.config.task).labelled) {
      result.n += 1;
    } else {
      // Each word after the first is a next word to predict, known or not; words before a
      // model's last max_positions are not predicted from (the model reads only the window).
      const auto known = static_cast<int64_t>(std::count_if(
          ex.tokens.begin(), ex.tokens.end(), [&](const std::string& t) { return m.inputs.find(t) >= 0; }));
      const int64_t cut = m.config.max_positions > 0 ? std::max<int64_t>(0, known - m.config.max_positions) : 0;
      result.n += std::max<int64_t>(0, static_cast<int64_t>(ex.tokens.size()) - 1 - cut);
    }
    encoded.push_back(std::move(e));
  }
  const train::scored_examples s = train::score_examples(m.net, m.config.task, encoded);
  result.lines = static_cast<int64_t>(examples.size());
  result.scored = s.n;
  result.n = std::max(result.n, s.n);
  result.skipped = result.n - s.n;
  result.accuracy = result.n > 0 ? s.accuracy * static_cast<double>(s.n) / static_cast<double>(result.n) : 0.0;
  result.loss = s.loss;
  result.unknown_words = summary.unknown_words;
  return result;
}

}  // namespace attn

namespace attn::train {

nn::network_shape network_shape_for(const text_model_config& c, int64_t vocabulary,
                                    int64_t classes) {
  nn::network_shape s;
  s.vocabulary = vocabulary - c.new_words;
  s.new_words = c.new_words;
  s.embed = c.embed_dim;
  s.width = c.dim;
  s.heads = c.heads;
  s.layers = c.layers;
  s.feedforward = c.feedforward;
  s.norm_first = c.norm_first && c.layers > 0;
  s.pool = c.pool == pooling::mean ? nn::pool_kind::mean
           : c.pool == pooling::max ? nn::pool_kind::max
           : c.pool == pooling::mean_max ? nn::pool_kind::mean_max : nn::pool_kind::attention;
  s.dropout = c.dropout;
  s.hidden = c.hidden;
  s.classes = classes;
  s.positions = c.max_positions;
  s.window = c.window;
  s.causal = kind_of(c.task).causal;
  if (kind_of(c.task).word_output) {  // each token's own vector, tied output
    s.pool = nn::pool_kind::token;
    s.tied_output = true;
  }
  // Fine-tuning the default vectors trains copies of the training words' rows (new_words); the
  // table itself stays frozen.
  s.train_embeddings = c.embeddings_trained && c.embeddings == embedding_source::stored;
  return s;
}

scored_examples score_examples(const models::network<float>& net, text_task task,
                               const std::vector<encoded_example>& examples) {
  constexpr size_t batch_size = 64;
  score_tally tally;
  for (size_t begin = 0; begin < examples.size(); begin += batch_size) {
    std::vector<const encoded_example*> group;
    for (size_t i = begin; i < std::min(examples.size(), begin + batch_size); ++i)
      if (examples[i].predictions() > 0) group.push_back(&examples[i]);
    if (!group.empty()) tally.add(net, make_batch(group, task));
  }
  return tally.result();
}

void score_tally::add(const models::network<float>& net, const nn::batch& b) {
  const auto rows = static_cast<int64_t>(b.rows.size());
  if (rows == 0) return;
  const int64_t classes = net.shape().classes;
  loss_sum += static_cast<double>(net.forward(b, cache)) * static_cast<double>(rows);
  const float* logits = cache.head().logits.data();
  int64_t right = 0, top5 = 0;  // (a language model's 4k rows × 16k words)
#pragma omp parallel for reduction(+ : right, top5) if (rows * classes >= (int64_t{1} << 20))
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits + r * classes;
    const int64_t target = b.targets[static_cast<size_t>(r)];
    // The target's rank: the classes scored above it, ties before it counted as above (as
    // the argmax picks the first of equal scores). Two plain loops, which the compiler
    // vectorises (one loop with the tie rule inside took 13% of a language model's training).
    const float zt = z[target];
    int64_t above = 0;
    for (int64_t c = 0; c < target; ++c) above += z[c] >= zt ? 1 : 0;
    for (int64_t c = target + 1; c < classes; ++c) above += z[c] > zt ? 1 : 0;
    right += above == 0 ? 1 : 0;
    top5 += above < 5 ? 1 : 0;
  }
  correct += right;
  in_top5 += top5;
  n += rows;
}

scored_examples score_tally::result() const {
  scored_examples s;
  s.n = n;
  if (n > 0) {
    s.loss = loss_sum / static_cast<double>(n);
    s.accuracy = static_cast<double>(correct) / static_cast<double>(n);
    s.top5 = static_cast<double>(in_top5) / static_cast<double>(n);
  }
  return s;
}

}  // namespace attn::train
