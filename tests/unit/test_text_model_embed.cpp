// text_model::embed: each row is the model's last attention block's output for a token (the
// network's cache.trunk().y), causal for next-word models; embed_vocabulary runs each input word alone;
// a text with no known word is a usage error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/text_model.hpp"
#include "attn/train.hpp"
#include "models/network.hpp"
#include "train/dataset.hpp"
#include "train/model_input.hpp"
#include "train/text_model_impl.hpp"

namespace {

std::string data_file(const std::string& name) { return std::string(ATTN_TEST_DATA) + "/" + name; }

// Small models with learned embeddings (no embedded GloVe to load), trained briefly so their
// weights are not the initial ones: a causal next-word model with positions, and a classifier.
attn::text_model train_small(attn::text_task task, const std::string& data) {
  attn::train_options o;
  o.task = task;
  o.data = data_file(data);
  o.learn_embeddings = 12;
  o.dim = 9;
  o.heads = 3;
  o.hidden = 7;
  o.positions = task == attn::text_task::next_word;
  o.epochs = task == attn::text_task::next_word ? 20 : 1;
  o.seed = 3;
  return std::move(attn::train_text_model(o).model);
}

const attn::text_model& next_word_model() {
  static const attn::text_model m = train_small(attn::text_task::next_word, "seed003_toy.txt");
  return m;
}

const attn::text_model& classifier() {
  static const attn::text_model m = train_small(attn::text_task::classify, "negation_train.tsv");
  return m;
}

// The network's own forward on the words' ids (its cache: x [1, L, Ein] the rows + positions
// it read, y [1, L, E] the last block's output).
attn::models::network_cache<float> forward(const attn::text_model& model, const std::vector<std::string>& words) {
  const auto& m = model.internals();
  attn::train::encoded_example e;
  for (const std::string& w : words) e.inputs.push_back(m.inputs.find(w));
  attn::nn::batch b = attn::train::make_batch({&e}, attn::text_task::classify);
  attn::models::network_cache<float> cache;
  m.net.forward(b, cache);
  return cache;
}

std::vector<float> forward_y(const attn::text_model& model, const std::vector<std::string>& words) {
  return forward(model, words).trunk().y;
}

void expect_rows_are_cache_y(const attn::text_model& model, const std::string& text,
                             const std::vector<std::string>& words) {
  const attn::contextual_embedding e = model.embed(text);
  ASSERT_EQ(e.tokens, words);
  const int64_t l = static_cast<int64_t>(words.size()), dim = model.config().dim;
  ASSERT_EQ(e.embeddings.shape(), (attn::shape_t{l, dim}));
  const std::vector<float> y = forward_y(model, words);
  ASSERT_EQ(static_cast<int64_t>(y.size()), l * dim);
  // The same forward on the same ids: the same bits.
  for (int64_t i = 0; i < l * dim; ++i)
    ASSERT_EQ(e.embeddings.data()[i], y[static_cast<size_t>(i)]) << text << " at " << i;
}

TEST(text_model_embed, rows_are_the_attention_blocks_output) {
  expect_rows_are_cache_y(next_word_model(), "not like hate", {"not", "like", "hate"});
  expect_rows_are_cache_y(classifier(), "The movie was not good", {"the", "movie", "was", "not", "good"});
}

TEST(text_model_embed, unknown_words_are_left_out_and_listed) {
  const attn::contextual_embedding e = next_word_model().embed("not zzqxv like");
  EXPECT_EQ(e.tokens, (std::vector<std::string>{"not", "like"}));
  EXPECT_EQ(e.unknown, (std::vector<std::string>{"zzqxv"}));
  EXPECT_TRUE(next_word_model().knows("like"));
  EXPECT_FALSE(next_word_model().knows("zzqxv"));
}

TEST(text_model_embed, next_word_attention_is_causal_and_the_classifiers_is_not) {
  // A causal model's row t depends on tokens ≤ t only: a longer text leaves earlier rows as
  // they were. The classifier's every row sees the whole sentence.
  const auto rows_equal = [](const attn::text_model& m, const std::string& shorter,
                             const std::string& longer) {
    const attn::tensor a = m.embed(shorter).embeddings, b = m.embed(longer).embeddings;
    const int64_t n = a.numel();
    return std::equal(a.data(), a.data() + n, b.data());
  };
  EXPECT_TRUE(rows_equal(next_word_model(), "not like", "not like hate"));
  EXPECT_FALSE(rows_equal(classifier(), "the movie", "the movie was bad"));
}

TEST(text_model_embed, vocabulary_rows_are_each_word_alone) {
  const attn::text_model& m = classifier();
  const attn::vectors alone = m.embed_vocabulary();
  ASSERT_EQ(alone.size(), m.input_vocabulary());
  ASSERT_EQ(alone.dim(), m.config().dim);
  // Batches of thousands against a batch of one: the products may block differently, so
  // rounding may differ; 1e-5 relative is ~100 float32 ulps on sums of 12-18 terms.
  for (const std::string word : {"the", "not", "good", "movie"}) {
    const attn::tensor want = m.embed(word).embeddings;
    const auto got = alone.vector(*alone.find(word));
    double diff = 0, norm = 0;
    for (int64_t j = 0; j < want.numel(); ++j) {
      diff += std::pow(double(got[static_cast<size_t>(j)]) - want.data()[j], 2);
      norm += std::pow(double(want.data()[j]), 2);
    }
    EXPECT_LE(std::sqrt(diff), 1e-5 * std::sqrt(norm)) << word;
  }
}

TEST(text_model_embed, a_text_with_no_known_word_is_a_usage_error) {
  try {
    next_word_model().embed("zzqxv qqzzx");
    FAIL() << "expected an error";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
    EXPECT_NE(std::string(e.what()).find("no word of the text is known"), std::string::npos)
        << e.what();
  }
}

}  // namespace

TEST(text_model_embed, the_builtin_context_model_reads_tokens_present_or_hidden) {
  // The masked-word model embedded in the library, by name and by its own function.
  const attn::text_model m = attn::text_model::load("builtin");
  EXPECT_EQ(m.config().task, attn::text_task::masked_word);
  EXPECT_EQ(m.config().embeddings, attn::embedding_source::default_vectors);
  const attn::contextual_embedding e = m.embed("she paid the money into the bank");
  ASSERT_EQ(e.tokens.size(), 7u);
  ASSERT_EQ(e.embeddings.shape(), (attn::shape_t{7, m.config().dim}));
  // The visible reading (the default) is the network's last block output, one pass.
  expect_rows_are_cache_y(m, "she paid the money into the bank",
                          {"she", "paid", "the", "money", "into", "the", "bank"});
  const attn::text_model b = attn::text_model::builtin();
  const attn::contextual_embedding f = b.embed("she paid the money into the river");
  EXPECT_NE(e.embeddings.at({6, 0}), f.embeddings.at({6, 0}));
  // Hidden, row t never sees token t: another word in the last place leaves the last row as it is.
  const attn::contextual_embedding eh = m.embed("she paid the money into the bank", attn::token_reading::hidden);
  const attn::contextual_embedding fh = b.embed("she paid the money into the river", attn::token_reading::hidden);
  for (int64_t j = 0; j < m.config().dim; ++j)
    EXPECT_EQ(eh.embeddings.at({6, j}), fh.embeddings.at({6, j}));
  EXPECT_NE(eh.embeddings.at({5, 0}), fh.embeddings.at({5, 0}));
  const attn::tensor w = m.embed_as_words("she paid the money into the bank");
  EXPECT_EQ(w.shape(), (attn::shape_t{7, m.config().embed_dim}));
}

TEST(text_model_embed, word_rows_are_the_rows_the_model_reads) {
  // The oracle is the network's own forward: a one-token batch's input x is the word's row plus
  // position 0's. The built-in model reads the default vectors, frozen (and rows of its own for
  // frequent words they lack); the classifier fine-tuned copies of its training words' rows.
  const attn::text_model builtin = attn::text_model::builtin();
  const attn::vectors glove = attn::vectors::load_default(), builtin_rows = builtin.word_rows();
  for (const std::string word : {"the", "bank", "river"}) {
    const auto frozen = *builtin_rows.lookup(word);
    const auto want = *glove.lookup(word);
    ASSERT_TRUE(std::equal(want.begin(), want.end(), frozen.begin(), frozen.end())) << word;
  }
  for (const attn::text_model* m : {&builtin, &classifier()}) {
    const attn::vectors rows = m->word_rows();
    ASSERT_EQ(rows.dim(), m->config().embed_dim);
    ASSERT_EQ(rows.size(), m->input_vocabulary());
    EXPECT_FALSE(rows.lookup("zzqxv").has_value());
    const auto& net = m->internals().net;
    for (const std::string word : {"the", "movie", "not", "good"}) {
      const auto row = rows.lookup(word);
      ASSERT_TRUE(row.has_value()) << word;
      const attn::models::network_cache<float> cache = forward(*m, {word});
      const int64_t e = rows.dim();
      for (int64_t j = 0; j < e; ++j) {
        const float position = net.shape().positions > 0 ? net.trunk().position.value[static_cast<size_t>(j)] : 0.0f;
        ASSERT_FLOAT_EQ((*row)[static_cast<size_t>(j)] + position, cache.trunk().x[static_cast<size_t>(j)]) << word << " " << j;
      }
    }
  }
}

TEST(text_model_embed, an_inner_layer_is_the_residual_stream_a_shorter_network_ends_with) {
  // The oracle: a network of the built-in model's first k + 1 layers (the same weights) run on
  // the same ids; a pre-norm network keeps its last block's output, before the final norm, in
  // cache.trunk().stack. Layer k's rows must be those bits, visible and (row t with token t masked)
  // hidden; the last layer's are embed's default, and a layer past the last is a usage error.
  const attn::text_model m = attn::text_model::builtin();
  const auto& net = m.internals().net;
  ASSERT_TRUE(net.shape().norm_first);
  const int64_t layers = net.shape().layers, e = m.config().dim;
  ASSERT_GE(layers, 3);
  const std::vector<std::string> words = {"she", "sat", "on", "the", "bank"};
  const auto l = static_cast<int64_t>(words.size());
  const std::string text = "she sat on the bank";
  const std::string masked = "she sat on the [MASK]";
  const auto stream = [&](int64_t k, const std::vector<std::string>& ws) {
    attn::nn::network_shape shape = net.shape();
    shape.layers = k + 1;
    attn::models::network<float> first(shape);
    first.trunk().embedding.value = net.trunk().embedding.value;
    first.trunk().new_words.value = net.trunk().new_words.value;
    first.trunk().position.value = net.trunk().position.value;
    for (int64_t i = 0; i <= k; ++i) first.trunk().layers[static_cast<size_t>(i)] = net.trunk().layers[static_cast<size_t>(i)];
    first.trunk().final_norm_weight.value = net.trunk().final_norm_weight.value;
    first.trunk().final_norm_bias.value = net.trunk().final_norm_bias.value;
    attn::train::encoded_example ex;
    for (const std::string& w : ws) ex.inputs.push_back(m.internals().inputs.find(w));
    attn::nn::batch b = attn::train::make_batch({&ex}, attn::text_task::classify);
    b.rows.clear();
    b.targets.clear();
    attn::models::network_cache<float> cache;
    first.forward(b, cache);
    return cache.trunk().stack;
  };
  for (int64_t k = 0; k + 1 < layers; ++k) {
    const attn::contextual_embedding v = m.embed(text, attn::token_reading::visible, k);
    ASSERT_EQ(v.tokens, words);
    const std::vector<float> want = stream(k, words);
    ASSERT_EQ(static_cast<int64_t>(want.size()), l * e);
    for (int64_t i = 0; i < l * e; ++i) ASSERT_EQ(v.embeddings.data()[i], want[static_cast<size_t>(i)]) << k << " " << i;
    // Hidden: the last row is the masked text's at its last place.
    const attn::contextual_embedding h = m.embed(text, attn::token_reading::hidden, k);
    std::vector<std::string> with_mask = words;
    with_mask.back() = attn::train::mask_token;
    const std::vector<float> masked_stream = stream(k, with_mask);
    const attn::contextual_embedding hm = m.embed(masked, attn::token_reading::visible, k);
    for (int64_t j = 0; j < e; ++j) {
      ASSERT_EQ(h.embeddings.at({l - 1, j}), masked_stream[static_cast<size_t>((l - 1) * e + j)]) << k << " " << j;
      ASSERT_EQ(hm.embeddings.at({l - 1, j}), masked_stream[static_cast<size_t>((l - 1) * e + j)]) << k << " " << j;
    }
  }
  const attn::tensor last = m.embed(text, attn::token_reading::visible, layers - 1).embeddings;
  const attn::tensor by_default = m.embed(text).embeddings;
  ASSERT_TRUE(std::equal(last.data(), last.data() + last.numel(), by_default.data()));
  const attn::tensor inner = m.embed(text, attn::token_reading::visible, layers - 2).embeddings;
  EXPECT_FALSE(std::equal(inner.data(), inner.data() + inner.numel(), by_default.data()));
  for (const int64_t bad : {layers, int64_t{-2}}) {
    try {
      m.embed(text, attn::token_reading::visible, bad);
      FAIL() << "expected an error for layer " << bad;
    } catch (const attn::error& err) {
      EXPECT_EQ(err.kind(), attn::error_kind::usage);
      EXPECT_NE(std::string(err.what()).find("out of range"), std::string::npos) << err.what();
    }
  }
}
