// Simple-case-mapping lowercasing (text/lowercase.hpp). Every code point of the covered blocks
// is compared with Python's str.lower() in tests/cli/test_case_folding.py; these are the cases
// worth naming, and what happens to bytes that are not UTF-8.
#include <gtest/gtest.h>

#include <string>

#include "text/lowercase.hpp"

namespace {

using attn::text::lowercase;
using attn::text::simple_lowercase;

TEST(lowercase, words_in_latin_greek_and_cyrillic) {
  EXPECT_EQ(lowercase("CAF\u00C9"), "caf\u00E9");  // CAFÉ
  EXPECT_EQ(lowercase("\u0391\u0398\u0397\u039D\u0391"),
            "\u03B1\u03B8\u03B7\u03BD\u03B1");  // ΑΘΗΝΑ
  EXPECT_EQ(lowercase("\u041C\u041E\u0421\u041A\u0412\u0410"),
            "\u043C\u043E\u0441\u043A\u0432\u0430");  // МОСКВА
  EXPECT_EQ(lowercase("\u0152UVRE \u017DUPAN \u01C5"),
            "\u0153uvre \u017Eupan \u01C6");  // ŒUVRE ŽUPAN ǅ
}

TEST(lowercase, the_simple_mapping_where_the_full_one_differs) {
  // Σ is σ wherever it stands (the final ς needs context), İ is i (the full mapping adds U+0307).
  EXPECT_EQ(lowercase("\u039F\u0394\u03A5\u03A3\u03A3\u0395\u03A5\u03A3"),
            "\u03BF\u03B4\u03C5\u03C3\u03C3\u03B5\u03C5\u03C3");  // ΟΔΥΣΣΕΥΣ → οδυσσευσ
  EXPECT_EQ(simple_lowercase(U'\u0130'), U'i');
  EXPECT_EQ(lowercase("\u0130STANBUL"), "istanbul");
}

TEST(lowercase, letters_without_a_lowercase_here_are_kept) {
  EXPECT_EQ(lowercase("\u00DF \u03C2 \u00B5 \u00D7 \u0138"),
            "\u00DF \u03C2 \u00B5 \u00D7 \u0138");  // ß ς µ × ĸ
  // Ⱥ and Ⱦ: their lowercase lies outside these blocks and would take a third byte.
  EXPECT_EQ(lowercase("\u023A\u023E"), "\u023A\u023E");
  // Outside the blocks covered: Armenian, Georgian, Latin Extended Additional, ẞ.
  EXPECT_EQ(lowercase("\u0531 \u10A0 \u1E00 \u1E9E"), "\u0531 \u10A0 \u1E00 \u1E9E");
  // Already lowercase letters of the alternating ranges stay.
  EXPECT_EQ(simple_lowercase(U'\u0101'), U'\u0101');
  EXPECT_EQ(simple_lowercase(U'\u04CF'), U'\u04CF');
  EXPECT_EQ(simple_lowercase(U'\u04C0'), U'\u04CF');  // Ӏ → ӏ, fifteen places on
}

TEST(lowercase, bytes_that_are_not_utf8_pass_through_unchanged) {
  for (const std::string bad :
       {"\xC3", "\xC3(", "\xC1\x81", "\x80\x80", "\xFF", "\xED\xA0\x80", "\xE0\x80\x80"})
    EXPECT_EQ(lowercase(bad), bad) << bad;
  // ASCII around them is still lowercased, and a good sequence right after a bad byte too.
  EXPECT_EQ(lowercase("A\xFF"
                      "B\xC3\xC3\x89"),
            "a\xFF"
            "b\xC3\xC3\xA9");
}

}  // namespace
