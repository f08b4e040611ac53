// The translator on the one training loop (train/translation_training.hpp): a tiny translator
// learns to reverse sentences of made-up pieces through run_training_loop — the same loop, budget,
// schedule, clipping, AdamW and evaluation the text models run — and the held-out loss falls; the
// batches of an epoch cover every pair once, in an order drawn for each epoch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <span>
#include <vector>

#include "attn/error.hpp"
#include "train/translation_training.hpp"

namespace {

using namespace attn::train;

std::vector<encoded_pair> reversals(int count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<encoded_pair> pairs;
  for (int i = 0; i < count; ++i) {
    encoded_pair p;
    const int length = 2 + static_cast<int>(rng() % 4);
    for (int k = 0; k < length; ++k) p.source.push_back(4 + static_cast<int64_t>(rng() % 8));
    p.target.assign(p.source.rbegin(), p.source.rend());
    p.source.push_back(3);  // </s>
    p.target.push_back(3);
    pairs.push_back(std::move(p));
  }
  return pairs;
}

double held_out_loss(const attn::models::translator<float>& m, const std::vector<encoded_pair>& valid) {
  std::vector<int64_t> all(valid.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  attn::models::translator_cache<float> cache;
  return m.forward(make_translation_batch(valid, all), cache, 0);
}

TEST(translation_training, a_translator_learns_on_the_one_loop) {
  const std::vector<encoded_pair> train = reversals(240, 1), valid = reversals(40, 2);
  attn::models::translator<float> model({.vocabulary = 12, .width = 32, .heads = 2, .encoder_layers = 1,
                                         .decoder_layers = 1, .feedforward = 64, .dropout = 0.0,
                                         .label_smoothing = 0.1});
  rng r(3);
  initialise(model, r);
  const double before = held_out_loss(model, valid);

  attn::train_options o;
  o.lr = 3e-3;
  o.epochs = 12;
  o.seed = 4;
  translator_trainable trainable(model);
  translation_batches source(train, 300, o.seed);
  task_evaluation eval;
  eval.validating = true;
  eval.held_out = [&] { return scored_examples{.loss = held_out_loss(model, valid), .n = 40}; };
  eval.improves = [](const scored_examples& sc, const scored_examples& best) { return best.n == 0 || sc.loss < best.loss; };
  eval.patience = false;
  const loop_budget budget = plan_budget(o, source.part_steps()[0], {});
  attn::train_result result;
  run_training_loop(o, {}, trainable, [] { return std::string(); }, source, eval, budget, {}, 240, result);
  const double after = held_out_loss(model, valid);
  EXPECT_EQ(result.epochs.size(), 12u);
  EXPECT_LT(after, 0.6 * before) << "held-out loss " << before << " → " << after;
  EXPECT_GT(result.trained_tokens, 0);
}

// --shards: a batch cut into shards, each shard's gradient scaled to the batch's mean and summed
// in shard order, is the whole batch's gradient (up to the sums' rounding), for any cut.
TEST(translation_training, sharded_gradients_are_the_batch_gradient) {
  const std::vector<encoded_pair> pairs = reversals(23, 5);
  attn::models::translator<float> model({.vocabulary = 12, .width = 16, .heads = 2, .encoder_layers = 1,
                                         .decoder_layers = 1, .feedforward = 24, .dropout = 0.0,
                                         .label_smoothing = 0.1});
  rng r(6);
  initialise(model, r);
  translator_trainable trainable(model);
  std::vector<int64_t> indices(pairs.size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>(i);
  step_batch b;
  b.items = static_cast<int64_t>(pairs.size());
  for (const encoded_pair& p : pairs) b.rows += static_cast<int64_t>(p.target.size());
  b.translation = [&](int64_t begin, int64_t end) {
    return make_translation_batch(pairs, std::span<const int64_t>(indices).subspan(static_cast<size_t>(begin),
                                                                                   static_cast<size_t>(end - begin)));
  };
  const auto grads = [&] {
    std::vector<std::vector<float>> g;
    for (auto* p : trainable.parameters()) g.push_back(p->grad);
    return g;
  };
  const step_totals whole = trainable.gradients(b, 1, nullptr);
  const std::vector<std::vector<float>> expected = grads();
  for (const int64_t shards : {2, 3, 7}) {
    SCOPED_TRACE(shards);
    const step_totals t = trainable.gradients(b, shards, nullptr);
    EXPECT_EQ(t.rows, whole.rows);
    EXPECT_EQ(t.tokens, whole.tokens);
    EXPECT_NEAR(t.loss_sum, whole.loss_sum, 1e-4 * whole.loss_sum);
    const std::vector<std::vector<float>> got = grads();
    double worst = 0, largest = 0;
    for (size_t k = 0; k < got.size(); ++k)
      for (size_t i = 0; i < got[k].size(); ++i) {
        worst = std::max(worst, std::fabs(static_cast<double>(got[k][i]) - expected[k][i]));
        largest = std::max(largest, std::fabs(static_cast<double>(expected[k][i])));
      }
    EXPECT_LT(worst, 1e-5 * largest);
    EXPECT_GT(largest, 1e-3);  // (a gradient to compare)
  }
}

TEST(translation_training, each_epoch_covers_every_pair_once_in_its_own_order) {
  const std::vector<encoded_pair> pairs = reversals(100, 5);
  translation_batches source(pairs, 60, 9);
  const int64_t steps = source.part_steps()[0];
  std::vector<std::vector<int64_t>> orders;
  for (int64_t epoch = 1; epoch <= 2; ++epoch) {
    ASSERT_EQ(source.begin_part(epoch, 0, false), steps);
    std::multiset<int64_t> rows_seen;
    std::vector<int64_t> order;
    int64_t rows = 0;
    for (int64_t i = 0; i < steps; ++i) {
      const step_batch b = source.batch(i, (epoch - 1) * steps + i);
      const attn::models::translation_batch t = b.translation(0, b.items);
      EXPECT_EQ(t.size, b.items);
      EXPECT_NE(b.dropout_seed, 0u);
      rows += b.rows;
      order.push_back(t.source[0]);
    }
    int64_t all = 0;
    for (const encoded_pair& p : pairs) all += static_cast<int64_t>(p.target.size());
    EXPECT_EQ(rows, all);
    orders.push_back(order);
  }
  EXPECT_NE(orders[0], orders[1]);
}

TEST(translation_training, starting_weights_are_xavier_with_a_normal_embedding_and_repeat_by_seed) {
  const attn::models::translator_shape shape{.vocabulary = 500, .width = 64, .heads = 4, .encoder_layers = 2,
                                             .decoder_layers = 2, .feedforward = 256};
  attn::models::translator<float> a(shape), b(shape);
  rng ra(7), rb(7);
  initialise(a, ra);
  initialise(b, rb);
  std::vector<attn::nn::parameter<float>*> pa, pb;
  a.append_parameters(pa);
  b.append_parameters(pb);
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_EQ(pa[i]->value, pb[i]->value) << pa[i]->name;
  for (auto* p : pa) {
    double sum = 0, squares = 0, largest = 0;
    for (float v : p->value) {
      sum += v;
      squares += double(v) * v;
      largest = std::max(largest, std::fabs(double(v)));
    }
    const double n = double(p->value.size()), variance = squares / n - (sum / n) * (sum / n);
    if (p->shape.size() == 1) {
      const bool norm_weight = p->name.find(".norm") != std::string::npos && p->name.ends_with(".weight");
      EXPECT_EQ(largest, norm_weight ? 1.0 : 0.0) << p->name;
    } else if (p->name == "embedding.weight") {
      EXPECT_NEAR(variance, 1.0 / 64, 0.1 / 64) << p->name;
    } else {  // uniform on ±b: variance b²/3 = 2 / (fan_in + fan_out)
      const double bound = std::sqrt(6.0 / double(p->shape[0] + p->shape[1]));
      EXPECT_LE(largest, bound) << p->name;
      EXPECT_NEAR(variance, bound * bound / 3, 0.1 * bound * bound / 3) << p->name;
    }
  }
}

}  // namespace
