// Corpus BLEU (Papineni et al., 2002) with sacreBLEU's default settings, written for attn from
// sacreBLEU's definitions, so that `attn eval` prints numbers people can compare with papers:
//  - each segment is tokenized by the "13a" rules (mteval-v13a.pl's, tokenize_13a below), in
//    mixed case;
//  - n-grams of 1 to 4 tokens; a hypothesis n-gram matches at most as often as the reference
//    that holds it most often has it (clipping); matches and totals are summed over the corpus;
//  - the brevity penalty compares the corpus's hypothesis length with the sum, over segments,
//    of the reference length closest to each hypothesis (the shorter on a tie);
//  - "exp" smoothing (mteval's): the k-th order with no match counts 1 / 2^k matches instead;
//  - the score is BP × the geometric mean of the four precisions, 0 to 100.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attn::text {

// The sacreBLEU version the signatures name: 2.0.0, the release whose README figures (BLEU
// 48.53, chrF2 59.73) attn's tests reproduce, so the signature names a release checked against.
// The definitions were read in sacreBLEU's 2.x source; a newer sacreBLEU prints its own version
// in this field, and the scores for these settings are meant to be the same.
inline constexpr std::string_view sacrebleu_version = "2.0.0";

struct bleu_score {
  double score = 0;                           // 0 to 100
  std::array<double, 4> precisions{};         // percent, smoothed as the score uses them
  std::array<size_t, 4> matches{}, totals{};  // clipped matches and hypothesis n-grams, summed
  double brevity_penalty = 0;
  double ratio = 0;                 // sys_len / ref_len (0 when ref_len is 0)
  size_t sys_len = 0, ref_len = 0;  // tokens
  // sacreBLEU's signature for these settings, e.g.
  // "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0" ("nrefs:var" when segments
  // have different numbers of references).
  std::string signature;
};

// The 13a tokenization of one segment: trailing whitespace dropped, "<skipped>" and "-\n"
// removed, other newlines made spaces, &quot; &amp; &lt; &gt; unescaped; then ASCII punctuation
// other than ' , - . made a token of its own; "." and "," split off unless they stand between
// two digits ("3.5", "1,000" stay whole); "-" split off after a digit ("10-20" → 10 - 20). Each
// rule applies left to right without overlapping matches, as mteval's regular expressions do.
// Tokens are joined by single spaces.
std::string tokenize_13a(std::string_view segment);

// hypotheses[i] against references[i]. Different counts are a usage error (attn::error); an
// empty reference is an input error, as sacreBLEU refuses it too. No segments: a score of 0.
bleu_score corpus_bleu(const std::vector<std::string>& hypotheses,
                       const std::vector<std::string>& references);

// Several references per segment, in sacreBLEU's layout: reference_sets[r][i] is the r-th
// reference of segment i. Empty references are left out (so segments may have different
// numbers of them); a segment left with none is an input error.
bleu_score corpus_bleu_multi(const std::vector<std::string>& hypotheses,
                             const std::vector<std::vector<std::string>>& reference_sets);

}  // namespace attn::text
