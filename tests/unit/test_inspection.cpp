// text_model::inspect, what the page that looks inside a model draws: every layer's weights are
// attention(text, layer)'s and are softmax(scale·q·kᵀ) of its own q and k (causal for a language
// model), and the last layer's predictions are predict's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/inspection.hpp"
#include "attn/text_model.hpp"

namespace {

// softmax(scale·q·kᵀ) of one head in double precision, masked when causal.
std::vector<double> weights_from(const attn::tensor& q, const attn::tensor& k, int64_t h, double scale, bool causal) {
  const int64_t l = q.dim(1), d = q.dim(2);
  std::vector<double> w(static_cast<size_t>(l * l), 0.0);
  for (int64_t i = 0; i < l; ++i) {
    const int64_t seen = causal ? i + 1 : l;
    double top = -INFINITY, sum = 0;
    for (int64_t j = 0; j < seen; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += double(q.at({h, i, c})) * double(k.at({h, j, c}));
      w[static_cast<size_t>(i * l + j)] = scale * dot;
      top = std::max(top, scale * dot);
    }
    for (int64_t j = 0; j < seen; ++j) sum += w[static_cast<size_t>(i * l + j)] = std::exp(w[static_cast<size_t>(i * l + j)] - top);
    for (int64_t j = 0; j < seen; ++j) w[static_cast<size_t>(i * l + j)] /= sum;
  }
  return w;
}

void check_model(const attn::text_model& m, const std::string& text, bool causal) {
  const attn::model_inspection x = m.inspect(text, 5);
  ASSERT_EQ(static_cast<int64_t>(x.layers.size()), m.config().layers);
  EXPECT_EQ(x.causal, causal);
  const int64_t heads = m.config().heads, d = m.config().dim / heads;
  EXPECT_DOUBLE_EQ(x.scale, 1.0 / std::sqrt(double(d)));
  const auto l = static_cast<int64_t>(x.tokens.size());
  for (size_t layer = 0; layer < x.layers.size(); ++layer) {
    const attn::layer_inspection& y = x.layers[layer];
    EXPECT_EQ(y.q.shape(), (attn::shape_t{heads, l, d}));
    EXPECT_EQ(y.v.shape(), y.k.shape());
    const attn::attention_map a = m.attention(text, static_cast<int64_t>(layer));
    ASSERT_EQ(a.tokens, x.tokens);
    double worst_library = 0, worst_arithmetic = 0;
    for (int64_t h = 0; h < heads; ++h) {
      const std::vector<double> w = weights_from(y.q, y.k, h, x.scale, causal);
      for (int64_t i = 0; i < l; ++i)
        for (int64_t j = 0; j < l; ++j) {
          worst_library = std::max(worst_library, std::abs(double(y.weights.at({h, i, j})) - a.weights.at({h, i, j})));
          worst_arithmetic = std::max(worst_arithmetic, std::abs(double(y.weights.at({h, i, j})) - w[static_cast<size_t>(i * l + j)]));
        }
    }
    EXPECT_EQ(worst_library, 0.0) << "layer " << layer;
    // float32 scores of size ~20 carry a few 1e-6 of rounding into the weights; a wrong formula
    // (scale, mask, a head's rows) is off by far more.
    EXPECT_LT(worst_arithmetic, 1e-5) << "layer " << layer;
    ASSERT_EQ(static_cast<int64_t>(y.predictions.size()), l);
    for (const auto& top : y.predictions) {
      ASSERT_EQ(top.size(), 5u);
      EXPECT_TRUE(std::is_sorted(top.begin(), top.end(),
                                 [](const auto& p, const auto& q) { return p.probability > q.probability; }));
    }
  }
}

TEST(inspection, language_model_layers_are_causal_and_the_last_predicts_as_predict_does) {
  const attn::text_model m = attn::text_model::builtin_lm();
  const std::string text = "the history of the city begins in";
  check_model(m, text, true);
  const attn::model_inspection x = m.inspect(text, 5);
  const attn::prediction p = m.predict(text, 5);
  const auto& last = x.layers.back().predictions.back();  // after the text's last token
  for (size_t r = 0; r < 5; ++r) {
    EXPECT_EQ(last[r].label, p.top[r].label);
    EXPECT_NEAR(last[r].probability, p.top[r].probability, 1e-6);
  }
  // top = 0: the heads alone, no word read from any layer.
  const attn::model_inspection heads_only = m.inspect(text, 0);
  for (const auto& layer : heads_only.layers) EXPECT_TRUE(layer.predictions.empty());
  // Earlier layers read through the same output layer disagree with the last somewhere: in the
  // order of some position's five likeliest words.
  bool differ = false;
  const auto& first_layer = x.layers.front().predictions;
  const auto& last_layer = x.layers.back().predictions;
  ASSERT_EQ(first_layer.size(), last_layer.size());
  for (size_t t = 0; t < first_layer.size(); ++t)
    for (size_t r = 0; r < 5; ++r) differ = differ || first_layer[t][r].label != last_layer[t][r].label;
  EXPECT_TRUE(differ);
}

TEST(inspection, masked_word_model_predicts_the_hidden_word_at_its_place) {
  const attn::text_model m = attn::text_model::builtin();
  const std::string text = "he sat on the [MASK] of the river .";
  check_model(m, text, false);
  const attn::model_inspection x = m.inspect(text, 5);
  ASSERT_EQ(x.mask_position, 4);
  EXPECT_EQ(x.tokens[4], "<mask>");
  const attn::prediction p = m.predict(text, 5);
  for (size_t r = 0; r < 5; ++r) {
    EXPECT_EQ(x.layers.back().predictions[4][r].label, p.top[r].label);
    EXPECT_NEAR(x.layers.back().predictions[4][r].probability, p.top[r].probability, 1e-6);
  }
}

}  // namespace
