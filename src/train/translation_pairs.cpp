// Reading, encoding and batching translation pairs (see translation_pairs.hpp).
#include "train/translation_pairs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "attn/error.hpp"
#include "attn/text_file.hpp"
#include "attn/translation_model.hpp"
#include "io/text_lines.hpp"
#include "train/rng.hpp"

namespace attn::train {

std::vector<sentence_pair> read_pairs(const std::string& source, const std::string& target) {
  io::text_lines sources(source), targets(target);
  std::vector<sentence_pair> pairs;
  std::string s, t;
  for (;;) {
    const bool more_source = sources.next(s), more_target = targets.next(t);
    if (more_source != more_target) {
      int64_t rest = 0;  // the longer file's lines past the shorter one's end
      for (std::string line; (more_source ? sources : targets).next(line);) ++rest;
      const auto longer = static_cast<int64_t>(pairs.size()) + 1 + rest;
      throw_input(more_source ? source : target,
                  fmt::format("{} lines, but {} has {} (the files must be aligned by line)", longer,
                              more_source ? target : source, pairs.size()));
    }
    if (!more_source) break;
    const auto number = static_cast<int64_t>(pairs.size()) + 1;
    check_utf8(s, source, number);
    check_utf8(t, target, number);
    for (std::string* line : {&s, &t})  // (CRLF files)
      if (!line->empty() && line->back() == '\r') line->pop_back();
    pairs.push_back({std::move(s), std::move(t)});
  }
  if (pairs.empty()) throw_input(source, "no sentence pairs (the files are empty)");
  return pairs;
}

std::vector<sentence_pair> read_tab_separated_pairs(const std::string& path) {
  io::text_lines lines(path);
  std::vector<sentence_pair> pairs;
  int64_t number = 0;
  for (std::string line; lines.next(line);) {
    ++number;
    check_utf8(line, path, number);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines between pairs
    const size_t tab = line.find('\t');
    if (tab == std::string::npos)
      throw_input(path, "a line without a tab (expected source<TAB>target)", fmt::format("line {}", number));
    const size_t end = line.find('\t', tab + 1);  // Tatoeba's exports carry more columns: the first two count
    pairs.push_back({line.substr(0, tab), line.substr(tab + 1, end == std::string::npos ? end : end - tab - 1)});
  }
  if (pairs.empty()) throw_input(path, "no sentence pairs");
  return pairs;
}

}  // namespace attn::train

namespace attn {

sentence_pairs read_sentence_pairs(const std::string& source, const std::string& target) {
  sentence_pairs out;
  for (train::sentence_pair& p : target.empty() ? train::read_tab_separated_pairs(source) : train::read_pairs(source, target)) {
    out.sources.push_back(std::move(p.source));
    out.targets.push_back(std::move(p.target));
  }
  return out;
}

}  // namespace attn

namespace attn::train {

encoded_pairs encode_pairs(const std::vector<sentence_pair>& pairs, const text::subword_pieces& pieces,
                           int64_t max_length) {
  encoded_pairs out;
  const auto encode = [&](const std::string& text) {
    const std::vector<int32_t> ids = pieces.encode(text);
    std::vector<int64_t> with_end(ids.begin(), ids.end());
    with_end.push_back(text::subword_pieces::end);
    return with_end;
  };
  for (const sentence_pair& p : pairs) {
    encoded_pair e{encode(p.source), encode(p.target)};
    if (e.source.size() == 1 || e.target.size() == 1) {  // only </s>: nothing to translate
      ++out.empty;
      continue;
    }
    if (static_cast<int64_t>(std::max(e.source.size(), e.target.size())) > max_length) {
      ++out.too_long;
      continue;
    }
    out.pairs.push_back(std::move(e));
  }
  return out;
}

std::vector<std::vector<int64_t>> length_batches(const std::vector<encoded_pair>& pairs, int64_t max_tokens,
                                                 uint64_t seed) {
  std::vector<int64_t> order(pairs.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const encoded_pair& x = pairs[static_cast<size_t>(a)];
    const encoded_pair& y = pairs[static_cast<size_t>(b)];
    return std::pair(x.target.size(), x.source.size()) < std::pair(y.target.size(), y.source.size());
  });
  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> batch;
  size_t longest_source = 0, longest_target = 0;
  for (int64_t i : order) {
    const encoded_pair& p = pairs[static_cast<size_t>(i)];
    const size_t source = std::max(longest_source, p.source.size()), target = std::max(longest_target, p.target.size());
    const auto padded = static_cast<int64_t>((batch.size() + 1) * (source + target + 1));
    if (!batch.empty() && padded > max_tokens) {
      batches.push_back(std::move(batch));
      batch.clear();
      longest_source = longest_target = 0;
    }
    batch.push_back(i);
    longest_source = std::max(longest_source, p.source.size());
    longest_target = std::max(longest_target, p.target.size());
  }
  if (!batch.empty()) batches.push_back(std::move(batch));
  rng r(seed);
  r.shuffle(batches);
  return batches;
}

models::translation_batch make_translation_batch(const std::vector<encoded_pair>& pairs,
                                                 std::span<const int64_t> indices) {
  models::translation_batch b;
  b.size = static_cast<int64_t>(indices.size());
  for (int64_t i : indices) {
    const encoded_pair& p = pairs[static_cast<size_t>(i)];
    b.source_length = std::max(b.source_length, static_cast<int64_t>(p.source.size()));
    b.target_length = std::max(b.target_length, static_cast<int64_t>(p.target.size()));
  }
  b.source.assign(static_cast<size_t>(b.size * b.source_length), -1);
  b.target_in.assign(static_cast<size_t>(b.size * b.target_length), -1);
  b.target_out.assign(b.target_in.size(), -1);
  for (int64_t k = 0; k < b.size; ++k) {
    const encoded_pair& p = pairs[static_cast<size_t>(indices[static_cast<size_t>(k)])];
    std::copy(p.source.begin(), p.source.end(), b.source.begin() + k * b.source_length);
    b.source_lengths.push_back(static_cast<int64_t>(p.source.size()));
    // in: <s> y₁ … y_n; out: y₁ … y_n </s> (p.target holds y and </s>)
    const auto row = static_cast<size_t>(k * b.target_length);
    b.target_in[row] = text::subword_pieces::begin;
    for (size_t t = 0; t + 1 < p.target.size(); ++t) b.target_in[row + t + 1] = p.target[t];
    std::copy(p.target.begin(), p.target.end(), b.target_out.begin() + static_cast<std::ptrdiff_t>(row));
  }
  return b;
}

}  // namespace attn::train
