#include "text/bleu.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <utility>

#include "attn/error.hpp"
#include "text/python_split.hpp"
#include "text/segment_references.hpp"

namespace attn::text {

namespace {

constexpr size_t max_order = 4;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The ASCII punctuation that 13a always splits off: every printable non-alphanumeric ASCII
// character but ' , - . (the space is in mteval's class too, which changes nothing).
bool is_split_punctuation(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 0x21 && u <= 0x26) || (u >= 0x28 && u <= 0x2B) || u == '/' ||
         (u >= 0x3A && u <= 0x40) || (u >= 0x5B && u <= 0x60) || (u >= 0x7B && u <= 0x7E);
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  std::string out;
  size_t start = 0;
  for (size_t at; (at = text.find(from, start)) != std::string::npos; start = at + from.size())
    out.append(text, start, at - start).append(to);
  out.append(text, start);
  text = std::move(out);
}

// One of mteval's two-character rules: where matches(text[i], text[i+1]), write rewrite(a, b)
// and go on after both, as a regular expression's substitution consumes its match. Bytes give
// what Python's code points give: the rules test ASCII only, and each byte of a multi-byte
// character is, like the character, neither a digit nor "." "," "-".
template <typename Match, typename Rewrite>
std::string apply_pair_rule(const std::string& text, Match matches, Rewrite rewrite) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  size_t i = 0;
  while (i < text.size()) {
    if (i + 1 < text.size() && matches(text[i], text[i + 1])) {
      rewrite(out, text[i], text[i + 1]);
      i += 2;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

bool is_period_or_comma(char c) { return c == '.' || c == ','; }

// n-gram → count, for every order 1..4; an n-gram is its tokens joined by single spaces.
using ngram_counts = std::unordered_map<std::string, size_t>;

ngram_counts count_ngrams(const std::vector<std::string_view>& tokens) {
  ngram_counts counts;
  for (size_t n = 1; n <= max_order; ++n)
    for (size_t i = 0; i + n <= tokens.size(); ++i) {
      std::string gram(tokens[i]);
      for (size_t k = 1; k < n; ++k) gram.append(" ").append(tokens[i + k]);
      ++counts[gram];
    }
  return counts;
}

size_t order_of(const std::string& gram) {
  size_t spaces = 0;
  for (char c : gram) spaces += c == ' ';
  return spaces + 1;
}

struct corpus_counts {
  std::array<size_t, max_order> matches{}, totals{};
  size_t sys_len = 0, ref_len = 0;
};

void add_segment(corpus_counts& corpus, const std::string& hypothesis,
                 const std::vector<const std::string*>& references) {
  const std::string hypothesis_text = tokenize_13a(hypothesis);
  const auto hypothesis_tokens = split_on_whitespace(hypothesis_text);
  const size_t hypothesis_length = hypothesis_tokens.size();

  // Each n-gram may match as often as the reference holding it most often has it; the
  // reference length is the one closest to the hypothesis's, the shorter on a tie.
  ngram_counts most_in_a_reference;
  size_t closest_length = 0, closest_distance = 0;
  bool first = true;
  for (const std::string* reference : references) {
    const std::string reference_text = tokenize_13a(*reference);
    const auto tokens = split_on_whitespace(reference_text);
    for (const auto& [gram, count] : count_ngrams(tokens)) {
      size_t& most = most_in_a_reference[gram];
      if (count > most) most = count;
    }
    const size_t length = tokens.size();
    const size_t distance =
        length > hypothesis_length ? length - hypothesis_length : hypothesis_length - length;
    if (first || distance < closest_distance ||
        (distance == closest_distance && length < closest_length)) {
      closest_length = length;
      closest_distance = distance;
      first = false;
    }
  }

  for (const auto& [gram, count] : count_ngrams(hypothesis_tokens)) {
    const size_t n = order_of(gram) - 1;
    corpus.totals[n] += count;
    if (auto it = most_in_a_reference.find(gram); it != most_in_a_reference.end())
      corpus.matches[n] += std::min(count, it->second);
  }
  corpus.sys_len += hypothesis_length;
  corpus.ref_len += closest_length;
}

bleu_score score_from_counts(const corpus_counts& corpus, const std::string& nrefs) {
  bleu_score result;
  result.matches = corpus.matches;
  result.totals = corpus.totals;
  result.sys_len = corpus.sys_len;
  result.ref_len = corpus.ref_len;
  result.ratio = corpus.ref_len > 0
                     ? static_cast<double>(corpus.sys_len) / static_cast<double>(corpus.ref_len)
                     : 0.0;
  result.signature = "nrefs:" + nrefs + "|case:mixed|eff:no|tok:13a|smooth:exp|version:" +
                     std::string(sacrebleu_version);

  const auto sys = static_cast<double>(corpus.sys_len);
  const auto ref = static_cast<double>(corpus.ref_len);
  result.brevity_penalty = sys < ref ? (sys > 0 ? std::exp(1.0 - ref / sys) : 0.0) : 1.0;

  bool any_match = false;
  for (size_t m : corpus.matches) any_match |= m > 0;
  if (!any_match) return result;  // score and precisions 0

  // exp smoothing: the k-th order without a match (k = 1, 2, …) counts 1 / 2^k matches. An
  // order with no hypothesis n-gram at all (a corpus shorter than 4 tokens) stays 0, and so,
  // as in sacreBLEU, does the score.
  double smoothing = 1.0;
  for (size_t n = 0; n < max_order; ++n) {
    const auto total = static_cast<double>(corpus.totals[n]);
    if (corpus.totals[n] == 0) break;
    if (corpus.matches[n] == 0) {
      smoothing *= 2.0;
      result.precisions[n] = 100.0 / (smoothing * total);
    } else {
      result.precisions[n] = 100.0 * static_cast<double>(corpus.matches[n]) / total;
    }
  }
  double log_sum = 0.0;
  for (double p : result.precisions) {
    if (p == 0.0) return result;  // log 0: the geometric mean is 0
    log_sum += std::log(p);
  }
  result.score = result.brevity_penalty * std::exp(log_sum / max_order);
  return result;
}

}  // namespace

std::string tokenize_13a(std::string_view segment) {
  // sacreBLEU strips trailing whitespace before tokenizing (so a final "-\n" stays "-").
  size_t end = 0;
  for (size_t i = 0; i < segment.size();) {
    if (const size_t space = whitespace_length(segment, i)) {
      i += space;
      continue;
    }
    i += code_point_length(segment, i);
    end = i;
  }
  std::string text(segment.substr(0, end));

  replace_all(text, "<skipped>", "");
  replace_all(text, "-\n", "");
  replace_all(text, "\n", " ");
  replace_all(text, "&quot;", "\"");
  replace_all(text, "&amp;", "&");
  replace_all(text, "&lt;", "<");
  replace_all(text, "&gt;", ">");

  std::string spaced = " ";
  for (char c : text) {
    if (is_split_punctuation(c)) {
      spaced.push_back(' ');
      spaced.push_back(c);
      spaced.push_back(' ');
    } else {
      spaced.push_back(c);
    }
  }
  spaced.push_back(' ');

  // "." and "," after a non-digit; then before a non-digit; then "-" after a digit.
  spaced = apply_pair_rule(
      spaced, [](char a, char b) { return !is_digit(a) && is_period_or_comma(b); },
      [](std::string& out, char a, char b) {
        out.append({a, ' ', b, ' '});
      });
  spaced = apply_pair_rule(
      spaced, [](char a, char b) { return is_period_or_comma(a) && !is_digit(b); },
      [](std::string& out, char a, char b) {
        out.append({' ', a, ' ', b});
      });
  spaced = apply_pair_rule(
      spaced, [](char a, char b) { return is_digit(a) && b == '-'; },
      [](std::string& out, char a, char b) {
        out.append({a, ' ', b, ' '});
      });

  std::string tokens;
  for (std::string_view word : split_on_whitespace(spaced)) {
    if (!tokens.empty()) tokens.push_back(' ');
    tokens.append(word);
  }
  return tokens;
}

bleu_score corpus_bleu(const std::vector<std::string>& hypotheses,
                       const std::vector<std::string>& references) {
  return corpus_bleu_multi(hypotheses, {references});
}

bleu_score corpus_bleu_multi(const std::vector<std::string>& hypotheses,
                             const std::vector<std::vector<std::string>>& reference_sets) {
  const segment_references references = gather_references("BLEU", hypotheses, reference_sets);
  corpus_counts corpus;
  for (size_t i = 0; i < hypotheses.size(); ++i) add_segment(corpus, hypotheses[i], references.segments[i]);
  return score_from_counts(corpus, references.nrefs);
}

}  // namespace attn::text
