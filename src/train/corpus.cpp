#include "train/corpus.hpp"
#include <fmt/format.h>

#include <algorithm>

#include "attn/error.hpp"
#include "attn/text_file.hpp"
#include "io/read_file.hpp"

namespace attn::train {

std::vector<std::vector<std::string>> split_sequences(const std::string& line, int64_t max_length,
                                                      const text::text_tokenizer& tokenizer) {
  std::vector<std::vector<std::string>> out;
  if (max_length == 0) {  // the whole line, one paragraph
    std::vector<std::string> tokens = tokenizer.tokens(line);
    if (!tokens.empty()) out.push_back(std::move(tokens));
    return out;
  }
  std::vector<std::string> sentence;
  const auto flush = [&] {
    // A long sentence becomes pieces of at most max_length tokens.
    for (size_t begin = 0; begin < sentence.size(); begin += static_cast<size_t>(max_length)) {
      const size_t end = std::min(sentence.size(), begin + static_cast<size_t>(max_length));
      out.emplace_back(sentence.begin() + static_cast<std::ptrdiff_t>(begin),
                       sentence.begin() + static_cast<std::ptrdiff_t>(end));
    }
    sentence.clear();
  };
  for (std::string& t : tokenizer.tokens(line)) {
    const bool end = t == "." || t == "!" || t == "?";
    sentence.push_back(std::move(t));
    if (end) flush();
  }
  flush();
  return out;
}

corpus_reader::corpus_reader(std::string path, int64_t max_length, text::text_tokenizer tokenizer)
    : path_(std::move(path)), max_length_(max_length), tokenizer_(std::move(tokenizer)), lines_(path_) {}

bool corpus_reader::read_line() {
  std::string line;
  while (true) {
    line_offset_ = lines_.offset();
    if (!lines_.next(line)) return false;
    next_offset_ = lines_.offset();
    ++line_;
    // Found while reading (the survey reads the whole file before training starts), so a run
    // never trains for an hour and then fails to save words that are not UTF-8.
    check_utf8(line, path_, line_known_ ? line_ : 0, line_offset_);
    pending_ = split_sequences(line, max_length_, tokenizer_);
    taken_ = 0;
    if (!pending_.empty()) return true;
  }
}

bool corpus_reader::next(std::vector<std::string>& tokens) {
  if (taken_ == pending_.size() && !read_line()) return false;
  tokens = std::move(pending_[taken_++]);
  ++sequence_;
  return true;
}

corpus_position corpus_reader::position() const {
  // Mid-line: the line's start and how many of its sequences are done; else the next line.
  if (taken_ < pending_.size())
    return {line_offset_, static_cast<int64_t>(taken_), sequence_};
  return {next_offset_, 0, sequence_};
}

void corpus_reader::seek(const corpus_position& p) {
  lines_.seek(p.offset);
  next_offset_ = p.offset;
  line_ = 0;
  line_known_ = p.offset == 0;
  pending_.clear();
  taken_ = 0;
  sequence_ = p.sequence - p.skip;
  std::vector<std::string> skipped;
  for (int64_t i = 0; i < p.skip; ++i)
    if (!next(skipped)) throw_input(path_, "the file ends before a saved position (has it changed?)");
}

}  // namespace attn::train
