// What the word-vector readers hand to attn::vectors (src/io/vectors.cpp), and the small helpers
// they share. Internal to the library.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/vectors.hpp"

namespace attn::io {

// A parsed GloVe / word2vec / fastText file. The words view the input bytes, so those must stay
// alive until vectors has copied them.
struct parsed_vectors {
  vectors_format format = vectors_format::glove_text;
  int64_t dim = 0;
  std::vector<std::string_view> words;  // duplicates already dropped (and warned about)
  std::vector<float> values;            // words.size() × dim, row-major
  std::vector<std::string> warnings;
};

// GloVe text, word2vec / fastText text or word2vec binary, told apart by the content.
// Throws attn::error (input) naming `source` and the line or record.
parsed_vectors parse_word_vectors(std::string_view bytes, const std::string& source);

// A checked .attnvec file: every header field, the word table and the exact file size.
struct attnvec_contents {
  uint32_t dtype = 0;  // attnvec::dtype_f32 or attnvec::dtype_f16
  int64_t count = 0, dim = 0;
  std::vector<std::string_view> words;  // view the input bytes
  const unsigned char* values = nullptr;  // count × dim little-endian values inside the input
};

attnvec_contents read_attnvec(std::span<const unsigned char> bytes, const std::string& source);

// a × b, or false when it does not fit (sizes in headers come from untrusted files).
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t& out) {
  if (a != 0 && b > UINT64_MAX / a) return false;
  out = a * b;
  return true;
}

// Well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool is_valid_utf8(std::string_view text);

// The "duplicate word" warnings: the first few in full, then one line counting the rest, so a
// file with thousands of repeats does not drown the terminal.
class duplicate_log {
 public:
  static constexpr int max_listed = 10;

  explicit duplicate_log(std::string source) : source_(std::move(source)) {}

  void add(std::string_view word, const std::string& where) {
    if (++count_ <= max_listed)
      warnings_.push_back(source_ + ": duplicate word '" + std::string(word) + "' at " + where +
                          " kept the first");
  }

  std::vector<std::string> finish() {
    if (count_ > max_listed)
      warnings_.push_back(source_ + ": " + std::to_string(count_ - max_listed) +
                          " more duplicate words, each kept the first");
    return std::move(warnings_);
  }

 private:
  std::string source_;
  int64_t count_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace attn::io
