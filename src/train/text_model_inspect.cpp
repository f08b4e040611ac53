// attn::text_model::inspect: one forward over the text, and from its cache every layer's
// per-head q, k, v, the weights they make, and each layer's output read through the model's
// output layer (the "logit lens": watch the answer form layer by layer). read_as_words: the
// last layer's reading of each place through the output layer (a masked-word model's fill).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attn/error.hpp"
#include "attn/inspection.hpp"
#include "attn/sdpa.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear_layer.hpp"
#include "train/model_input.hpp"
#include "train/text_model_impl.hpp"

namespace attn {

namespace {

// [1, H, L, D] rows as the forward kept them, copied out of the cache into a tensor of their own.
tensor head_rows(const std::vector<float>& rows, int64_t h, int64_t l, int64_t d) {
  const auto n = static_cast<size_t>(h * l * d);
  return tensor({h, l, d}, std::vector<float>(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(n)));
}

// The k most likely output words for each row of logits [L, C] (ties to the lower class, as
// predict breaks them).
std::vector<std::vector<scored_label>> top_words(const std::vector<float>& logits, int64_t l, int64_t c,
                                                 const train::word_index& outputs, int64_t k) {
  std::vector<std::vector<scored_label>> out(static_cast<size_t>(l));
  const auto count = static_cast<size_t>(std::clamp<int64_t>(k, 1, c));
  std::vector<size_t> order(static_cast<size_t>(c));
  for (int64_t t = 0; t < l; ++t) {
    const float* z = logits.data() + t * c;
    const double top = *std::max_element(z, z + c);
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += std::exp(double(z[j]) - top);
    std::iota(order.begin(), order.end(), size_t{0});
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), order.end(),
                      [z](size_t a, size_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
    for (size_t i = 0; i < count; ++i)
      out[static_cast<size_t>(t)].push_back(
          {outputs.words()[order[i]], std::exp(double(z[order[i]]) - top) / sum});
  }
  return out;
}

// logits [L, classes] of rows y [L, E] that have passed the last block (and a pre-norm model's
// final layer norm), as the model's forward gives them (an adaptive softmax: each word's
// log-probability).
std::vector<float> output_logits(const text_model::impl& m, const std::vector<float>& table, const float* y,
                                 int64_t l) {
  return m.net.output().scores(y, l, table);
}

}  // namespace

std::vector<std::vector<scored_label>> text_model::read_as_words(std::string_view text, int64_t k,
                                                                 token_reading reading) const {
  const impl& m = *impl_;
  const auto* masked = m.net.as<models::masked_lm<float>>();  // the model answers, or none does
  if (masked == nullptr)
    throw_usage(fmt::format("only a masked-word model reads a word's place as output words (this one is {})",
                            task_name(m.config.task)));
  const contextual_embedding e = embed(text, reading);
  const int64_t l = e.embeddings.shape()[0];
  const std::vector<float> y(e.embeddings.values().begin(), e.embeddings.values().end());
  return top_words(masked->output.scores(y.data(), l, masked->output.table(masked->trunk)), l,
                   m.net.shape().classes, m.outputs, k);
}

model_inspection text_model::inspect(std::string_view text, int64_t top) const {
  const impl& m = *impl_;
  const train::model_input in = train::read_input(m, text);
  nn::batch b = in.batch;
  b.rows.clear();  // the token vectors alone: the output layer is applied below, to every layer
  b.targets.clear();
  models::network_cache<float> cache;
  m.net.forward(b, cache);

  const nn::network_shape& s = m.net.shape();
  const int64_t h = m.config.heads, l = b.length, d = m.config.dim / h, e = m.config.dim;
  const int64_t layers = attention_layers(m.config);
  model_inspection out;
  out.tokens = in.tokens;
  out.unknown = in.unknown;
  out.causal = s.causal;
  out.scale = 1.0 / std::sqrt(static_cast<double>(d));
  out.mask_position = in.mask_position;

  // The output layer, shared by every layer's reading: pre = x·w1ᵀ + b1, logits = pre·tableᵀ + b2.
  const bool words = s.tied_output && top > 0;  // top 0: the heads alone (an SVG needs no words)
  const std::vector<float> table = words ? m.net.output().table(m.net.trunk()) : std::vector<float>{};
  std::vector<float> normed;
  for (int64_t i = 0; i < layers; ++i) {
    const auto& a = m.config.layers == 0 ? cache.trunk().attention : cache.trunk().blocks[static_cast<size_t>(i)].attention;
    layer_inspection x;
    x.q = head_rows(a.q, h, l, d);
    x.k = head_rows(a.k, h, l, d);
    x.v = head_rows(a.v, h, l, d);
    sdpa_options options;
    options.causal = s.causal;
    tensor weights;
    sdpa(x.q.reshape({1, h, l, d}), x.k.reshape({1, h, l, d}), x.v.reshape({1, h, l, d}), options, &weights);
    x.weights = weights.reshape({h, l, l});
    if (words) {
      // The layer's output as the output layer sees the last one's: inner layers of a pre-norm
      // model through the final layer norm (the last one's y has passed it already).
      const bool last = i + 1 == layers;
      const float* y = last ? cache.trunk().y.data() : cache.trunk().between[static_cast<size_t>(i)].data();
      if (!last && s.norm_first) {
        normed.resize(static_cast<size_t>(l * e));
        std::vector<float> mean(static_cast<size_t>(l)), rstd(static_cast<size_t>(l));
        nn::layer_norm_forward(y, m.net.trunk().final_norm_weight.value.data(), m.net.trunk().final_norm_bias.value.data(),
                               normed.data(), mean.data(), rstd.data(), l, e);
        y = normed.data();
      }
      x.predictions = top_words(output_logits(m, table, y, l), l, s.classes, m.outputs, top);
    }
    out.layers.push_back(std::move(x));
  }
  return out;
}

}  // namespace attn
