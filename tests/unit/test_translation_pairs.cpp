// Translation's data (train/translation_pairs.hpp): aligned files and tab-separated pairs read or
// refused with one clear error, pairs too long skipped and counted, token-counted batches of like
// lengths covering every pair once, and the translator's batch layout (<s> y in, y </s> out).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include "attn/error.hpp"
#include "train/translation_pairs.hpp"

namespace {

using namespace attn::train;

std::string write_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("attn_pairs_" + name);
  std::ofstream(path) << text;
  return path.string();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const attn::error& e) {
    return e.what();
  }
  return "";
}

TEST(translation_pairs, aligned_files_and_tab_separated_lines) {
  const auto pairs = read_pairs(write_file("s", "Ein Hund.\nZwei Katzen.\n"), write_file("t", "A dog.\nTwo cats.\n"));
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[1].source, "Zwei Katzen.");
  EXPECT_EQ(pairs[1].target, "Two cats.");
  const auto tsv = read_tab_separated_pairs(write_file("tsv", "Go.\tGeh.\tCC-BY 2.0 (France)\r\n\nHi.\tHallo.\n"));
  ASSERT_EQ(tsv.size(), 2u);  // Tatoeba's third column and a blank line left out
  EXPECT_EQ(tsv[0].target, "Geh.");
  EXPECT_EQ(tsv[1].source, "Hi.");
}

TEST(translation_pairs, misaligned_or_malformed_input_is_one_error) {
  const std::string s = write_file("s3", "a\nb\nc\n"), t = write_file("t2", "x\ny\n");
  const std::string e = error_of([&] { read_pairs(s, t); });
  EXPECT_NE(e.find("3 lines, but"), std::string::npos) << e;
  EXPECT_NE(e.find("has 2"), std::string::npos) << e;
  const std::string tab = error_of([&] { read_tab_separated_pairs(write_file("bad", "a\tb\nno tab here\n")); });
  EXPECT_NE(tab.find("line 2"), std::string::npos) << tab;
  EXPECT_FALSE(error_of([&] { read_pairs(write_file("e1", ""), write_file("e2", "")); }).empty());
  EXPECT_FALSE(error_of([&] { read_pairs("/nonexistent/attn", t); }).empty());
}

attn::text::subword_pieces small_pieces() {
  std::vector<std::string> text;
  for (int i = 0; i < 30; ++i)
    for (const char* s : {"A dog runs.", "Ein Hund rennt.", "Two cats sleep on a mat.", "Zwei Katzen schlafen."})
      text.emplace_back(s);
  return attn::text::subword_pieces(attn::text::learn_pieces(text, {.vocabulary = 60}));
}

TEST(translation_pairs, pairs_too_long_or_empty_are_skipped_and_counted) {
  const auto pieces = small_pieces();
  const std::vector<sentence_pair> pairs = {{"Ein Hund rennt.", "A dog runs."},
                                            {"Zwei Katzen schlafen. Zwei Katzen schlafen. Zwei Katzen schlafen.",
                                             "Two cats sleep."},
                                            {"", "A dog."}};
  const encoded_pairs e = encode_pairs(pairs, pieces, 12);
  EXPECT_EQ(e.pairs.size(), 1u);
  EXPECT_EQ(e.too_long, 1);
  EXPECT_EQ(e.empty, 1);
  EXPECT_EQ(e.pairs[0].target.back(), attn::text::subword_pieces::end);
  EXPECT_EQ(pieces.decode(std::vector<int32_t>(e.pairs[0].target.begin(), e.pairs[0].target.end() - 1)), "A dog runs.");
}

TEST(translation_pairs, batches_hold_like_lengths_within_the_token_budget_and_every_pair_once) {
  std::vector<encoded_pair> pairs;
  for (int i = 0; i < 200; ++i)
    pairs.push_back({std::vector<int64_t>(static_cast<size_t>(2 + i % 17), 5),
                     std::vector<int64_t>(static_cast<size_t>(2 + (i * 7) % 23), 6)});
  const auto batches = length_batches(pairs, 120, 3);
  std::multiset<int64_t> seen;
  for (const auto& b : batches) {
    size_t s = 0, t = 0;
    for (int64_t i : b) {
      seen.insert(i);
      s = std::max(s, pairs[static_cast<size_t>(i)].source.size());
      t = std::max(t, pairs[static_cast<size_t>(i)].target.size());
    }
    EXPECT_TRUE(b.size() == 1 || static_cast<int64_t>(b.size() * (s + t + 1)) <= 120);
  }
  EXPECT_EQ(seen.size(), 200u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 200u);
  EXPECT_EQ(length_batches(pairs, 120, 3), batches);  // the seed fixes the order
  EXPECT_NE(length_batches(pairs, 120, 4), batches);
}

TEST(translation_pairs, the_translators_batch) {
  const std::vector<encoded_pair> pairs = {{{7, 8, 3}, {9, 3}}, {{7, 3}, {10, 11, 12, 3}}};
  const std::vector<int64_t> both{0, 1};
  const attn::models::translation_batch b = make_translation_batch(pairs, both);
  EXPECT_EQ(b.size, 2);
  EXPECT_EQ(b.source_length, 3);
  EXPECT_EQ(b.target_length, 4);
  EXPECT_EQ(b.source, (std::vector<int64_t>{7, 8, 3, 7, 3, -1}));
  EXPECT_EQ(b.source_lengths, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(b.target_in, (std::vector<int64_t>{2, 9, -1, -1, 2, 10, 11, 12}));
  EXPECT_EQ(b.target_out, (std::vector<int64_t>{9, 3, -1, -1, 10, 11, 12, 3}));
}

}  // namespace
