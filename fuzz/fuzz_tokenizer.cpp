// The tokenizer on arbitrary text: no empty tokens, no ASCII whitespace inside a token, never
// more bytes out than in (lowercasing keeps lengths or shortens them, İ → i; quote normalisation
// shortens them), and valid UTF-8 in gives valid UTF-8 out (no multi-byte character cut in two).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/tokenizer.hpp"
#include "fuzz_check.hpp"
#include "io/vectors_readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> tokens = attn::tokenize(text);
  const bool utf8_in = attn::io::is_valid_utf8(text);
  size_t bytes = 0;
  for (const std::string& t : tokens) {
    attn::fuzz::require(!t.empty(), "no empty token");
    attn::fuzz::require(t.find_first_of(" \t\n\r\v\f") == std::string::npos,
                        "no ASCII whitespace inside a token");
    if (utf8_in) attn::fuzz::require(attn::io::is_valid_utf8(t), "UTF-8 in, UTF-8 out");
    bytes += t.size();
  }
  attn::fuzz::require(bytes <= size, "never more bytes out than in");
  return 0;
}
