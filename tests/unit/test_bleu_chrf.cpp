// attn's corpus BLEU and chrF (text/bleu.hpp, text/chrf.hpp) against sacreBLEU: its README's
// published example, and cases whose counts are worked out by hand from sacreBLEU's definitions
// (sacreBLEU itself is not installed here; each expected value says where it comes from).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "text/bleu.hpp"
#include "text/chrf.hpp"

namespace {

using attn::text::corpus_bleu;
using attn::text::corpus_bleu_multi;
using attn::text::corpus_chrf;
using attn::text::corpus_chrf_multi;
using attn::text::tokenize_13a;
using strings = std::vector<std::string>;

// sacreBLEU's README ("Using SacreBLEU from Python"): three hypotheses, two reference sets.
const strings readme_hypotheses = {"The dog bit the man.", "It wasn't surprising.",
                                   "The man had just bitten him."};
const std::vector<strings> readme_references = {
    {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
    {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."}};

// ---- the 13a tokenizer (expected outputs derived by hand from mteval-v13a's rules) ----

TEST(Bleu13aTokenizer, punctuation_is_split_off_but_not_apostrophes) {
  EXPECT_EQ(tokenize_13a("Hello, world!"), "Hello , world !");
  EXPECT_EQ(tokenize_13a("It wasn't surprising."), "It wasn't surprising .");
  EXPECT_EQ(tokenize_13a("(a) [b] {c} @d #e a/b a:b a;b a?b a=b a_b a^b a`b a~b a|b a\\b a*b "
                         "a+b a%b \"q\""),
            "( a ) [ b ] { c } @ d # e a / b a : b a ; b a ? b a = b a _ b a ^ b a ` b a ~ b "
            "a | b a \\ b a * b a + b a % b \" q \"");
}

TEST(Bleu13aTokenizer, periods_and_commas_stay_inside_numbers_only) {
  EXPECT_EQ(tokenize_13a("It costs $3.50, or 1,000.5 euros."),
            "It costs $ 3.50 , or 1,000.5 euros .");
  EXPECT_EQ(tokenize_13a(".5 and 5. and a.b and 3.a"), ". 5 and 5 . and a . b and 3 . a");
  // Matches do not overlap: "t." is consumed, then ".." and so on.
  EXPECT_EQ(tokenize_13a("Wait... what?"), "Wait . . . what ?");
  EXPECT_EQ(tokenize_13a("x.,y"), "x . , y");
}

TEST(Bleu13aTokenizer, a_dash_is_split_off_after_a_digit_only) {
  EXPECT_EQ(tokenize_13a("pages 10-20, well-known, -5 and 1--2"),
            "pages 10 - 20 , well-known , -5 and 1 - -2");
}

TEST(Bleu13aTokenizer, entities_skipped_marks_and_newlines) {
  // Unescaped in order: &quot; &amp; &lt; &gt; (so "&amp;lt;" ends as "<").
  EXPECT_EQ(tokenize_13a("AT&amp;T &lt;b&gt; &quot;hi&quot; &amp;lt;"), "AT & T < b > \" hi \" <");
  EXPECT_EQ(tokenize_13a("a<skipped>b <skipped>"), "ab");
  EXPECT_EQ(tokenize_13a("line-\nbreak\nnext"), "linebreak next");
  // Trailing whitespace goes first, so a final "-\n" leaves its dash.
  EXPECT_EQ(tokenize_13a("end-\n"), "end-");
}

TEST(Bleu13aTokenizer, unicode_is_kept_and_unicode_whitespace_separates) {
  EXPECT_EQ(tokenize_13a("Café, naïve «Straße»—ja."), "Café , naïve «Straße»—ja .");
  // Tab, U+00A0 and U+3000 separate words as Python's str.split() has them do.
  EXPECT_EQ(tokenize_13a("a\tb\u00a0c\u3000d  "), "a b c d");
  EXPECT_EQ(tokenize_13a(""), "");
  EXPECT_EQ(tokenize_13a("   "), "");
}

// ---- BLEU ----

TEST(Bleu, sacrebleu_readme_example) {
  // README: BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17
  // ref_len = 18), signature nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0.
  const auto bleu = corpus_bleu_multi(readme_hypotheses, readme_references);
  EXPECT_NEAR(bleu.score, 48.53, 0.005);
  EXPECT_NEAR(bleu.precisions[0], 82.4, 0.05);
  EXPECT_NEAR(bleu.precisions[1], 50.0, 0.05);
  EXPECT_NEAR(bleu.precisions[2], 45.5, 0.05);
  EXPECT_NEAR(bleu.precisions[3], 37.5, 0.05);
  EXPECT_NEAR(bleu.brevity_penalty, 0.943, 0.0005);
  EXPECT_NEAR(bleu.ratio, 0.944, 0.0005);
  EXPECT_EQ(bleu.sys_len, 17u);
  EXPECT_EQ(bleu.ref_len, 18u);
  EXPECT_EQ(bleu.signature, "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0");
  // The counts behind them (by hand): 14/17, 7/14, 5/11, 3/8.
  EXPECT_EQ(bleu.matches, (std::array<size_t, 4>{14, 7, 5, 3}));
  EXPECT_EQ(bleu.totals, (std::array<size_t, 4>{17, 14, 11, 8}));
  EXPECT_DOUBLE_EQ(
      bleu.score, std::exp(1.0 - 18.0 / 17) * std::pow(1400.0 / 17 * 50 * 500.0 / 11 * 37.5, 0.25));
}

TEST(Bleu, sacrebleu_readme_variable_references) {
  // README: the first reference of the first segment emptied: BLEU = 29.44
  // 82.4/42.9/27.3/12.5 (BP = 0.889 ratio = 0.895 hyp_len = 17 ref_len = 19), nrefs:var.
  auto references = readme_references;
  references[0][0] = "";
  const auto bleu = corpus_bleu_multi(readme_hypotheses, references);
  EXPECT_NEAR(bleu.score, 29.44, 0.005);
  EXPECT_NEAR(bleu.precisions[0], 82.4, 0.05);
  EXPECT_NEAR(bleu.precisions[1], 42.9, 0.05);
  EXPECT_NEAR(bleu.precisions[2], 27.3, 0.05);
  EXPECT_NEAR(bleu.precisions[3], 12.5, 0.05);
  EXPECT_NEAR(bleu.brevity_penalty, 0.889, 0.0005);
  EXPECT_NEAR(bleu.ratio, 0.895, 0.0005);
  EXPECT_EQ(bleu.sys_len, 17u);
  EXPECT_EQ(bleu.ref_len, 19u);
  EXPECT_EQ(bleu.signature, "nrefs:var|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0");
}

TEST(Bleu, one_sentence) {
  // 6 tokens against 7: matches 6/6, 4/5, 2/4, 1/3; BP = exp(1 - 7/6).
  const auto bleu = corpus_bleu({"The dog bit the man."}, {"The dog had bit the man."});
  EXPECT_EQ(bleu.matches, (std::array<size_t, 4>{6, 4, 2, 1}));
  EXPECT_EQ(bleu.totals, (std::array<size_t, 4>{6, 5, 4, 3}));
  EXPECT_DOUBLE_EQ(bleu.brevity_penalty, std::exp(1.0 - 7.0 / 6));
  EXPECT_NEAR(bleu.score, std::exp(1.0 - 7.0 / 6) * std::pow(100.0 * 80 * 50 * (100.0 / 3), 0.25),
              1e-9);
  EXPECT_NEAR(bleu.score, 51.15, 0.005);
  EXPECT_EQ(bleu.signature, "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0");
}

TEST(Bleu, no_four_gram_match_is_smoothed_not_zero) {
  // 5/6, 3/5, 1/4 and 0/3: exp smoothing counts the 4-grams as 1/2 match → 100 / (2 × 3).
  const auto bleu = corpus_bleu({"the cat sat on a mat"}, {"the cat sat in a mat"});
  EXPECT_EQ(bleu.matches, (std::array<size_t, 4>{5, 3, 1, 0}));
  EXPECT_EQ(bleu.totals, (std::array<size_t, 4>{6, 5, 4, 3}));
  EXPECT_DOUBLE_EQ(bleu.precisions[3], 100.0 / 6);
  EXPECT_DOUBLE_EQ(bleu.brevity_penalty, 1.0);
  EXPECT_NEAR(bleu.score, std::pow(500.0 / 6 * 60 * 25 * (100.0 / 6), 0.25), 1e-9);
  EXPECT_NEAR(bleu.score, 37.99, 0.005);
}

TEST(Bleu, each_further_order_without_a_match_halves_again) {
  // "one two three four" against "one two x three four": 4/4, 2/3, 0/2, 0/1; the first order
  // without a match counts 1/2, the next 1/4; BP = exp(1 - 5/4).
  const auto bleu = corpus_bleu({"one two three four"}, {"one two x three four"});
  EXPECT_DOUBLE_EQ(bleu.precisions[2], 100.0 / (2 * 2));
  EXPECT_DOUBLE_EQ(bleu.precisions[3], 100.0 / (4 * 1));
  EXPECT_DOUBLE_EQ(bleu.brevity_penalty, std::exp(-0.25));
  EXPECT_NEAR(bleu.score, std::exp(-0.25) * std::pow(100.0 * (200.0 / 3) * 25 * 25, 0.25), 1e-9);
  EXPECT_NEAR(bleu.ratio, 0.8, 1e-12);
}

TEST(Bleu, identical_text_scores_100) {
  const strings text = {"A man rides a bike.", "Two dogs play in the snow, 3.5 km away."};
  const auto bleu = corpus_bleu(text, text);
  EXPECT_DOUBLE_EQ(bleu.score, 100.0);
  EXPECT_DOUBLE_EQ(bleu.brevity_penalty, 1.0);
  EXPECT_DOUBLE_EQ(bleu.ratio, 1.0);
}

TEST(Bleu, empty_hypothesis_and_empty_corpus_score_0) {
  const auto bleu = corpus_bleu({""}, {"The cat sat."});
  EXPECT_EQ(bleu.score, 0.0);
  EXPECT_EQ(bleu.brevity_penalty, 0.0);
  EXPECT_EQ(bleu.sys_len, 0u);
  EXPECT_EQ(bleu.ref_len, 4u);
  for (double p : bleu.precisions) EXPECT_EQ(p, 0.0);

  const auto none = corpus_bleu({}, {});
  EXPECT_EQ(none.score, 0.0);
  EXPECT_EQ(none.sys_len, 0u);
  EXPECT_EQ(none.ratio, 0.0);
}

TEST(Bleu, a_corpus_without_four_grams_scores_0) {
  // sacreBLEU stops at the first order with no hypothesis n-gram: its precision stays 0.
  const auto bleu = corpus_bleu({"Hello there ."}, {"Hello there ."});
  EXPECT_DOUBLE_EQ(bleu.precisions[0], 100.0);
  EXPECT_EQ(bleu.precisions[3], 0.0);
  EXPECT_EQ(bleu.score, 0.0);
}

TEST(Bleu, closest_reference_length_the_shorter_on_a_tie) {
  const auto bleu = corpus_bleu_multi({"a b c d e"}, {{"a b c d"}, {"a b c d e f"}});
  EXPECT_EQ(bleu.ref_len, 4u);
  EXPECT_DOUBLE_EQ(bleu.ratio, 1.25);
  EXPECT_DOUBLE_EQ(bleu.brevity_penalty, 1.0);
}

TEST(Bleu, clipping_counts_a_word_no_more_often_than_the_reference) {
  // "the the the the" against "the cat": 1 of 4 unigrams matches.
  const auto bleu = corpus_bleu({"the the the the"}, {"the cat"});
  EXPECT_EQ(bleu.matches[0], 1u);
  EXPECT_EQ(bleu.totals[0], 4u);
}

TEST(Bleu, mismatched_counts_and_empty_references_are_errors) {
  try {
    (void)corpus_bleu({"a", "b"}, {"a"});
    FAIL() << "no error";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
  }
  try {
    (void)corpus_bleu_multi({"a"}, {});
    FAIL() << "no error";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
  }
  try {
    (void)corpus_bleu({"a"}, {""});
    FAIL() << "no error";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::input);
  }
}

// ---- chrF ----

TEST(Chrf, sacrebleu_readme_example) {
  // README: chrF2 = 59.73; signature as its multi-reference example prints it.
  const auto chrf = corpus_chrf_multi(readme_hypotheses, readme_references);
  EXPECT_NEAR(chrf.score, 59.73, 0.005);
  EXPECT_EQ(chrf.signature, "nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.0.0");
}

TEST(Chrf, identical_text_scores_100_and_whitespace_is_ignored) {
  EXPECT_DOUBLE_EQ(corpus_chrf({"A man rides a bike."}, {"A man rides a bike."}).score, 100.0);
  EXPECT_DOUBLE_EQ(corpus_chrf({"a b\tc"}, {"abc"}).score, 100.0);
}

TEST(Chrf, recall_weighs_more_with_beta_2) {
  // "abcd" against "ab": 1-grams P 2/4, R 2/2; 2-grams P 1/3, R 1/1; the reference has no
  // 3-grams, so higher orders do not count. P = 5/12, R = 1, F2 = 5PR / (4P + R) = 25/32.
  EXPECT_NEAR(corpus_chrf({"abcd"}, {"ab"}).score, 78.125, 1e-9);
}

TEST(Chrf, counts_are_summed_over_the_corpus_before_the_f_score) {
  // Segments "abcd"/"ab" and "xyz"/"xyz". Summed: 1-grams 5 of 7 hyp, 5 of 5 ref; 2-grams 3/5,
  // 3/3; 3-grams 1/1, 1/1 (the first segment's two 3-grams are not counted: its reference has
  // none). P = (5/7 + 3/5 + 1) / 3 = 27/35, R = 1, F2 = 135/143.
  EXPECT_NEAR(corpus_chrf({"abcd", "xyz"}, {"ab", "xyz"}).score, 13500.0 / 143, 1e-9);
}

TEST(Chrf, characters_are_code_points) {
  // "éa" against "éb": 1-grams 1/2, 2-grams 0/1 → P = R = 1/4 (bytes would give 2/3 first).
  EXPECT_NEAR(corpus_chrf({"éa"}, {"éb"}).score, 25.0, 1e-9);
}

TEST(Chrf, the_best_reference_counts) {
  EXPECT_DOUBLE_EQ(corpus_chrf_multi({"abc"}, {{"xyz"}, {"abc"}}).score, 100.0);
}

TEST(Chrf, empty_hypothesis_and_empty_corpus_score_0) {
  EXPECT_EQ(corpus_chrf({""}, {"The cat sat."}).score, 0.0);
  const auto none = corpus_chrf({}, {});
  EXPECT_EQ(none.score, 0.0);
  EXPECT_EQ(none.signature, "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.0.0");
}

TEST(Chrf, mismatched_counts_are_a_usage_error) {
  try {
    (void)corpus_chrf({"a"}, {"a", "b"});
    FAIL() << "no error";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
  }
}

}  // namespace
