// Base64 (RFC 4648, with padding): how a model file carries bytes in its JSON metadata (a
// translator's piece model).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace attn::io {

std::string base64_encode(std::string_view bytes);
// The bytes, or nothing when the text is not canonical padded base64 (a character outside the
// alphabet, a length not a multiple of 4, misplaced padding).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace attn::io
