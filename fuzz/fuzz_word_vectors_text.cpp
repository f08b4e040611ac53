// The text word-vector loader (GloVe without a header, word2vec and fastText .vec with a
// "count dim" header; binary word2vec when the first record is not text) on arbitrary bytes.
// Whatever it accepts is a consistent table: count × dim finite values, distinct UTF-8 words.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_set>

#include "attn/error.hpp"
#include "fuzz_check.hpp"
#include "io/vectors_readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const attn::io::parsed_vectors v = attn::io::parse_word_vectors(bytes, "fuzz");
    attn::fuzz::require(v.dim > 0 && !v.words.empty(), "a loaded table is not empty");
    attn::fuzz::require(v.values.size() == v.words.size() * static_cast<size_t>(v.dim),
                        "count × dim values");
    for (float x : v.values) attn::fuzz::require(std::isfinite(x), "every value is finite");
    std::unordered_set<std::string_view> seen;
    for (std::string_view w : v.words) {
      attn::fuzz::require(!w.empty() && attn::io::is_valid_utf8(w), "words are UTF-8");
      attn::fuzz::require(seen.insert(w).second, "duplicates were dropped");
    }
  } catch (const attn::error& e) {
    attn::fuzz::require(e.kind() == attn::error_kind::input, "a bad file is an input error");
  }
  return 0;
}
