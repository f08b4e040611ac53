// Lowercasing by Unicode's simple case mapping (one code point to one, UnicodeData.txt's
// lowercase field) for the scripts with case that GloVe's vocabulary holds: Latin (Basic Latin,
// Latin-1 Supplement, Latin Extended-A and -B), Greek and Coptic, Cyrillic and its supplement,
// U+0000 to U+052F. Other code points are kept.
#pragma once

#include <string>
#include <string_view>

namespace attn::text {

// The simple lowercase of c, or c. Simple, so Σ is always σ (never the final ς) and İ is i.
// Left out: Ⱥ (U+023A) and Ⱦ (U+023E), whose lowercase letters lie in Latin Extended-C and take
// three UTF-8 bytes for their two: without them lowercasing never lengthens a text.
char32_t simple_lowercase(char32_t c);

// Lowercases UTF-8 text code point by code point. Bytes that are not well-formed UTF-8 are
// kept as they are; the result is never longer than the text.
std::string lowercase(std::string_view text);

}  // namespace attn::text
