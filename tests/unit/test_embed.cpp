// The text → contextual embeddings pipeline and its text rendering.
#include <gtest/gtest.h>

#include <cmath>

#include "attn/embed.hpp"
#include "attn/error.hpp"
#include "attn/explain.hpp"

namespace {

// Seed 000's five words with their 3-d vectors.
attn::vectors seed_vectors() {
  return attn::vectors::from_values({"money", "bank", "grows", "river", "flows"}, 3,
                                    {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f,
                                     0.2f, 0.1f, 0.4f, 0.5f, 0.3f, 0.2f});
}

TEST(embed, looks_up_tokens_and_runs_self_attention) {
  auto v = seed_vectors();
  attn::embedding e = attn::embed("Money bank, grows!", v, {attn::scale_spec::parse("none")});
  EXPECT_EQ(e.tokens, (std::vector<std::string>{"money", "bank", "grows"}));
  EXPECT_EQ(e.unknown, (std::vector<std::string>{",", "!"}));
  ASSERT_EQ(e.static_vectors.shape(), (attn::shape_t{3, 3}));
  EXPECT_FLOAT_EQ(e.static_vectors.at({1, 2}), 0.6f);
  // S[0][1] = money·bank = 0.04 + 0.10 + 0.18
  EXPECT_NEAR(e.steps.scores.at({0, 1}), 0.32, 1e-6);
  EXPECT_EQ(e.steps.scale, 1.0);
  for (int64_t i = 0; i < 3; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < 3; ++j) sum += e.steps.weights.at({i, j});
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
}

TEST(embed, numbers_take_part_through_the_shared_number_vector) {
  const auto v = attn::vectors::from_values({"in", "paid", "one", "three"}, 2,
                                            {1, 0, 0, 1, 2, 2, 4, 0});
  attn::embedding e = attn::embed("In 1990 he paid 3.5 zzqxv", v);
  EXPECT_EQ(e.tokens, (std::vector<std::string>{"in", "1990", "paid", "3.5"}));
  EXPECT_EQ(e.unknown, (std::vector<std::string>{"he", "zzqxv"}));
  ASSERT_EQ(e.static_vectors.shape(), (attn::shape_t{4, 2}));
  for (int64_t row : {1, 3}) {  // the mean of "one" and "three"
    EXPECT_EQ(e.static_vectors.at({row, 0}), 3.0f);
    EXPECT_EQ(e.static_vectors.at({row, 1}), 1.0f);
  }
}

TEST(embed, default_scale_is_one_over_sqrt_d) {
  auto v = seed_vectors();
  attn::embedding e = attn::embed("money bank", v);
  EXPECT_NEAR(e.steps.scale, 1 / std::sqrt(3.0), 1e-12);
  EXPECT_NEAR(e.steps.scaled.at({0, 1}), 0.32 / std::sqrt(3.0), 1e-6);
}

TEST(embed, strict_rejects_unknown_tokens) {
  auto v = seed_vectors();
  try {
    attn::embed("money zebra", v, {{}, /*strict=*/true});
    FAIL() << "expected an error";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
    EXPECT_NE(std::string(e.what()).find("zebra"), std::string::npos) << e.what();
  }
}

TEST(embed, no_known_token_is_an_error) {
  auto v = seed_vectors();
  EXPECT_THROW(attn::embed("zebra lion", v), attn::error);
  EXPECT_THROW(attn::embed("   ", v), attn::error);
}

// Columns a UTF-8 line takes (… is one column).
size_t columns(const std::string& line) {
  size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

TEST(explain, fits_the_width_and_labels_every_row) {
  std::vector<std::string> words;
  std::vector<float> values;
  for (int i = 0; i < 30; ++i) {
    words.push_back("w" + std::to_string(i));
    for (int j = 0; j < 50; ++j) values.push_back(static_cast<float>((i * 7 + j) % 11) / 10.0f);
  }
  auto v = attn::vectors::from_values(words, 50, values);
  std::string text;
  for (auto& w : words) text += w + " ";
  attn::embedding e = attn::embed(text, v);
  for (int width : {60, 100, 160}) {
    std::string out = attn::render_explain(e, {width, 4});
    size_t start = 0;
    while (start < out.size()) {
      size_t end = out.find('\n', start);
      std::string line = out.substr(start, end - start);
      // Titles are prose and may run long; matrix lines must fit.
      if (!line.empty() && !std::isdigit(static_cast<unsigned char>(line[0])) &&
          line.rfind("Tokens", 0) != 0) {
        EXPECT_LE(columns(line), static_cast<size_t>(width)) << line;
      }
      start = end + 1;
    }
    EXPECT_NE(out.find("w29"), std::string::npos);
    EXPECT_NE(out.find("…"), std::string::npos);
  }
}

TEST(explain, shows_every_column_when_it_fits) {
  attn::tensor m({2, 2}, std::vector<float>{0.25f, 0.75f, 1.0f, 0.0f});
  std::string out = attn::render_matrix("A", m, {"river", "bank"}, {"river", "bank"}, {100, 2},
                                        /*with_row_sums=*/true);
  EXPECT_EQ(out,
            "A\n"
            "      river  bank   row sum\n"
            "river  0.25  0.75      1.00\n"
            "bank   1.00  0.00      1.00\n");
}

}  // namespace
