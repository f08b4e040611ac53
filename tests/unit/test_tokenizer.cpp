// The GloVe 6B–style tokenizer: lowercasing, punctuation, clitics, hyphens, numbers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attn/tokenizer.hpp"

namespace {

using tokens = std::vector<std::string>;

TEST(tokenizer, splits_clitics_and_final_period) {
  EXPECT_EQ(attn::tokenize("The animal didn't cross the street because it was too tired."),
            (tokens{"the", "animal", "did", "n't", "cross", "the", "street", "because", "it", "was",
                    "too", "tired", "."}));
}

TEST(tokenizer, keeps_hyphenated_words_and_numbers_whole) {
  EXPECT_EQ(attn::tokenize("It's a well-known fact: 3.14, 1,000 (roughly)!"),
            (tokens{"it", "'s", "a", "well-known", "fact", ":", "3.14", ",", "1,000", "(",
                    "roughly", ")", "!"}));
}

TEST(tokenizer, penn_treebank_clitics) {
  EXPECT_EQ(attn::tokenize("can't won't DON'T I'm you're we've they'll she'd John's"),
            (tokens{"ca", "n't", "wo", "n't", "do", "n't", "i", "'m", "you", "'re", "we", "'ve",
                    "they", "'ll", "she", "'d", "john", "'s"}));
}

TEST(tokenizer, other_apostrophes) {
  EXPECT_EQ(attn::tokenize("o'neill rock'n'roll y'all the students' 'quoted' '70s 'sup"),
            (tokens{"o'neill", "rock'n'roll", "y'all", "the", "students", "'", "'", "quoted", "'",
                    "'", "70s", "'", "sup"}));
}

TEST(tokenizer, curly_quotes_act_like_ascii_ones) {
  EXPECT_EQ(attn::tokenize("\u201CIt\u2019s mine,\u201D she said \u2018softly\u2019"),
            (tokens{"\"", "it", "'s", "mine", ",", "\"", "she", "said", "'", "softly", "'"}));
}

TEST(tokenizer, hyphens_that_do_not_join_words) {
  EXPECT_EQ(attn::tokenize("-start end- well--known - -- -5"),
            (tokens{"-", "start", "end", "-", "well", "--", "known", "-", "--", "-", "5"}));
}

TEST(tokenizer, dots) {
  EXPECT_EQ(attn::tokenize("Wait... what? U.S. e.g., pi is 3.14. a. .5 x.y"),
            (tokens{"wait", "...", "what", "?", "u.s.", "e.g.", ",", "pi", "is", "3.14", ".", "a",
                    ".", ".5", "x", ".", "y"}));
}

TEST(tokenizer, symbols_are_separate_tokens) {
  EXPECT_EQ(attn::tokenize("$5 5% a/b a\\b x@y #1 a+b=c <x> a|b ~a ^ a_b *a& [x]{y}`z`;"),
            (tokens{"$", "5", "5", "%", "a", "/", "b", "a", "\\", "b", "x", "@", "y", "#", "1",
                    "a", "+", "b", "=", "c", "<", "x", ">", "a", "|", "b", "~", "a", "^", "a", "_",
                    "b", "*", "a", "&", "[", "x", "]", "{", "y", "}", "`", "z", "`", ";"}));
}

TEST(tokenizer, non_ascii_kept_and_its_punctuation_split) {
  EXPECT_EQ(attn::tokenize("Caf\u00E9 \u00C9COLE wait\u2026what \u00A310 \u00ABoui\u00BB a\u2014b"),
            (tokens{"caf\u00E9", "\u00E9cole", "wait", "\u2026", "what", "\u00A3", "10", "\u00AB",
                    "oui", "\u00BB", "a", "\u2014", "b"}));
}

TEST(tokenizer, lowercases_latin_greek_and_cyrillic) {
  EXPECT_EQ(
      attn::tokenize("CAF\u00C9 Caf\u00E9 \u0391\u0398\u0397\u039D\u0391 "
                     "\u041C\u041E\u0421\u041A\u0412\u0410 \u0130STANBUL \u0401\u041B\u041A\u0410"),
      (tokens{"caf\u00E9", "caf\u00E9", "\u03B1\u03B8\u03B7\u03BD\u03B1",
              "\u043C\u043E\u0441\u043A\u0432\u0430", "istanbul", "\u0451\u043B\u043A\u0430"}));
}

TEST(tokenizer, whitespace_of_every_kind_separates) {
  EXPECT_EQ(attn::tokenize("  a\tb\nc\r\nd\u00A0e  "), (tokens{"a", "b", "c", "d", "e"}));
  EXPECT_TRUE(attn::tokenize("").empty());
  EXPECT_TRUE(attn::tokenize(" \t\n ").empty());
}

TEST(tokenizer, numbers) {
  EXPECT_EQ(attn::tokenize("1,000,000 2.5x 1990s 3,4 7,"),
            (tokens{"1,000,000", "2.5x", "1990s", "3,4", "7", ","}));
}

}  // namespace

TEST(tokenizer, word_tokens_hold_a_letter_or_digit) {
  for (const char* w : {"bank", "n't", "'s", "3.14", "well-known", "caf\u00E9", "\u00E9", "u.s.", "1"})
    EXPECT_TRUE(attn::is_word_token(w)) << w;
  for (const char* p : {".", ",", "\"", "'", "--", "...", "(", "$", "\u2026", "\u2014", "\u00A3", "\u00AB", ""})
    EXPECT_FALSE(attn::is_word_token(p)) << p;
}
