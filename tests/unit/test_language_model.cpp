// The language model's parts (issue #28): generation through the key-value cache against the
// network's own forward over the whole prefix, windows of the paragraph stream, and the
// tokenizer's round trip through the detokenizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>
#include <string>
#include <vector>

#include "attn/detokenize.hpp"
#include "gradient_check.hpp"
#include "attn/tokenizer.hpp"
#include "models/causal_lm.hpp"
#include "models/network.hpp"
#include "train/lm_stream.hpp"
#include "train/masking.hpp"

namespace {

using attn::models::network;
using attn::nn::network_shape;

network_shape lm_shape(int64_t layers, int64_t heads, int64_t width, int64_t positions, int64_t words) {
  return {.vocabulary = words, .new_words = 0, .embed = width, .width = width, .heads = heads,
          .layers = layers, .feedforward = 2 * width + 3, .norm_first = true,
          .pool = attn::nn::pool_kind::token, .hidden = width, .classes = words,
          .positions = positions, .causal = true, .train_embeddings = true, .dropout = 0.1,
          .tied_output = true};
}

void randomise(network<float>& net, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (auto* p : net.parameters())
    for (float& x : p->value) x = normal(rng);
}

// Each step's logits against the forward pass over the whole prefix (its last row), on awkward
// widths, head counts and lengths up to the full context; with an adaptive softmax, each word's
// log-probability (which sum to 1).
TEST(language_model, cached_generation_gives_the_logits_of_the_whole_prefix) {
  struct shape { int64_t layers, heads, width, positions, words; std::vector<int64_t> cutoffs; };
  for (const shape& sh : {shape{1, 1, 7, 9, 13, {}}, shape{2, 3, 12, 33, 65, {}}, shape{3, 4, 20, 65, 129, {}},
                          shape{2, 3, 12, 33, 65, {5, 20, 63}}, shape{1, 1, 7, 9, 13, {1, 12}}}) {
    std::mt19937 rng(static_cast<unsigned>(sh.width));
    std::vector<int64_t> rows(static_cast<size_t>(sh.words));
    for (int64_t i = 0; i < sh.words; ++i) rows[static_cast<size_t>(i)] = i;
    network<float> net(lm_shape(sh.layers, sh.heads, sh.width, sh.positions, sh.words), rows, sh.cutoffs);
    randomise(net, rng);
    std::uniform_int_distribution<int64_t> id(0, sh.words - 1);
    std::vector<int64_t> tokens(static_cast<size_t>(sh.positions));
    for (int64_t& t : tokens) t = id(rng);
    attn::models::causal_lm_decoder decoder(*net.as<attn::models::causal_lm<float>>());
    attn::models::network_cache<float> cache;
    for (int64_t n = 1; n <= sh.positions; ++n) {
      const std::vector<float> cached = decoder.step(tokens[static_cast<size_t>(n - 1)]);
      attn::nn::batch b;
      b.size = 1;
      b.length = n;
      b.ids.assign(tokens.begin(), tokens.begin() + n);
      b.lengths = {n};
      b.rows = {{0, n}};
      net.forward(b, cache);  // no dropout seed: evaluation
      float largest = 0;
      for (float z : cache.head().logits) largest = std::max(largest, std::abs(z));
      for (int64_t c = 0; c < sh.words; ++c)
        ASSERT_NEAR(cached[static_cast<size_t>(c)], cache.head().logits[static_cast<size_t>(c)], 2e-5f * std::max(1.0f, largest))
            << "width " << sh.width << " length " << n << " class " << c;
      if (sh.cutoffs.empty()) continue;
      double total = 0;
      for (float z : cached) total += std::exp(static_cast<double>(z));
      EXPECT_NEAR(total, 1.0, 1e-4) << "width " << sh.width << " length " << n;
    }
    EXPECT_THROW(decoder.step(0), std::exception);  // past the learned positions
    decoder.clear();  // starts again: the first token's logits as before
    const std::vector<float> again = decoder.step(tokens[0]);
    attn::models::causal_lm_decoder fresh(*net.as<attn::models::causal_lm<float>>());
    EXPECT_EQ(again, fresh.step(tokens[0]));
  }
}

TEST(language_model, windows_cover_the_stream_once_each_position_predicting_the_next) {
  std::vector<int64_t> stream(20);
  for (int64_t i = 0; i < 20; ++i) stream[static_cast<size_t>(i)] = 100 + i;
  for (const int64_t context : {1, 3, 7, 19, 25}) {
    const auto windows = attn::train::next_token_windows(stream, context);
    ASSERT_EQ(static_cast<int64_t>(windows.size()), attn::train::count_windows(20, context));
    int64_t next = 101;
    for (const auto& w : windows) {
      ASSERT_LE(static_cast<int64_t>(w.ids.size()), context);
      for (size_t t = 0; t < w.ids.size(); ++t) {
        EXPECT_EQ(w.ids[t] + 1, w.targets[t]);
        EXPECT_EQ(w.positions[t], static_cast<int64_t>(t));
        EXPECT_EQ(w.targets[t], next++);
      }
    }
    EXPECT_EQ(next, 120);  // every id after the first predicted exactly once
  }
}

TEST(language_model, unknown_words_are_the_unknown_token_and_paragraphs_end_with_the_end_token) {
  attn::train::word_index words({"the", "cat", attn::train::unknown_token, attn::train::end_token});
  std::vector<int64_t> stream;
  EXPECT_EQ(attn::train::append_paragraph({"the", "zebra", "cat"}, words, stream), 1);
  EXPECT_EQ(stream, (std::vector<int64_t>{0, 2, 1, 3}));
}

// tokenize(detokenize(tokens)) == tokens: the readable text reads back as the same tokens.
TEST(language_model, detokenized_text_tokenizes_back_to_the_same_tokens) {
  for (const std::string& text :
       {std::string("He said: \"I didn't see it (at all), did you?\" She's sure it's 3.14% of $5."),
        std::string("the well-known river's banks; 1,000 people -- and more!"),
        std::string("\"Quoted,\" he said. \"Again\"; then [a bracket] and {a brace}.")}) {
    const std::vector<std::string> tokens = attn::tokenize(text);
    const std::string back = attn::detokenize(tokens);
    EXPECT_EQ(attn::tokenize(back), tokens) << back;
  }
  EXPECT_EQ(attn::detokenize(attn::tokenize("he said , \" i did n't . \" then ( quietly ) left .")),
            "He said, \"I didn't.\" Then (quietly) left.");
}

}  // namespace

namespace {

// float32 gradients of the language model's network (pre-norm layers, causal fused attention,
// a loss at every position through the tied output) against the float64 specification, on
// windows that straddle the kernels' tiles; as train_model's float test, 2e-4 relative L2.
TEST(language_model, float32_gradients_match_float64) {
  struct shape { int64_t width, heads, words; std::vector<int64_t> cutoffs; };
  // each shape with the full softmax, then an adaptive one whose cuts straddle the kernels'
  // tiles (a head of one word, clusters of 2 and of 63/65/129 words)
  for (const auto& [width, heads, words, cutoffs] :
       {shape{20, 4, 61, {}}, shape{20, 4, 61, {7, 30, 59}}, shape{24, 3, 130, {}}, shape{24, 3, 130, {63, 65, 129}},
        shape{100, 4, 300, {}}, shape{100, 4, 300, {1, 100, 298}}}) {
    const network_shape s = lm_shape(2, heads, width, 130, words);
    std::vector<int64_t> rows(static_cast<size_t>(words));
    for (int64_t i = 0; i < words; ++i) rows[static_cast<size_t>(i)] = i;
    std::mt19937 rng(static_cast<unsigned>(width));
    network<double> reference(s, rows, cutoffs);
    network<float> net(s, rows, cutoffs);
    std::normal_distribution<double> normal(0.0, 0.3);
    auto params = net.parameters();
    auto ref_params = reference.parameters();
    for (size_t i = 0; i < params.size(); ++i)
      for (size_t j = 0; j < params[i]->value.size(); ++j) {
        params[i]->value[j] = static_cast<float>(normal(rng));
        ref_params[i]->value[j] = params[i]->value[j];
      }
    std::vector<int64_t> stream;
    std::uniform_int_distribution<int64_t> id(0, words - 1);
    for (int i = 0; i < 300; ++i) stream.push_back(id(rng));
    const auto windows = attn::train::next_token_windows(stream, width == 100 ? 128 : 37);
    std::vector<const attn::train::masked_sequence*> group;
    for (const auto& w : windows) group.push_back(&w);
    const attn::nn::batch b = attn::train::make_masked_batch(group);
    attn::models::network_cache<float> c32;
    attn::models::network_cache<double> c64;
    net.zero_grad();
    reference.zero_grad();
    const float loss32 = net.forward(b, c32, 0x5eedULL);
    const double loss64 = reference.forward(b, c64, 0x5eedULL);
    EXPECT_NEAR(loss32, loss64, 1e-5 * std::fabs(loss64));
    net.backward(b, c32);
    reference.backward(b, c64);
    for (const auto* p : ref_params)  // every part of the output had a gradient to check
      EXPECT_TRUE(std::any_of(p->grad.begin(), p->grad.end(), [](double g) { return g != 0; })) << p->name;
    attn::testing::expect_gradients_match(params, ref_params, 2e-4,
                                          "width " + std::to_string(width) + (cutoffs.empty() ? "" : ", adaptive"));
  }
}

}  // namespace

namespace {

// A cache reused across batches of other shapes (an epoch's last, smaller batch, then a full
// one again) must give what a fresh cache gives.
TEST(language_model, a_reused_cache_gives_a_fresh_caches_gradients) {
  const network_shape s = lm_shape(2, 4, 20, 40, 61);
  std::vector<int64_t> rows(61);
  for (int64_t i = 0; i < 61; ++i) rows[static_cast<size_t>(i)] = i;
  network<float> net(s, rows);
  std::mt19937 rng(3);
  randomise(net, rng);
  std::uniform_int_distribution<int64_t> id(0, 60);
  const auto batch_of = [&](int n, int64_t context) {
    std::vector<int64_t> stream;
    for (int i = 0; i < n; ++i) stream.push_back(id(rng));
    return attn::train::next_token_windows(stream, context);
  };
  const auto big = batch_of(120, 37), small = batch_of(30, 37);
  const auto make = [](const std::vector<attn::train::masked_sequence>& ws) {
    std::vector<const attn::train::masked_sequence*> g;
    for (const auto& w : ws) g.push_back(&w);
    return attn::train::make_masked_batch(g);
  };
  const attn::nn::batch b_big = make(big), b_small = make(small);
  const auto grads = [&](attn::models::network_cache<float>& cache) {
    net.zero_grad();
    net.forward(b_big, cache, 7);
    net.backward(b_big, cache);
    std::vector<std::vector<float>> g;
    for (auto* p : net.parameters()) g.push_back(p->grad);
    return g;
  };
  attn::models::network_cache<float> fresh, reused;
  const auto want = grads(fresh);
  net.zero_grad();
  net.forward(b_small, reused, 9);
  net.backward(b_small, reused);
  const auto got = grads(reused);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(want[i], got[i]) << net.parameters()[i]->name;
}

}  // namespace

namespace {

// A batch is its windows side by side: with a short window (the stream's end) anywhere in it,
// each parameter's gradient is the rows-weighted sum of each window's gradient alone, and each
// window's loss is its own. (The windows after a short one are where padding could leak.)
template <class T>
void check_short_window_batch(int64_t width, int64_t context, double tolerance) {
  const network_shape s = lm_shape(2, 4, width, 40, 61);
  std::vector<int64_t> rows(61);
  for (int64_t i = 0; i < 61; ++i) rows[static_cast<size_t>(i)] = i;
  network<T> net(s, rows);
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0.0, 0.3);
  for (auto* p : net.parameters())
    for (T& x : p->value) x = static_cast<T>(normal(rng));
  std::uniform_int_distribution<int64_t> id(0, 60);
  std::vector<int64_t> stream;
  for (int64_t i = 0; i < 3 * context + 20; ++i) stream.push_back(id(rng));
  const auto windows = attn::train::next_token_windows(stream, context);
  ASSERT_EQ(windows.size(), 4u);
  ASSERT_LT(windows[3].ids.size(), static_cast<size_t>(context));
  // The short window second: the windows after it sit past its padding.
  const std::vector<const attn::train::masked_sequence*> order{&windows[0], &windows[3], &windows[1], &windows[2]};
  // The cache has held a batch of full windows first, as in training (stale rows where the short
  // window's padding now is).
  std::vector<int64_t> full_stream;
  for (int64_t i = 0; i < 4 * context + 1; ++i) full_stream.push_back(id(rng));
  const auto full = attn::train::next_token_windows(full_stream, context);
  const auto grads_of = [&](const std::vector<const attn::train::masked_sequence*>& group, double* loss) {
    const attn::nn::batch b = attn::train::make_masked_batch(group);
    attn::models::network_cache<T> cache;
    std::vector<const attn::train::masked_sequence*> before;
    for (const auto& w : full) before.push_back(&w);
    const attn::nn::batch full_batch = attn::train::make_masked_batch(before);
    net.forward(full_batch, cache, 0);
    net.backward(full_batch, cache);
    net.zero_grad();
    *loss = net.forward(b, cache, 0);
    net.backward(b, cache);
    std::vector<std::vector<T>> g;
    for (auto* p : net.parameters()) g.push_back(p->grad);
    return std::pair{g, static_cast<double>(b.rows.size())};
  };
  double batch_loss = 0;
  const auto [want_all, all_rows] = grads_of(order, &batch_loss);
  std::vector<std::vector<double>> sum;
  double loss_sum = 0;
  for (const auto* w : order) {
    double loss = 0;
    const auto [g, n] = grads_of({w}, &loss);
    loss_sum += loss * n;
    if (sum.empty()) sum.assign(g.size(), {});
    for (size_t i = 0; i < g.size(); ++i) {
      sum[i].resize(g[i].size(), 0.0);
      for (size_t j = 0; j < g[i].size(); ++j) sum[i][j] += g[i][j] * n / all_rows;
    }
  }
  EXPECT_NEAR(batch_loss, loss_sum / all_rows, tolerance);
  const auto params = net.parameters();
  for (size_t i = 0; i < sum.size(); ++i) {
    double worst = 0, largest = 0;
    for (size_t j = 0; j < sum[i].size(); ++j) {
      worst = std::max(worst, std::fabs(sum[i][j] - want_all[i][j]));
      largest = std::max(largest, std::fabs(sum[i][j]));
    }
    EXPECT_LE(worst, tolerance * std::max(largest, 1.0)) << params[i]->name << " (" << sizeof(T) * 8 << "-bit)";
  }
}

TEST(language_model, a_batch_with_a_short_window_gives_each_window_its_own_gradient) {
  for (const auto& [width, context] : {std::pair{20, 37}, std::pair{100, 32}}) {
    check_short_window_batch<double>(width, context, 1e-12);
    check_short_window_batch<float>(width, context, 1e-5);
  }
}

}  // namespace
