#include "text/python_split.hpp"

namespace attn::text {

size_t code_point_length(std::string_view text, size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const size_t length = lead >= 0xF0 && lead <= 0xF4   ? 4
                        : lead >= 0xE0 && lead <= 0xEF ? 3
                        : lead >= 0xC2 && lead <= 0xDF ? 2
                                                       : 1;
  if (i + length > text.size()) return 1;
  for (size_t k = 1; k < length; ++k)
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0u) != 0x80u) return 1;
  return length;
}

size_t whitespace_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) {
    return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u;
  };
  const unsigned b0 = byte(0);
  if ((b0 >= 0x09 && b0 <= 0x0D) || (b0 >= 0x1C && b0 <= 0x20)) return 1;
  if (b0 == 0xC2 && (byte(1) == 0x85 || byte(1) == 0xA0)) return 2;  // U+0085, U+00A0
  if (b0 == 0xE1 && byte(1) == 0x9A && byte(2) == 0x80) return 3;    // U+1680
  if (b0 == 0xE3 && byte(1) == 0x80 && byte(2) == 0x80) return 3;    // U+3000
  if (b0 == 0xE2 && byte(1) == 0x80) {
    const unsigned b2 = byte(2);  // U+2000…U+200A, U+2028, U+2029, U+202F
    if ((b2 >= 0x80 && b2 <= 0x8A) || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF) return 3;
  }
  if (b0 == 0xE2 && byte(1) == 0x81 && byte(2) == 0x9F) return 3;  // U+205F
  return 0;
}

std::vector<std::string_view> split_on_whitespace(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    if (const size_t space = whitespace_length(text, i)) {
      i += space;
      continue;
    }
    const size_t start = i;
    while (i < text.size() && whitespace_length(text, i) == 0) i += code_point_length(text, i);
    words.push_back(text.substr(start, i - start));
  }
  return words;
}

}  // namespace attn::text
