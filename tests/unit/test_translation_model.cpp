// The translation model (attn/translation_model.hpp): beam search over a tiny translator's cached
// decoder is exhaustive search over every target scored by full recomputation (the translator run
// whole on each target, no cache); the model file round-trips bit for bit and translates the same;
// a damaged piece table, a wrong format or a missing tensor is one input error; many sentences
// translate as each alone; base64 round-trips and refuses what is not base64.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "attn/error.hpp"
#include "attn/safetensors.hpp"
#include "attn/translation_model.hpp"
#include "decode/beam_search.hpp"
#include "decode/translation_decoding.hpp"
#include "io/base64.hpp"
#include "text/subword_pieces.hpp"
#include "train/rng.hpp"
#include "train/translation_model_impl.hpp"
#include "train/translation_training.hpp"

namespace {

using attn::translation_model;

// A translator over a tiny piece model learned from a few sentences, weights drawn by the seed.
translation_model tiny_model(uint64_t seed, int64_t pieces = 40) {
  std::vector<std::string> text;
  for (const char* s : {"ein Mann fährt Rad", "a man rides a bike", "zwei Hunde spielen", "two dogs play",
                        "eine Frau liest ein Buch", "a woman reads a book"})
    for (int i = 0; i < 3; ++i) text.emplace_back(s);
  attn::text::subword_pieces p(attn::text::learn_pieces(text, {.vocabulary = pieces}));
  attn::translation_config c{.vocabulary = p.size(), .width = 16, .heads = 2, .encoder_layers = 2, .decoder_layers = 1,
                             .feedforward = 24, .dropout = 0.1, .label_smoothing = 0.1, .max_length = 64};
  auto m = std::make_unique<translation_model::impl>(c, std::move(p));
  attn::train::rng r(seed);
  attn::train::initialise(m->net, r);
  return translation_model(std::move(m));
}

TEST(translation_model, beam_search_is_exhaustive_search_over_full_recomputation) {
  // Six ids: <pad> <unk> <s> </s> and two pieces; <pad> and <unk> are never chosen.
  attn::models::translator<float> net({.vocabulary = 6, .width = 8, .heads = 2, .encoder_layers = 1,
                                       .decoder_layers = 2, .feedforward = 12});
  attn::train::rng r(5);
  attn::train::initialise(net, r);
  // (larger weights than Xavier's, so that the hypotheses' scores spread)
  std::vector<attn::nn::parameter<float>*> all;
  net.append_parameters(all);
  for (auto* p : all)
    for (float& v : p->value) v *= 3.0f;
  const std::vector<int64_t> source{4, 5, 4, 3};
  constexpr int64_t max_tokens = 3;
  // Every target's log-probability from one whole forward pass over it (no cache).
  const auto full_log_probability = [&](const std::vector<int64_t>& tokens, bool ended) {
    attn::models::translation_batch b;
    b.size = 1;
    b.source_length = static_cast<int64_t>(source.size());
    b.source = source;
    b.source_lengths = {b.source_length};
    std::vector<int64_t> out = tokens;
    out.push_back(3);
    b.target_length = static_cast<int64_t>(out.size());
    b.target_in = {2};
    b.target_in.insert(b.target_in.end(), tokens.begin(), tokens.end());
    b.target_out = out;  // every row scored, so that every row's logits are kept
    attn::models::translator_cache<float> cache;
    net.forward(b, cache, 0);
    double total = 0;
    for (size_t t = 0; t < (ended ? out.size() : tokens.size()); ++t) {
      const float* row = cache.logits.data() + t * 6;
      double top = -INFINITY, sum = 0;
      for (int j = 2; j < 6; ++j) top = std::max(top, static_cast<double>(row[j]));
      for (int j = 2; j < 6; ++j) sum += std::exp(static_cast<double>(row[j]) - top);
      total += static_cast<double>(row[out[t]]) - top - std::log(sum);
    }
    return total;
  };
  for (const double alpha : {0.0, 1.0, -0.5}) {
    SCOPED_TRACE(alpha);
    struct scored {
      std::vector<int64_t> tokens;
      double score;
    };
    std::vector<scored> every;
    std::function<void(std::vector<int64_t>&)> visit = [&](std::vector<int64_t>& prefix) {
      const auto length = static_cast<int64_t>(prefix.size());
      every.push_back({prefix, full_log_probability(prefix, true) /
                                   std::pow(static_cast<double>(length + 1), alpha)});  // chose </s>
      if (length == max_tokens) {
        every.back().score = full_log_probability(prefix, false) / std::pow(static_cast<double>(length), alpha);
        return;
      }
      for (int64_t id : {2, 4, 5}) {
        prefix.push_back(id);
        visit(prefix);
        prefix.pop_back();
      }
    };
    std::vector<int64_t> empty;
    visit(empty);
    std::stable_sort(every.begin(), every.end(), [](const scored& a, const scored& b) { return a.score > b.score; });
    const attn::models::translator_steps steps(net);
    const attn::decode::translation_decoding model(steps, source, max_tokens + 1);
    const int64_t start = 2;
    const auto found = attn::decode::beam_search(
        model, {&start, 1},
        {.beam = 64, .n_best = 5, .length_penalty = alpha, .max_tokens = max_tokens, .end = 3,
         .banned = {.first = 0, .second = 1}});
    ASSERT_EQ(found.size(), 5u);
    for (size_t k = 0; k < found.size(); ++k) {
      EXPECT_EQ(found[k].tokens, every[k].tokens) << k;
      EXPECT_NEAR(found[k].score, every[k].score, 1e-4) << k;
    }
  }
}

TEST(translation_model, the_file_round_trips_and_translates_the_same) {
  const translation_model m = tiny_model(3);
  const std::string bytes = m.encode();
  const translation_model back = translation_model::decode(bytes, "tiny.safetensors");
  EXPECT_EQ(back.encode(), bytes);
  EXPECT_EQ(back.config().vocabulary, m.config().vocabulary);
  EXPECT_EQ(back.pieces("zwei Hunde"), m.pieces("zwei Hunde"));
  const attn::translation a = m.translate("ein Mann liest", {.beam = 3, .n_best = 2});
  const attn::translation b = back.translate("ein Mann liest", {.beam = 3, .n_best = 2});
  ASSERT_EQ(a.hypotheses.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(a.hypotheses[k].pieces, b.hypotheses[k].pieces);
    EXPECT_EQ(a.hypotheses[k].score, b.hypotheses[k].score);
  }
}

// The bytes with one metadata field replaced (tensors as they were).
std::string with_metadata(const std::string& bytes, const std::string& key, const std::string& value) {
  attn::safetensors_file f = attn::parse_safetensors(bytes, "m");
  f.metadata[key] = value;
  return attn::encode_safetensors(f);
}

TEST(translation_model, a_damaged_file_is_one_input_error) {
  const std::string bytes = tiny_model(4).encode();
  const auto input_error = [](const std::string& b, const std::string& expected) {
    try {
      translation_model::decode(b, "m.safetensors");
      ADD_FAILURE() << "no error; expected " << expected;
    } catch (const attn::error& e) {
      EXPECT_EQ(e.kind(), attn::error_kind::input);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  const attn::safetensors_file f = attn::parse_safetensors(bytes, "m");
  const std::string pieces = f.metadata.at("pieces");
  input_error(with_metadata(bytes, "pieces", pieces.substr(0, pieces.size() - 3) + "*=="), "is not base64");
  // Valid base64 of bytes that are not a SentencePiece model.
  input_error(with_metadata(bytes, "pieces", attn::io::base64_encode("not a piece model")), "not a SentencePiece model");
  // A piece model cut short.
  const std::string raw = *attn::io::base64_decode(pieces);
  input_error(with_metadata(bytes, "pieces", attn::io::base64_encode(raw.substr(0, raw.size() / 2))), "SentencePiece");
  input_error(with_metadata(bytes, "format", "attn-text-model/2"), "not a translation model");
  input_error(with_metadata(bytes, "config", "{\"width\": 16}"), "vocabulary");
  attn::safetensors_file missing = f;
  missing.tensors.erase("decoder.norm.weight");
  input_error(attn::encode_safetensors(missing), "missing tensor 'decoder.norm.weight'");
  // Another model's piece table: its size disagrees with the embedding's rows.
  const std::string other = attn::parse_safetensors(tiny_model(4, 36).encode(), "o").metadata.at("pieces");
  input_error(with_metadata(bytes, "pieces", other), "pieces, but the model has");
}

TEST(translation_model, many_sentences_translate_as_each_alone_in_input_order) {
  const translation_model m = tiny_model(6);
  // More sentences than are searched together, of many lengths (their beams step as one batch,
  // each ending at its own step and its own length limit): each list is the one it has alone.
  std::vector<std::string> texts{"zwei Hunde spielen", "ein Mann", "", "eine Frau liest ein Buch", "Rad"};
  const std::vector<std::string> words{"ein", "Mann", "Frau", "liest", "Buch", "Hunde", "spielen", "Rad"};
  for (size_t i = 0; i < 30; ++i) {
    std::string text;
    for (size_t w = 0; w <= i % 9; ++w) text += (w ? " " : "") + words[(i * 5 + w * 3) % words.size()];
    texts.push_back(text);
  }
  for (const attn::translation_options options :
       {attn::translation_options{.beam = 2}, attn::translation_options{.beam = 3, .n_best = 3},
        attn::translation_options{.beam = 1, .max_length = 4}}) {
    const std::vector<attn::translation> together = m.translate(texts, options);
    ASSERT_EQ(together.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      const attn::translation alone = m.translate(texts[i], options);
      ASSERT_EQ(together[i].hypotheses.size(), alone.hypotheses.size()) << i;
      for (size_t h = 0; h < alone.hypotheses.size(); ++h) {
        EXPECT_EQ(together[i].hypotheses[h].pieces, alone.hypotheses[h].pieces) << i << " " << h;
        EXPECT_EQ(together[i].hypotheses[h].score, alone.hypotheses[h].score) << i << " " << h;
        EXPECT_EQ(together[i].hypotheses[h].ended, alone.hypotheses[h].ended) << i << " " << h;
      }
    }
    EXPECT_TRUE(together[2].best().text.empty());  // no pieces: nothing to translate
  }
  EXPECT_THROW(m.translate("x", {.beam = 0}), attn::error);
  EXPECT_THROW(m.translate("x", {.beam = 2, .n_best = 3}), attn::error);
  EXPECT_THROW(m.translate("x", {.length_penalty = 11}), attn::error);
}

TEST(translation_model, alignment_links_each_target_word_and_attention_has_every_layer) {
  const translation_model m = tiny_model(7);
  const attn::translation t = m.translate("eine Frau liest", {.beam = 2, .max_length = 6, .alignment = true});
  const attn::translation_hypothesis& best = t.best();
  int64_t words = 0;
  for (const std::string& p : best.pieces) words += p.starts_with("\xe2\x96\x81") || words == 0 ? 1 : 0;
  EXPECT_EQ(static_cast<int64_t>(best.alignment.size()), words);
  for (size_t j = 0; j < best.alignment.size(); ++j) {
    EXPECT_EQ(best.alignment[j].second, static_cast<int64_t>(j));
    EXPECT_GE(best.alignment[j].first, 0);
    EXPECT_LT(best.alignment[j].first, 3);  // three source words
  }
  const attn::translation_attention a = m.attention("eine Frau liest", {.beam = 2, .max_length = 6});
  EXPECT_EQ(a.encoder.size(), 2u);
  EXPECT_EQ(a.decoder.size(), 1u);
  ASSERT_EQ(a.cross.size(), 1u);
  const auto s = static_cast<int64_t>(a.source.size()), tl = static_cast<int64_t>(a.target.size());
  EXPECT_EQ(a.read.size(), a.target.size());
  EXPECT_EQ(a.alignment, best.alignment);  // the same search, the same links
  EXPECT_EQ(a.cross[0].shape(), (attn::shape_t{2, tl, s}));
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < tl; ++i) {
      double row = 0, future = 0;
      for (int64_t j = 0; j < s; ++j) row += a.cross[0].at({h, i, j});
      for (int64_t j = i + 1; j < tl; ++j) future += a.decoder[0].at({h, i, j});
      EXPECT_NEAR(row, 1.0, 1e-5);
      EXPECT_EQ(future, 0.0);  // the decoder's self-attention sees only the past
    }
}

TEST(base64, round_trips_and_refuses_what_is_not_base64) {
  for (const std::string& s : {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
                              std::string("foob"), std::string("\0\xff\x10", 3)})
    EXPECT_EQ(attn::io::base64_decode(attn::io::base64_encode(s)), s);
  EXPECT_EQ(attn::io::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(attn::io::base64_encode("fo"), "Zm8=");
  for (const char* bad : {"Zm9", "Zm9v!", "Zm=v", "Z===", "Zm9=", "Zm8=Zm8="})
    EXPECT_FALSE(attn::io::base64_decode(bad).has_value()) << bad;
}

}  // namespace
