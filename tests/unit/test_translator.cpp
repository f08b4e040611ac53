// The translator (models/translator.hpp): every parameter's gradient against finite differences in
// double (two encoder and two decoder layers, label smoothing, sentences of unequal lengths on both
// sides); the loss is plain cross-entropy at ε = 0 and a uniform model's is log V; padded source
// and target positions change nothing; float against double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gradient_check.hpp"
#include "attn/error.hpp"
#include "models/translator.hpp"
#include "nn/linear_layer.hpp"

namespace {

using attn::models::translation_batch;
using attn::models::translator;
using attn::models::translator_cache;
using attn::models::translator_shape;

const translator_shape shape{.vocabulary = 11, .width = 8, .heads = 2, .encoder_layers = 2, .decoder_layers = 2,
                             .feedforward = 12, .dropout = 0.0, .label_smoothing = 0.1};

// Two pairs: sources of 5 and 3 pieces, targets of 3 and 2 (+ </s>); −1 pads.
translation_batch pairs() {
  translation_batch b;
  b.size = 2;
  b.source_length = 5;
  b.target_length = 4;
  b.source = {4, 5, 6, 7, 3, 8, 9, 3, -1, -1};
  b.source_lengths = {5, 3};
  b.target_in = {2, 4, 9, 10, 2, 6, 5, -1};
  b.target_out = {4, 9, 10, 3, 6, 5, 3, -1};
  return b;
}

template <class T>
void randomise(translator<T>& m, std::mt19937& rng) {
  std::vector<attn::nn::parameter<T>*> all;
  m.append_parameters(all);
  for (auto* p : all) {
    const bool norm_weight = p->name.find("norm") != std::string::npos && p->name.ends_with("weight");
    for (T& v : p->value) v = static_cast<T>((norm_weight ? 1.0 : 0.0) + attn::testing::random_values(1, rng, 0.4)[0]);
  }
}

TEST(translator, every_gradient_matches_finite_differences) {
  std::mt19937 rng(3);
  translator<double> m(shape);
  randomise(m, rng);
  const translation_batch b = pairs();
  translator_cache<double> cache;
  const auto loss = [&] { return static_cast<double>(m.forward(b, cache, 0)); };
  loss();
  m.backward(b, cache);
  std::vector<attn::nn::parameter<double>*> all;
  m.append_parameters(all);
  EXPECT_EQ(all.size(), 1u + 2 * 16 + 2 + 2 * 26 + 2);
  for (auto* p : all) attn::testing::expect_gradient(p->value, p->grad, loss, p->name, 120);
}

// With dropout on the embeddings and on every sub-layer's output (residual dropout), a fixed seed
// fixes the masks: the gradients are still the loss's, and the masks do drop (the loss differs
// from evaluation's, and from another seed's).
TEST(translator, every_gradient_matches_finite_differences_with_residual_dropout) {
  std::mt19937 rng(4);
  translator_shape dropping = shape;
  dropping.dropout = 0.2;
  dropping.residual_dropout = 0.3;
  translator<double> m(dropping);
  randomise(m, rng);
  const translation_batch b = pairs();
  translator_cache<double> cache;
  const auto loss = [&] { return static_cast<double>(m.forward(b, cache, 77)); };
  const double trained = loss();
  m.backward(b, cache);
  EXPECT_EQ(cache.encoder[0].drop1.size(), 10u * 8u);
  EXPECT_EQ(cache.decoder[1].drop3.size(), 8u * 8u);
  std::vector<attn::nn::parameter<double>*> all;
  m.append_parameters(all);
  for (auto* p : all) attn::testing::expect_gradient(p->value, p->grad, loss, p->name, 120);
  translator_cache<double> other;
  EXPECT_NE(static_cast<double>(m.forward(b, other, 0)), trained);
  EXPECT_TRUE(other.decoder[0].drop1.empty());  // evaluating: no masks
  EXPECT_NE(static_cast<double>(m.forward(b, other, 78)), trained);
}

TEST(translator, loss_is_cross_entropy_without_smoothing_and_log_v_when_uniform) {
  translator_shape plain = shape;
  plain.label_smoothing = 0.0;
  translator<double> zero(plain);  // every weight zero: the layer norms' output is 0, every score 0
  translator_cache<double> cache;
  EXPECT_NEAR(zero.forward(pairs(), cache, 0), std::log(11.0), 1e-12);
  EXPECT_EQ(cache.rows.size(), 7u);  // four and three real target positions
  translator<double> smoothed(shape);  // uniform scores: smoothing changes nothing
  EXPECT_NEAR(smoothed.forward(pairs(), cache, 0), std::log(11.0), 1e-12);
}

TEST(translator, padding_changes_nothing_and_targets_see_only_their_past) {
  std::mt19937 rng(4);
  translator<double> m(shape);
  randomise(m, rng);
  translation_batch b = pairs();
  translator_cache<double> c1, c2;
  m.forward(b, c1, 0);
  b.source[8] = 7;  // the second source's padding, now a word its length leaves out
  b.source[9] = 9;
  b.target_in[7] = 8;  // the second target's padding
  m.forward(b, c2, 0);
  EXPECT_EQ(c1.logits, c2.logits);
  // changing the first target's last input word leaves its earlier positions' scores alone
  b.target_in[3] = 5;
  m.forward(b, c2, 0);
  for (size_t j = 0; j < 3 * 11; ++j) EXPECT_EQ(c1.logits[j], c2.logits[j]) << j;
  EXPECT_NE(c1.logits[3 * 11], c2.logits[3 * 11]);
}

TEST(translator, float_matches_double) {
  std::mt19937 rng(5);
  translator<double> md(shape);
  randomise(md, rng);
  translator<float> mf(shape);
  std::vector<attn::nn::parameter<double>*> pd;
  std::vector<attn::nn::parameter<float>*> pf;
  md.append_parameters(pd);
  mf.append_parameters(pf);
  for (size_t i = 0; i < pd.size(); ++i) pf[i]->value.assign(pd[i]->value.begin(), pd[i]->value.end());
  translator_cache<double> cd;
  translator_cache<float> cf;
  const double ld = md.forward(pairs(), cd, 0);
  const float lf = mf.forward(pairs(), cf, 0);
  EXPECT_NEAR(lf, ld, 1e-5 * ld);
  md.backward(pairs(), cd);
  mf.backward(pairs(), cf);
  attn::testing::expect_gradients_match(pf, pd, 1e-4, "translator");
}

TEST(translator, sinusoids_are_vaswanis) {
  EXPECT_DOUBLE_EQ(attn::models::sinusoid(0, 0, 8), 0.0);
  EXPECT_DOUBLE_EQ(attn::models::sinusoid(0, 1, 8), 1.0);
  EXPECT_DOUBLE_EQ(attn::models::sinusoid(3, 2, 8), std::sin(3.0 / std::pow(10000.0, 2.0 / 8.0)));
  EXPECT_DOUBLE_EQ(attn::models::sinusoid(3, 3, 8), std::cos(3.0 / std::pow(10000.0, 2.0 / 8.0)));
}

}  // namespace

#include "decode/beam_search.hpp"
#include "decode/translation_decoding.hpp"

namespace {

// The one-row decoder (translator_decoder) against the batched forward: the same logits at every
// target position; and beam search with beam 1 is its greedy argmax path.
TEST(translator, the_one_row_decoder_gives_forwards_logits) {
  std::mt19937 rng(8);
  translator<float> m(shape);
  randomise(m, rng);
  translation_batch b;
  b.size = 1;
  b.source_length = 4;
  b.target_length = 5;
  b.source = {5, 8, 6, 3};
  b.source_lengths = {4};
  b.target_in = {2, 4, 9, 10, 7};
  b.target_out = {4, 9, 10, 7, 3};
  translator_cache<float> cache;
  m.forward(b, cache, 0);
  const attn::models::translator_steps steps(m);
  attn::models::translator_decoder d(steps, b.source, 8);
  for (size_t t = 0; t < b.target_in.size(); ++t) {
    const std::span<const float> logits = d.step(b.target_in[t]);
    ASSERT_EQ(logits.size(), 11u);
    for (size_t j = 0; j < logits.size(); ++j)
      EXPECT_NEAR(logits[j], cache.logits[t * 11 + j], 2e-5 * (1 + std::fabs(cache.logits[t * 11 + j]))) << t << "," << j;
  }
  EXPECT_THROW(
      {
        attn::models::translator_decoder short_one(steps, b.source, 1);
        short_one.step(2);
        short_one.step(4);  // past its capacity
      },
      attn::error);
}

// A copy (beam search's hypothesis continued another way) copies only the positions read;
// stepped on from any length, across the cache's blocks of 16, it gives its original's logits.
TEST(translator, a_copied_decoder_steps_as_its_original) {
  std::mt19937 rng(21);
  translator<float> m(shape);
  randomise(m, rng);
  const std::vector<int64_t> source{5, 8, 6, 9, 3};
  const attn::models::translator_steps steps(m);
  attn::models::translator_decoder original(steps, source, 40);
  original.step(2);
  for (int64_t t = 1; t < 36; ++t) {
    attn::models::translator_decoder copy = original;
    EXPECT_TRUE(copy.logits().empty());
    EXPECT_EQ(copy.length(), original.length());
    const int64_t id = 4 + t % 7;
    const std::span<const float> a = original.step(id), b = copy.step(id);
    ASSERT_EQ(a.size(), b.size());
    for (size_t j = 0; j < a.size(); ++j) EXPECT_EQ(a[j], b[j]) << "length " << t << ", logit " << j;
  }
}

TEST(translator, beam_search_of_one_is_the_greedy_path) {
  std::mt19937 rng(9);
  translator<float> m(shape);
  randomise(m, rng);
  const std::vector<int64_t> source{5, 8, 6, 3};
  const attn::models::translator_steps steps(m);
  const attn::decode::translation_decoding model(steps, source, 12);
  const std::vector<int64_t> start{2};
  attn::decode::beam_options greedy_options;
  greedy_options.beam = 1;
  greedy_options.length_penalty = 0.0;
  greedy_options.max_tokens = 10;
  greedy_options.end = 3;
  const auto best = attn::decode::beam_search(model, start, greedy_options);
  ASSERT_EQ(best.size(), 1u);
  attn::models::translator_decoder d(steps, source, 12);
  std::span<const float> logits = d.step(2);
  std::vector<int64_t> greedy;
  for (int k = 0; k < 10; ++k) {
    const auto next = static_cast<int64_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (next == 3) break;
    greedy.push_back(next);
    logits = d.step(next);
  }
  EXPECT_EQ(best[0].tokens, greedy);
  attn::decode::beam_options wide_options = greedy_options;
  wide_options.beam = 4;
  wide_options.n_best = 3;
  wide_options.length_penalty = 1.0;
  const auto wide = attn::decode::beam_search(model, start, wide_options);
  EXPECT_EQ(wide.size(), 3u);
  EXPECT_GE(wide[0].score, wide[1].score);
}

}  // namespace

namespace {

// Beam search's hypotheses step together (one pass, each weight read once): each one's logits
// are those of stepping it alone, bit for bit (each row's sums run alone in the few-rows kernel).
TEST(translator, hypotheses_stepped_together_give_each_ones_logits) {
  std::mt19937 rng(12);
  translator<float> m(shape);
  randomise(m, rng);
  const std::vector<int64_t> source{5, 8, 6, 9, 3};
  const attn::models::translator_steps steps(m);
  attn::models::translator_decoder root(steps, source, 8);
  root.step(2);
  root.step(4);
  std::vector<attn::models::translator_decoder> together(3, root), alone(3, root);
  const std::vector<int64_t> ids{7, 9, 7};
  for (int round = 0; round < 3; ++round) {
    std::vector<attn::models::translator_decoder*> pointers{&together[0], &together[1], &together[2]};
    attn::models::translator_decoder::step_together(pointers, ids);
    for (size_t k = 0; k < 3; ++k) {
      const std::span<const float> expected = alone[k].step(ids[k]);
      ASSERT_EQ(together[k].logits().size(), expected.size());
      for (size_t j = 0; j < expected.size(); ++j)
        EXPECT_EQ(together[k].logits()[j], expected[j]) << round << "," << k << "," << j;
      EXPECT_EQ(together[k].length(), alone[k].length());
    }
  }
}

}  // namespace
