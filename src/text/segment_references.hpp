// The references of a corpus metric (BLEU, chrF), as sacreBLEU takes them: reference_sets[r][i]
// is set r's reference for hypothesis i; an empty reference is left out.
#pragma once

#include <string>
#include <vector>

namespace attn::text {

struct segment_references {
  std::vector<std::vector<const std::string*>> segments;  // each hypothesis's non-empty references
  std::string nrefs;  // the signature's count: the references each segment used, "var" when it varies
};

// A usage error naming the metric when a set does not hold one reference per hypothesis (or no
// set is given for hypotheses); an input error naming the segment whose references are all empty.
segment_references gather_references(const std::string& metric, const std::vector<std::string>& hypotheses,
                                     const std::vector<std::vector<std::string>>& reference_sets);

}  // namespace attn::text
