// The task registry (attn/task_kind.hpp) and the model each task's shape makes (models::network, a
// thin variant over src/models/'s classifier, masked_lm and causal_lm): every task has its row and
// its name, and the network passes forward and backward to its model unchanged.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "attn/task_kind.hpp"
#include "models/network.hpp"
#include "train/text_model_impl.hpp"

namespace {

using attn::text_task;

TEST(task_kinds, every_task_has_one_row_and_its_name_finds_it) {
  std::set<std::string> names, formats;
  for (text_task t : {text_task::next_word, text_task::classify, text_task::masked_word, text_task::lm,
                      text_task::translate}) {
    const attn::task_kind& k = attn::kind_of(t);
    EXPECT_EQ(k.task, t);
    ASSERT_EQ(attn::task_named(k.name), &k);
    EXPECT_EQ(attn::task_name(t), k.name);
    names.insert(k.name);
    formats.insert(k.checkpoint_format);
  }
  EXPECT_EQ(attn::task_kinds().size(), 5u);
  EXPECT_EQ(names.size(), 5u);
  EXPECT_EQ(formats.size(), 5u);  // one task's checkpoint never resumes another
  EXPECT_EQ(attn::task_named("translation"), nullptr);
  EXPECT_EQ(attn::task_named("LM"), nullptr);  // names are exact
}

TEST(task_kinds, the_rows_agree_with_each_other) {
  for (const attn::task_kind& k : attn::task_kinds()) {
    SCOPED_TRACE(k.name);
    if (k.autoregressive) {
      EXPECT_TRUE(k.causal && k.word_output);  // generation steps a word model
    }
    if (k.hides_words) {
      EXPECT_TRUE(k.word_output && !k.causal);  // both sides of a hidden word
    }
    EXPECT_FALSE(k.labelled && k.every_prefix);
    if (k.pairs) {
      EXPECT_FALSE(k.streamed || k.labelled || k.word_output || k.causal);  // its own model, none of theirs
      continue;
    }
    EXPECT_EQ(*k.tied_head != '\0', k.word_output);  // attn train describes the other heads itself
  }
}

attn::nn::network_shape shape_for(text_task t) {
  attn::text_model_config c;
  c.task = t;
  c.embeddings = attn::embedding_source::stored;
  c.embed_dim = c.dim = c.hidden = 8;
  c.heads = 2;
  c.layers = 1;
  c.feedforward = 16;
  c.norm_first = true;
  c.max_positions = 12;
  return attn::train::network_shape_for(c, 20, t == text_task::classify ? 3 : 20);
}

// Each task's configuration makes its own model, and a forward and backward through the network
// are the model's own, bit for bit (the variant adds no arithmetic).
TEST(task_kinds, each_task_makes_its_model_and_the_network_passes_through) {
  for (const attn::task_kind& k : attn::task_kinds()) {
    SCOPED_TRACE(k.name);
    if (k.pairs) continue;  // the translator: tests/unit/test_translator.cpp
    const attn::nn::network_shape s = shape_for(k.task);
    std::vector<int64_t> rows;
    if (s.tied_output)
      for (int64_t i = 0; i < s.classes; ++i) rows.push_back(i);
    attn::models::network<double> net(s, rows);
    EXPECT_EQ(net.as<attn::models::causal_lm<double>>() != nullptr, k.autoregressive);
    EXPECT_EQ(net.as<attn::models::masked_lm<double>>() != nullptr, k.hides_words);
    EXPECT_EQ(net.as<attn::models::classifier<double>>() != nullptr, !k.word_output);

    std::mt19937 rng(3);
    std::normal_distribution<double> normal(0.0, 0.5);
    for (auto* p : net.parameters())
      for (double& x : p->value) x = normal(rng);
    attn::nn::batch b;
    b.size = 2;
    b.length = 5;
    b.ids = {1, 4, 7, 2, 9, 3, 5, 0, -1, -1};
    b.lengths = {5, 3};
    b.rows = {{0, 5}, {1, 3}};
    b.targets = {2, 1};
    if (s.pool == attn::nn::pool_kind::token) b.rows = {{0, 2}, {1, 1}};

    attn::models::network_cache<double> cache;
    const double loss = net.forward(b, cache, 0);
    net.zero_grad();
    net.backward(b, cache);
    std::vector<std::vector<double>> grads;
    for (auto* p : net.parameters()) grads.push_back(p->grad);

    // The same through the model itself, on a copy.
    attn::models::network<double> copy = net;
    copy.zero_grad();
    const auto direct = [&](auto& model, auto& model_cache) {
      EXPECT_EQ(model.forward(b, model_cache, 0), loss);
      model.backward(b, model_cache);
      EXPECT_EQ(model_cache.logits, cache.head().logits);
    };
    if (auto* m = copy.as<attn::models::classifier<double>>()) {
      attn::models::classifier_cache<double> c;
      direct(*m, c);
    } else if (auto* w = copy.as<attn::models::masked_lm<double>>()) {
      attn::models::masked_lm_cache<double> c;
      direct(*w, c);
    } else if (auto* l = copy.as<attn::models::causal_lm<double>>()) {
      attn::models::causal_lm_cache<double> c;
      direct(*l, c);
    }
    const auto params = copy.parameters();
    ASSERT_EQ(params.size(), grads.size());
    for (size_t i = 0; i < params.size(); ++i) EXPECT_EQ(params[i]->grad, grads[i]) << i;
  }
}

// A cache a classifier filled, handed to a word model, starts afresh as the word model's: its
// scores are those a fresh cache gives.
TEST(task_kinds, a_cache_moves_between_models) {
  const attn::nn::network_shape cs = shape_for(text_task::classify), ls = shape_for(text_task::lm);
  attn::models::network<double> classifier(cs), lm(ls, [&] {
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < ls.classes; ++i) rows.push_back(i);
    return rows;
  }());
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0.0, 0.5);
  for (auto* net : {&classifier, &lm})
    for (auto* p : net->parameters())
      for (double& x : p->value) x = normal(rng);
  attn::nn::batch b;
  b.size = 1;
  b.length = 4;
  b.ids = {3, 1, 4, 1};
  b.lengths = {4};
  b.rows = {{0, 4}};
  b.targets = {1};
  attn::models::network_cache<double> shared, fresh;
  classifier.forward(b, shared);
  b.rows = {{0, 3}};
  b.targets = {5};
  EXPECT_EQ(lm.forward(b, shared), lm.forward(b, fresh));
  EXPECT_EQ(shared.head().logits, fresh.head().logits);
  EXPECT_EQ(shared.trunk().y, fresh.trunk().y);
}

}  // namespace
