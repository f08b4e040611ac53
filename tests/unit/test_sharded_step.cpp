// One step's gradient computed shard by shard (src/train/sharded_step.cpp): one shard is the
// plain batch gradient bit for bit; more shards give the same gradient up to rounding (each
// shard's mean rescaled to the batch's), also when there are more shards than lines.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "models/network.hpp"
#include "train/dataset.hpp"
#include "train/lm_stream.hpp"
#include "train/masking.hpp"
#include "train/sharded_step.hpp"

namespace {

using attn::models::network;
using attn::nn::network_shape;

struct fixture {
  network_shape shape{.vocabulary = 40, .new_words = 9, .embed = 12, .width = 12, .heads = 3,
                      .pool = attn::nn::pool_kind::max, .hidden = 7, .classes = 3,
                      .train_embeddings = true, .dropout = 0.0};
  std::vector<attn::train::encoded_example> examples;
  std::vector<const attn::train::encoded_example*> group;

  fixture(const std::vector<int64_t>& lengths, attn::text_task task) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int64_t> id(0, shape.vocabulary + shape.new_words - 1);
    examples.resize(lengths.size());
    for (size_t i = 0; i < lengths.size(); ++i) {
      for (int64_t t = 0; t < lengths[i]; ++t) {
        examples[i].inputs.push_back(id(rng));
        if (task == attn::text_task::next_word)
          examples[i].outputs.push_back(examples[i].inputs.back() % shape.classes);
      }
      if (task == attn::text_task::classify) examples[i].label = static_cast<int64_t>(i % 3);
    }
    for (const auto& e : examples) group.push_back(&e);
  }

  network<float> model(bool causal) {
    network_shape s = shape;
    s.causal = causal;
    network<float> net(s);
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    for (auto* p : net.parameters())
      for (float& x : p->value) x = normal(rng);
    return net;
  }
};

// Every trainable gradient, the sparse tables' untouched rows included (they must be zero).
std::vector<std::vector<float>> grads(network<float>& net) {
  std::vector<std::vector<float>> out;
  for (auto* p : net.parameters())
    if (p->trainable) out.push_back(p->grad);
  return out;
}

void expect_close(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    double diff = 0, norm = 0;
    for (size_t j = 0; j < a[i].size(); ++j) {
      diff += (a[i][j] - b[i][j]) * (a[i][j] - b[i][j]);
      norm += b[i][j] * b[i][j];
    }
    EXPECT_LT(std::sqrt(diff), 1e-5 * std::sqrt(norm) + 1e-7) << "parameter " << i;
  }
}

TEST(sharded_step, one_shard_is_the_plain_batch_gradient_bit_for_bit) {
  for (auto task : {attn::text_task::classify, attn::text_task::next_word}) {
    fixture f({5, 1, 9, 3, 7, 2, 4}, task);
    network<float> net = f.model(task == attn::text_task::next_word);
    attn::models::network_cache<float> cache;
    const attn::nn::batch b = attn::train::make_batch(f.group, task);
    net.zero_grad();
    const float loss = net.forward(b, cache, 0);
    net.backward(b, cache);
    const auto plain = grads(net);
    const auto t = attn::train::sharded_gradients(net, f.group, task, 1, 0, nullptr, cache);
    EXPECT_EQ(grads(net), plain);
    EXPECT_EQ(t.rows, static_cast<int64_t>(b.rows.size()));
    EXPECT_EQ(t.loss_sum, static_cast<double>(loss) * static_cast<double>(b.rows.size()));
  }
}

TEST(sharded_step, shards_sum_to_the_batch_gradient) {
  for (auto task : {attn::text_task::classify, attn::text_task::next_word}) {
    // 7 lines: 2 and 3 shards of unequal rows, 9 shards with two of them empty.
    fixture f({5, 1, 9, 3, 7, 2, 4}, task);
    network<float> net = f.model(task == attn::text_task::next_word);
    attn::models::network_cache<float> cache;
    const auto whole = attn::train::sharded_gradients(net, f.group, task, 1, 0, nullptr, cache);
    const auto plain = grads(net);
    for (int64_t shards : {2, 3, 9}) {
      const auto t = attn::train::sharded_gradients(net, f.group, task, shards, 0, nullptr, cache);
      expect_close(grads(net), plain);
      EXPECT_EQ(t.rows, whole.rows) << shards << " shards";
      EXPECT_EQ(t.tokens, whole.tokens);
      EXPECT_NEAR(t.loss_sum, whole.loss_sum, 1e-5 * whole.loss_sum);
    }
  }
}

// The corpus trainer's items (here a language model's windows, the last one short) through the
// batch-maker form: one shard is the plain batch bit for bit, more shards sum to it.
TEST(sharded_step, language_model_windows_shard_as_examples_do) {
  const int64_t words = 40, width = 16;
  const network_shape s{.vocabulary = words, .new_words = 0, .embed = width, .width = width, .heads = 2,
                        .layers = 1, .feedforward = 24, .norm_first = true,
                        .pool = attn::nn::pool_kind::token, .hidden = width, .classes = words,
                        .positions = 12, .causal = true, .train_embeddings = true, .dropout = 0.0,
                        .tied_output = true};
  std::vector<int64_t> rows(static_cast<size_t>(words));
  for (int64_t i = 0; i < words; ++i) rows[static_cast<size_t>(i)] = i;
  network<float> net(s, rows);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (auto* p : net.parameters())
    for (float& x : p->value) x = normal(rng);
  std::uniform_int_distribution<int64_t> id(0, words - 1);
  std::vector<int64_t> stream;
  for (int i = 0; i < 5 * 12 + 6; ++i) stream.push_back(id(rng));
  const auto windows = attn::train::next_token_windows(stream, 12);
  std::vector<const attn::train::masked_sequence*> group;
  int64_t all_rows = 0;
  for (const auto& w : windows) {
    group.push_back(&w);
    all_rows += static_cast<int64_t>(w.positions.size());
  }
  const auto batch_of = [&](int64_t from, int64_t to) {
    return attn::train::make_masked_batch({group.begin() + from, group.begin() + to});
  };
  const auto n = static_cast<int64_t>(group.size());
  attn::models::network_cache<float> cache;
  const attn::nn::batch b = batch_of(0, n);
  net.zero_grad();
  const float loss = net.forward(b, cache, 0);
  net.backward(b, cache);
  const auto plain = grads(net);
  const auto whole = attn::train::sharded_gradients(net, n, all_rows, batch_of, 1, 0, nullptr, cache);
  EXPECT_EQ(grads(net), plain);
  EXPECT_EQ(whole.loss_sum, static_cast<double>(loss) * static_cast<double>(all_rows));
  for (int64_t shards : {2, 4, 8}) {  // 8 shards of 6 windows: two are empty
    const auto t = attn::train::sharded_gradients(net, n, all_rows, batch_of, shards, 0, nullptr, cache);
    expect_close(grads(net), plain);
    EXPECT_EQ(t.rows, all_rows) << shards << " shards";
    EXPECT_EQ(t.tokens, whole.tokens);
  }
}

// Shards run side by side on the network's copies (one per thread) leave the same bits as one
// after another, on 1, 2 and 3 threads, with dropout drawn per shard; and the copies follow the
// network's values from step to step (a copy left stale would give another gradient).
TEST(sharded_step, shards_side_by_side_give_the_bits_of_one_after_another) {
  for (auto task : {attn::text_task::classify, attn::text_task::next_word}) {
    fixture f({5, 1, 9, 3, 7, 2, 4, 6, 8}, task);
    f.shape.dropout = 0.2;
    const int threads_before = omp_get_max_threads();
    for (int64_t shards : {2, 3, 9}) {
      network<float> in_turn = f.model(task == attn::text_task::next_word);
      network<float> side_by_side = in_turn;
      attn::models::network_cache<float> cache_a, cache_b;
      attn::train::shard_copies copies;
      for (int step = 0; step < 3; ++step) {
        const uint64_t seed = 1000 + static_cast<uint64_t>(step);
        const auto a = attn::train::sharded_gradients(in_turn, f.group, task, shards, seed, nullptr, cache_a);
        omp_set_num_threads(1 + step);  // 1, 2, 3 threads
        const auto b = attn::train::sharded_gradients(side_by_side, f.group, task, shards, seed, nullptr, cache_b,
                                                      &copies);
        omp_set_num_threads(threads_before);
        EXPECT_EQ(grads(side_by_side), grads(in_turn)) << shards << " shards, step " << step;
        EXPECT_EQ(b.loss_sum, a.loss_sum);
        EXPECT_EQ(b.rows, a.rows);
        EXPECT_EQ(b.tokens, a.tokens);
        // An optimiser's step, the same on both: every trainable value moves.
        for (auto* net : {&in_turn, &side_by_side})
          for (auto* p : net->parameters())
            if (p->trainable)
              for (size_t i = 0; i < p->value.size(); ++i) p->value[i] -= 0.5f * p->grad[i] + 0.01f;
      }
      EXPECT_LE(copies.nets.size(), size_t{2});
    }
  }
}

TEST(sharded_step, shard_seeds_differ_and_shard_zero_keeps_the_steps) {
  EXPECT_EQ(attn::train::shard_seed(12345, 0), 12345u);
  EXPECT_EQ(attn::train::shard_seed(0, 3), 0u);  // no dropout stays no dropout
  EXPECT_NE(attn::train::shard_seed(12345, 1), attn::train::shard_seed(12345, 2));
  EXPECT_NE(attn::train::shard_seed(12345, 1), 0u);
}

}  // namespace
