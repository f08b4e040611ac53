// The binary word2vec loader. Random bytes rarely start with a valid "count dim" header, so the
// first two bytes choose a small one and the rest are the records; the loader takes the binary
// path whenever the first record is not text.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "attn/error.hpp"
#include "fuzz_check.hpp"
#include "io/vectors_readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int count = data[0] % 16 + 1, dim = data[1] % 32 + 1;
  std::string file = std::to_string(count) + " " + std::to_string(dim) + "\n";
  file.append(reinterpret_cast<const char*>(data + 2), size - 2);
  try {
    const attn::io::parsed_vectors v = attn::io::parse_word_vectors(file, "fuzz");
    attn::fuzz::require(v.dim == dim, "the header's dim");
    attn::fuzz::require(v.words.size() <= static_cast<size_t>(count), "at most count words");
    attn::fuzz::require(v.values.size() == v.words.size() * static_cast<size_t>(dim),
                        "count × dim values");
    for (float x : v.values) attn::fuzz::require(std::isfinite(x), "every value is finite");
  } catch (const attn::error& e) {
    attn::fuzz::require(e.kind() == attn::error_kind::input, "a bad file is an input error");
  }
  return 0;
}
