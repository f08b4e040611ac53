// UTF-8 as attn checks and shows it: where well-formed UTF-8 (no overlongs, no surrogates,
// nothing past U+10FFFF) first breaks, and text made safe to print on one line.
#pragma once

#include <string>
#include <string_view>

#include "attn/error.hpp"

namespace attn {

// The offset of the first byte that does not begin a well-formed sequence, or npos.
size_t first_invalid_utf8(std::string_view text);

// escape_for_message (attn/error.hpp) is defined beside it, in utf8.cpp.

}  // namespace attn
