#include "text/chrf.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>

#include "attn/error.hpp"
#include "text/bleu.hpp"
#include "text/python_split.hpp"
#include "text/segment_references.hpp"

namespace attn::text {

namespace {

constexpr size_t char_order = 6;
constexpr double beta = 2.0;

// Per order: hypothesis n-grams, reference n-grams, matches.
struct order_counts {
  size_t hypothesis = 0, reference = 0, matches = 0;
};
using chrf_counts = std::array<order_counts, char_order>;

using gram_counts = std::unordered_map<std::string_view, size_t>;

// The text without whitespace, cut into code points (a view of the kept bytes, one entry per
// code point start, plus the end).
struct characters {
  std::string kept;
  std::vector<size_t> starts;
};

characters without_whitespace(const std::string& text) {
  characters out;
  for (size_t i = 0; i < text.size();) {
    if (const size_t space = whitespace_length(text, i)) {
      i += space;
      continue;
    }
    const size_t length = code_point_length(text, i);
    out.starts.push_back(out.kept.size());
    out.kept.append(text, i, length);
    i += length;
  }
  out.starts.push_back(out.kept.size());
  return out;
}

// n-gram counts of every order 1..6.
std::array<gram_counts, char_order> count_grams(const characters& text) {
  std::array<gram_counts, char_order> counts;
  const size_t length = text.starts.size() - 1;
  const std::string_view kept = text.kept;
  for (size_t n = 1; n <= char_order; ++n)
    for (size_t i = 0; i + n <= length; ++i)
      ++counts[n - 1][kept.substr(text.starts[i], text.starts[i + n] - text.starts[i])];
  return counts;
}

double f_score(const chrf_counts& counts) {
  double precision = 0, recall = 0;
  size_t effective_order = 0;
  for (const order_counts& c : counts) {
    if (c.hypothesis == 0 || c.reference == 0) continue;
    precision += static_cast<double>(c.matches) / static_cast<double>(c.hypothesis);
    recall += static_cast<double>(c.matches) / static_cast<double>(c.reference);
    ++effective_order;
  }
  if (effective_order == 0) return 0.0;
  precision /= static_cast<double>(effective_order);
  recall /= static_cast<double>(effective_order);
  if (precision + recall == 0.0) return 0.0;
  const double b2 = beta * beta;
  return 100.0 * (1 + b2) * precision * recall / (b2 * precision + recall);
}

chrf_counts segment_counts(const std::array<gram_counts, char_order>& hypothesis,
                           const std::array<gram_counts, char_order>& reference) {
  chrf_counts counts;
  for (size_t n = 0; n < char_order; ++n) {
    size_t hypothesis_total = 0, matches = 0, reference_total = 0;
    for (const auto& [gram, count] : hypothesis[n]) {
      hypothesis_total += count;
      if (auto it = reference[n].find(gram); it != reference[n].end())
        matches += std::min(count, it->second);
    }
    for (const auto& entry : reference[n]) reference_total += entry.second;
    // A reference without n-grams of this order leaves the hypothesis's uncounted.
    counts[n] = {reference[n].empty() ? 0 : hypothesis_total, reference_total, matches};
  }
  return counts;
}

}  // namespace

chrf_score corpus_chrf(const std::vector<std::string>& hypotheses,
                       const std::vector<std::string>& references) {
  return corpus_chrf_multi(hypotheses, {references});
}

chrf_score corpus_chrf_multi(const std::vector<std::string>& hypotheses,
                             const std::vector<std::vector<std::string>>& reference_sets) {
  const segment_references references = gather_references("chrF", hypotheses, reference_sets);
  chrf_counts corpus;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const characters hypothesis_text = without_whitespace(hypotheses[i]);
    const auto hypothesis = count_grams(hypothesis_text);
    // The reference giving this segment the best F-score (the first of equals) counts.
    chrf_counts best;
    double best_f = -1;
    for (const std::string* reference : references.segments[i]) {
      const characters reference_text = without_whitespace(*reference);
      const chrf_counts counts = segment_counts(hypothesis, count_grams(reference_text));
      if (const double f = f_score(counts); f > best_f) {
        best_f = f;
        best = counts;
      }
    }
    for (size_t n = 0; n < char_order; ++n) {
      corpus[n].hypothesis += best[n].hypothesis;
      corpus[n].reference += best[n].reference;
      corpus[n].matches += best[n].matches;
    }
  }
  return {f_score(corpus), "nrefs:" + references.nrefs + "|case:mixed|eff:yes|nc:6|nw:0|space:no|version:" +
                               std::string(sacrebleu_version)};
}

}  // namespace attn::text
