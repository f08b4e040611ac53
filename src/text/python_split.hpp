// Text cut the way Python's str cuts it: by code point, and at whitespace as str.split() knows
// it. sacreBLEU's BLEU and chrF are defined on Python strings, so attn's own BLEU and chrF
// (text/bleu.hpp, text/chrf.hpp) cut UTF-8 the same way to give the same counts.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace attn::text {

// The byte length of the code point that starts at text[i] (i < text.size()): 2 to 4 for a lead
// byte followed by enough continuation bytes, else 1, so a stray byte counts as one character.
size_t code_point_length(std::string_view text, size_t i);

// The byte length of the whitespace code point at text[i], or 0. Whitespace is what Python's
// str.isspace() accepts: \t \n \v \f \r, U+001C…U+001F, space, U+0085, U+00A0, U+1680,
// U+2000…U+200A, U+2028, U+2029, U+202F, U+205F and U+3000.
size_t whitespace_length(std::string_view text, size_t i);

// The words of text, as str.split() with no argument gives them (no empty words).
std::vector<std::string_view> split_on_whitespace(std::string_view text);

}  // namespace attn::text
