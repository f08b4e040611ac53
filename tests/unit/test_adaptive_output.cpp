// The adaptive softmax on the tied output (nn/adaptive_output.hpp): its probabilities against a
// direct double computation of p_head · p_cluster, its gradients against finite differences
// (the whole language model in double). (float32 against float64, and the decoder's cached
// log-probabilities against the forward: language_model's tests, with both outputs.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gradient_check.hpp"
#include "nn/adaptive_output.hpp"
#include "models/network.hpp"
#include "train/lm_stream.hpp"
#include "train/masking.hpp"

namespace {

using attn::nn::adaptive_cuts;
using attn::models::network;
using attn::nn::network_shape;

network_shape lm_shape(int64_t layers, int64_t heads, int64_t width, int64_t positions, int64_t words,
                       bool train_table = true) {
  return {.vocabulary = words, .new_words = 0, .embed = width, .width = width, .heads = heads,
          .layers = layers, .feedforward = 2 * width + 3, .norm_first = true,
          .pool = attn::nn::pool_kind::token, .hidden = width, .classes = words,
          .positions = positions, .causal = true, .train_embeddings = train_table, .dropout = 0.1,
          .tied_output = true};
}

std::vector<int64_t> identity_rows(int64_t n) {
  std::vector<int64_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = i;
  return rows;
}

template <class T>
void randomise(network<T>& net, std::mt19937& rng, double scale) {
  std::normal_distribution<double> normal(0.0, scale);
  for (auto* p : net.parameters())
    for (T& x : p->value) x = static_cast<T>(normal(rng));
}

attn::nn::batch stream_batch(int64_t words, int64_t tokens, int64_t context, std::mt19937& rng,
                             std::vector<attn::train::masked_sequence>& windows) {
  std::vector<int64_t> stream;
  std::uniform_int_distribution<int64_t> id(0, words - 1);
  for (int64_t i = 0; i < tokens; ++i) stream.push_back(id(rng));
  windows = attn::train::next_token_windows(stream, context);
  std::vector<const attn::train::masked_sequence*> group;
  for (const auto& w : windows) group.push_back(&w);
  return attn::train::make_masked_batch(group);
}

// A language model's batch (`tokens` random ids below `words`, windows of 7), run forward with
// dropout's seed and backward: net's grads are then its loss's gradient.
attn::nn::batch take_gradients(network<double>& net, int64_t words, int64_t tokens, std::mt19937& rng,
                               std::vector<attn::train::masked_sequence>& windows) {
  attn::nn::batch b = stream_batch(words, tokens, 7, rng, windows);
  attn::models::network_cache<double> cache;
  net.zero_grad();
  net.forward(b, cache, 0x5eedULL);
  net.backward(b, cache);
  return b;
}

TEST(adaptive_output, places_classes_in_the_head_or_their_cluster) {
  const adaptive_cuts cuts{{3, 7, 11}, 13};  // head: 0 1 2, 11 12, tokens of [3, 7) and [7, 11)
  EXPECT_EQ(cuts.clusters(), 2);
  EXPECT_EQ(cuts.head(), 3 + 2 + 2);
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> want{
      {0, -1, 0}, {2, -1, 2}, {3, 0, 5}, {6, 0, 5}, {7, 1, 6}, {10, 1, 6}, {11, -1, 3}, {12, -1, 4}};
  for (const auto& [c, cluster, head] : want) {
    EXPECT_EQ(cuts.cluster_of(c), cluster) << c;
    EXPECT_EQ(cuts.head_index(c), head) << c;
  }
}

// Each class's log-probability (what predict, eval and generation read) against p_head · p_cluster
// computed directly in double from the same scores, and the training loss against −log p(target).
TEST(adaptive_output, log_probabilities_are_head_times_cluster_and_the_loss_matches) {
  for (const auto& cut_list : {std::vector<int64_t>{4, 9, 15}, std::vector<int64_t>{1, 2, 17}, std::vector<int64_t>{16, 17}}) {
    const int64_t classes = 17, width = 7, rows = 65;
    const adaptive_cuts cuts{cut_list, classes};
    const int64_t k_count = cuts.clusters();
    std::mt19937 rng(static_cast<unsigned>(cut_list.front()));
    const auto hidden = attn::testing::random_values(static_cast<size_t>(rows * width), rng);
    const auto table = attn::testing::random_values(static_cast<size_t>(classes * width), rng, 0.5);
    const auto bias = attn::testing::random_values(static_cast<size_t>(classes), rng);
    const auto tokens = attn::testing::random_values(static_cast<size_t>(k_count * width), rng, 0.5);
    const auto token_bias = attn::testing::random_values(static_cast<size_t>(k_count), rng);
    std::vector<int64_t> targets(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) targets[static_cast<size_t>(r)] = (r * 5 + 3) % classes;
    const auto dot = [&](const double* a, const double* b) {
      double s = 0;
      for (int64_t j = 0; j < width; ++j) s += a[j] * b[j];
      return s;
    };
    std::vector<double> scores(static_cast<size_t>(rows * classes)), token_scores(static_cast<size_t>(rows * k_count));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < classes; ++c)
        scores[static_cast<size_t>(r * classes + c)] = dot(&hidden[static_cast<size_t>(r * width)], &table[static_cast<size_t>(c * width)]) + bias[static_cast<size_t>(c)];
      for (int64_t k = 0; k < k_count; ++k)
        token_scores[static_cast<size_t>(r * k_count + k)] = dot(&hidden[static_cast<size_t>(r * width)], &tokens[static_cast<size_t>(k * width)]) + token_bias[static_cast<size_t>(k)];
    }
    std::vector<double> log_p = scores;
    attn::nn::adaptive_log_probabilities(log_p.data(), token_scores.data(), rows, cuts);
    double expected_loss = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const double* z = &scores[static_cast<size_t>(r * classes)];
      const double* t = &token_scores[static_cast<size_t>(r * k_count)];
      double head_sum = 0;  // the head: classes before the first cut and after the last, the tokens
      for (int64_t c = 0; c < classes; ++c)
        if (c < cut_list.front() || c >= cut_list.back()) head_sum += std::exp(z[c]);
      for (int64_t k = 0; k < k_count; ++k) head_sum += std::exp(t[k]);
      double total = 0;
      for (int64_t c = 0; c < classes; ++c) {
        double p;
        if (c < cut_list.front() || c >= cut_list.back()) {
          p = std::exp(z[c]) / head_sum;
        } else {
          const int64_t k = std::upper_bound(cut_list.begin(), cut_list.end(), c) - cut_list.begin() - 1;
          double cluster_sum = 0;
          for (int64_t j = cut_list[static_cast<size_t>(k)]; j < cut_list[static_cast<size_t>(k + 1)]; ++j) cluster_sum += std::exp(z[j]);
          p = std::exp(t[k]) / head_sum * std::exp(z[c]) / cluster_sum;
        }
        total += p;
        ASSERT_NEAR(log_p[static_cast<size_t>(r * classes + c)], std::log(p), 1e-12) << "row " << r << " class " << c;
      }
      EXPECT_NEAR(total, 1.0, 1e-12);
      expected_loss -= log_p[static_cast<size_t>(r * classes + targets[static_cast<size_t>(r)])];
    }
    attn::nn::adaptive_output_cache<double> cache;
    const double loss = attn::nn::adaptive_output_forward(hidden.data(), table.data(), bias.data(), tokens.data(),
                                                          token_bias.data(), targets.data(), rows, width, cuts, cache);
    EXPECT_NEAR(loss, expected_loss / static_cast<double>(rows), 1e-12);
    // float32's vectorised exponential: the same distribution to float precision
    std::vector<float> log_p32(scores.begin(), scores.end()), token32(token_scores.begin(), token_scores.end());
    attn::nn::adaptive_log_probabilities(log_p32.data(), token32.data(), rows, cuts);
    for (size_t i = 0; i < log_p.size(); ++i) ASSERT_NEAR(log_p32[i], log_p[i], 2e-5 * std::max(1.0, std::fabs(log_p[i])));
  }
}

// The whole language model with an adaptive output, in double, against finite differences: the
// cluster tokens, the table rows (head and clusters), the biases and every layer.
TEST(adaptive_output, language_model_gradients_match_finite_differences) {
  for (const bool train_table : {true, false}) {
    network_shape s = lm_shape(1, 2, 6, 7, 13, train_table);
    std::mt19937 rng(train_table ? 31 : 32);
    network<double> net(s, identity_rows(13), {3, 7, 11});
    randomise(net, rng, 0.5);
    std::vector<attn::train::masked_sequence> windows;
    const attn::nn::batch b = take_gradients(net, 13, 20, rng, windows);
    const auto loss = [&] {
      attn::models::network_cache<double> c;
      return net.forward(b, c, 0x5eedULL);
    };
    attn::testing::expect_network_gradients(net, loss);
    // evaluating (no seed, no dropout) gives each class's log-probability and the same loss as −log p
    attn::models::network_cache<double> eval;
    const double eval_loss = net.forward(b, eval);
    double sum = 0;
    for (size_t r = 0; r < b.rows.size(); ++r) sum -= eval.head().logits[r * 13 + static_cast<size_t>(b.targets[r])];
    EXPECT_NEAR(eval_loss, sum / static_cast<double>(b.rows.size()), 1e-12);
  }
}

// A frozen table with learned words among the output classes (the built-in context model's
// case): backward computes only the learned classes' rows of the table's gradient. Learned words
// in the head, in each cluster and after the last cut, against finite differences.
TEST(adaptive_output, learned_rows_of_a_frozen_table_get_their_gradient_alone) {
  network_shape s = lm_shape(1, 2, 6, 7, 9, /*train_table=*/false);
  s.new_words = 4;
  s.classes = 13;
  // Classes 1 (head), 4 (first cluster), 8 (second), 12 (after the last cut) are learned words.
  const std::vector<int64_t> rows{0, 9, 1, 2, 10, 3, 4, 5, 11, 6, 7, 8, 12};
  std::mt19937 rng(33);
  network<double> net(s, rows, {3, 7, 11});
  randomise(net, rng, 0.5);
  std::vector<attn::train::masked_sequence> windows;
  // Inputs among the table's words only (ids below 9), so the learned rows' gradient is the
  // output's alone; the targets (the next inputs) reach the head and both clusters.
  const attn::nn::batch b = take_gradients(net, 9, 40, rng, windows);
  for (int64_t w = 0; w < s.new_words; ++w) {  // each learned row was reached by the output
    double norm = 0;
    for (int64_t j = 0; j < s.embed; ++j) norm += std::fabs(net.trunk().new_words.grad[static_cast<size_t>(w * s.embed + j)]);
    EXPECT_GT(norm, 0.0) << "learned word " << w;
  }
  attn::testing::expect_network_gradients(net, [&] {
    attn::models::network_cache<double> c;
    return net.forward(b, c, 0x5eedULL);
  });
}

}  // namespace

// The tied output's table[output_rows] is gathered in full once per cache when the table is
// frozen, and only the learned words' rows again on later forwards: a cache reused after those
// rows move, or by another network (another frozen table), must score as a fresh cache does.
TEST(adaptive_output, a_reused_cache_sees_moved_learned_rows_and_another_table) {
  for (const bool adaptive : {false, true}) {
    const int64_t words = 23, width = 8;
    network_shape s = lm_shape(1, 2, width, 0, words, /*train_table=*/false);
    s.new_words = 4;
    s.dropout = 0;
    // Output classes: table words and learned words mixed.
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < words; i += 2) rows.push_back(i);
    for (int64_t i = 0; i < s.new_words; ++i) rows.push_back(words + i);
    s.classes = static_cast<int64_t>(rows.size());
    const std::vector<int64_t> cuts = adaptive ? std::vector<int64_t>{5, 10} : std::vector<int64_t>{};
    network<float> net(s, rows, cuts);
    std::mt19937 rng(41);
    randomise(net, rng, 0.5);
    std::vector<attn::train::masked_sequence> windows;
    // Tokens (and so targets, the next tokens) among the output classes.
    attn::nn::batch b = stream_batch(s.classes, 40, 9, rng, windows);
    const auto score = [&](const network<float>& n, attn::models::network_cache<float>& c) {
      const float loss = n.forward(b, c);
      return std::make_pair(loss, c.head().logits);
    };
    attn::models::network_cache<float> reused;
    score(net, reused);
    for (float& x : net.trunk().new_words.value) x += 0.25f;  // an optimiser step on the learned rows
    attn::models::network_cache<float> fresh;
    EXPECT_EQ(score(net, reused), score(net, fresh)) << adaptive;
    network<float> other = net;  // another network, another frozen table
    for (float& x : other.trunk().embedding.value) x = -x;
    attn::models::network_cache<float> fresh_other;
    EXPECT_EQ(score(other, reused), score(other, fresh_other)) << adaptive;
    EXPECT_NE(score(other, fresh_other), score(net, fresh)) << adaptive;  // the change shows
  }
}
