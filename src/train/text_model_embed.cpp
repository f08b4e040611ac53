// attn::text_model's contextual embeddings: the output of the model's (last) attention block for
// each token, read from the forward's cache before the mean pool.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "attn/error.hpp"
#include "nn/linear_layer.hpp"
#include "train/model_input.hpp"
#include "train/text_model_impl.hpp"

namespace attn {

namespace {

// Encoder layer `layer`'s output in a forward's cache: the last one's is y (after a pre-norm
// model's final layer norm); an inner one's is the residual stream it hands to the next layer,
// as it is (what PyTorch's and Hugging Face's hidden_states give).
const std::vector<float>& layer_output(const text_model::impl& m, const models::network_cache<float>& cache,
                                       int64_t layer) {
  const int64_t last = attention_layers(m.config) - 1;
  return layer < 0 || layer == last ? cache.trunk().y : cache.trunk().between[static_cast<size_t>(layer)];
}

// The cloze reading of a masked-word model: one sequence per token, that token replaced by the
// mask token, all in one batch; row t is sequence t's output at t (what the context says
// belongs there, with nothing of the word itself).
std::vector<float> hidden_readings(const text_model::impl& m, const nn::batch& text, int64_t layer) {
  const int64_t l = text.length, e = m.config.dim;
  const int64_t mask = m.inputs.find(train::mask_token);
  nn::batch b;
  b.size = l;
  b.length = l;
  b.lengths.assign(static_cast<size_t>(l), l);
  for (int64_t t = 0; t < l; ++t) {
    b.ids.insert(b.ids.end(), text.ids.begin(), text.ids.begin() + l);
    b.ids[static_cast<size_t>(t * l + t)] = mask;
  }
  // No rows: only the layer's output is read (the output head is not run).
  models::network_cache<float> cache;
  m.net.forward(b, cache);
  const std::vector<float>& rows = layer_output(m, cache, layer);
  std::vector<float> out(static_cast<size_t>(l * e));
  for (int64_t t = 0; t < l; ++t)
    std::copy_n(rows.begin() + (t * l + t) * e, e, out.begin() + t * e);
  return out;
}

}  // namespace

contextual_embedding text_model::embed(std::string_view text, token_reading reading) const {
  return embed(text, reading, -1);
}

contextual_embedding text_model::embed(std::string_view text, token_reading reading, int64_t layer) const {
  const impl& m = *impl_;
  const int64_t layers = attention_layers(m.config);
  if (layer < -1 || layer >= layers)
    throw_usage(fmt::format("layer {} is out of range: the model has {} layer{} (0 … {})", layer, layers,
                            layers == 1 ? "" : "s", layers - 1));
  if (reading == token_reading::hidden && !kind_of(m.config.task).hides_words)
    throw_usage(fmt::format("the hidden-token reading needs a masked-word model (this one is {})",
                            task_name(m.config.task)));
  const train::model_input in = train::read_input(m, text);
  if (reading == token_reading::hidden) {
    contextual_embedding out;
    out.tokens = in.tokens;
    out.unknown = in.unknown;
    out.embeddings = tensor({in.batch.length, m.config.dim}, hidden_readings(m, in.batch, layer));
    return out;
  }
  nn::batch tokens_only = in.batch;
  tokens_only.rows.clear();  // only the layer's output is read: the output head is not run
  tokens_only.targets.clear();
  models::network_cache<float> cache;
  m.net.forward(tokens_only, cache);
  // [1, L, E]: the layer's output (the last's by default). For next-word and lm models the
  // attention is causal, so row t has seen tokens 0 … t only, as when the model predicts from
  // prefix t.
  const std::vector<float>& rows = layer_output(m, cache, layer);
  const int64_t l = in.batch.length, e = m.config.dim;
  contextual_embedding out;
  out.tokens = in.tokens;
  out.unknown = in.unknown;
  out.embeddings = tensor({l, e}, std::vector<float>(rows.begin(), rows.begin() + l * e));
  return out;
}

tensor text_model::embed_as_words(std::string_view text, token_reading reading) const {
  const impl& m = *impl_;
  const auto* masked = m.net.as<models::masked_lm<float>>();  // the model answers, or none does
  if (masked == nullptr) throw_usage("only a masked-word model maps its readings to the word vectors' space");
  const contextual_embedding e = embed(text, reading);
  const int64_t l = e.embeddings.shape()[0], in = m.config.embed_dim;
  const std::vector<float> y(e.embeddings.values().begin(), e.embeddings.values().end());
  return tensor({l, in}, masked->output.transform(y.data(), l));
}

namespace {

// Each input word once, at the row it reads (a fine-tuned or learned word's own row, not the
// default vector it replaces): the words and their rows, in input order.
struct input_words {
  std::vector<std::string> names;
  std::vector<int64_t> rows;
};

input_words distinct_input_words(const train::word_index& inputs) {
  input_words out;
  for (int64_t i = 0; i < inputs.size(); ++i) {
    const std::string& w = inputs.words()[static_cast<size_t>(i)];
    if (inputs.find(w) != i) continue;  // the default vector a learned row replaces
    out.names.push_back(w);
    out.rows.push_back(i);
  }
  return out;
}

}  // namespace

vectors text_model::embed_vocabulary() const {
  const impl& m = *impl_;
  auto [names, rows] = distinct_input_words(m.inputs);
  const auto words = static_cast<int64_t>(rows.size());
  const int64_t e = m.config.dim;
  // A batch of one-token sequences per forward. 256 keeps the cache small and, at E = 100,
  // every product under serial_when_small's threshold: the 50,000 default words took 0.23 s on
  // the shared 2-core machine this way (and with one thread at any chunk size), but 0.5-3.8 s
  // in chunks of 512-8192, whose products went to two busy cores.
  constexpr int64_t chunk = 256;
  std::vector<float> values(static_cast<size_t>(words * e));
  models::network_cache<float> cache;
  nn::batch b;
  b.length = 1;
  for (int64_t begin = 0; begin < words; begin += chunk) {
    const int64_t n = std::min(chunk, words - begin);
    b.size = n;
    b.ids.resize(static_cast<size_t>(n));
    std::copy_n(rows.begin() + begin, n, b.ids.begin());
    b.lengths.assign(static_cast<size_t>(n), 1);
    // No rows: only the trunk's y is read (the output head is not run).
    m.net.forward(b, cache);
    std::copy(cache.trunk().y.begin(), cache.trunk().y.begin() + n * e, values.begin() + begin * e);
  }
  return vectors::from_values(std::move(names), e, std::move(values));
}

vectors text_model::word_rows() const {
  const impl& m = *impl_;
  const nn::network_shape& s = m.net.shape();
  const int64_t e = s.embed;
  auto [names, rows] = distinct_input_words(m.inputs);
  std::vector<float> values;
  values.reserve(rows.size() * static_cast<size_t>(e));
  for (const int64_t i : rows) {
    // Row i: the table's, or past it one of the rows learned for new words (as the forward reads ids).
    const float* row = i < s.vocabulary ? m.net.trunk().embedding.value.data() + i * e
                                        : m.net.trunk().new_words.value.data() + (i - s.vocabulary) * e;
    values.insert(values.end(), row, row + e);
  }
  return vectors::from_values(std::move(names), e, std::move(values));
}

text_window text_model::window(std::string_view text) const {
  const train::model_input in = train::read_input(*impl_, text);
  return {in.text_tokens, in.batch.length};
}

bool text_model::knows(std::string_view token) const {
  return impl_->inputs.find(std::string(token)) >= 0;
}

std::vector<std::string> text_model::tokens(std::string_view text) const { return impl_->tokenizer.tokens(text); }

}  // namespace attn
