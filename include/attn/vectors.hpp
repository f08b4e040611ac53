// Static word vectors (GloVe, word2vec, fastText, and attn's own .attnvec format).
//
// Formats read, detected from the content:
//   .attnvec  attn's binary format (magic "ATTNVEC1"), float32 or float16, mapped with mmap;
//   word2vec binary  header "count dim\n", then per record: word, ' ', dim little-endian floats;
//   word2vec / fastText .vec text  header "count dim", then "word v1 … vd" lines;
//   GloVe text  no header, "word v1 … vd" lines.
// A header is recognised only when the first line is exactly two integers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

enum class vectors_format { attnvec, word2vec_binary, word2vec_text, glove_text };

struct neighbor {
  int64_t index;
  float similarity;  // cosine
};

class vectors {
 public:
  vectors();
  ~vectors();
  vectors(vectors&&) noexcept;
  vectors& operator=(vectors&&) noexcept;

  // Loads any supported format. Throws attn::error (input) with the file and line/offset.
  // Duplicate words keep the first vector; each is reported through warnings(). The path
  // "default" is the embedded default (load_default()); a file named so is "./default".
  static vectors load(const std::string& path);
  // The embedded default: the 50,000 most frequent words of GloVe 6B 100d (float16).
  static vectors load_default();
  // Parses .attnvec bytes that stay alive elsewhere (no copy of float32 data).
  static vectors from_attnvec_bytes(std::span<const unsigned char> bytes, const std::string& source);
  // From words and row-major values (count × dim).
  static vectors from_values(std::vector<std::string> words, int64_t dim, std::vector<float> values);

  int64_t size() const;
  int64_t dim() const;
  vectors_format format() const;
  const std::string& source() const;  // path, or "<default>"
  const std::vector<std::string>& warnings() const;

  // The row of a word of the table, exactly as written.
  std::optional<int64_t> find(std::string_view word) const;
  std::string_view word(int64_t index) const;
  std::span<const float> vector(int64_t index) const;

  // The vector a token is read with (embed, neighbors, the Python module's v[token]): its own
  // row, or for a number the table lacks ("1990", "3.5", "-4", "1,000") the shared number
  // vector, the mean of the rows of "zero", "one" … "ten" that the table has; when it has none
  // of them, such a number is unknown too. The embedded GloVe has no number rows at all, so
  // every number reads as that mean there.
  std::optional<std::span<const float>> lookup(std::string_view token) const;

  // The k vocabulary words with the highest cosine similarity to v (ties by index).
  std::vector<neighbor> nearest(std::span<const float> v, int64_t k) const;

  // Writes the first `top` words (all when 0) as .attnvec, float32 or float16.
  std::string encode_attnvec(int64_t top = 0, bool float16 = false) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// The spelling; attn names its types in snake_case like the standard library.
using Vectors = vectors;

}  // namespace attn
