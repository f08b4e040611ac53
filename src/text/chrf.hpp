// Corpus chrF2 (Popović, 2015) with sacreBLEU's default CHRF settings, written for attn from
// sacreBLEU's definitions:
//  - character n-grams of 1 to 6 code points, whitespace removed first, mixed case, no word
//    n-grams (chrF, not chrF++);
//  - per segment and order: hypothesis n-grams, reference n-grams and clipped matches; the
//    hypothesis count is 0 where the reference has no n-gram of that order, so a reference too
//    short for an order neither rewards nor punishes it; with several references, the one
//    giving the segment the best F-score counts;
//  - the counts are summed over the corpus; precision and recall are averaged over the orders
//    where both hypothesis and reference have n-grams (sacreBLEU's "effective order", eff:yes),
//    then F-beta with beta 2 (recall weighs more), 0 to 100.
#pragma once

#include <string>
#include <vector>

namespace attn::text {

struct chrf_score {
  double score = 0;  // 0 to 100
  // "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.0.0" (text/bleu.hpp says which
  // version and why).
  std::string signature;
};

// hypotheses[i] against references[i]; the same rules as corpus_bleu for counts that differ
// (a usage error), empty references (an input error) and no segments (0).
chrf_score corpus_chrf(const std::vector<std::string>& hypotheses,
                       const std::vector<std::string>& references);

// reference_sets[r][i] is the r-th reference of segment i; empty ones are left out.
chrf_score corpus_chrf_multi(const std::vector<std::string>& hypotheses,
                             const std::vector<std::vector<std::string>>& reference_sets);

}  // namespace attn::text
