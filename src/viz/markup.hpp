// Text that goes into SVG and HTML: escaped, valid UTF-8, and numbers written one way.
#pragma once

#include <string>
#include <string_view>
#include <cstddef>

namespace attn::viz {

// Escapes & < > " ' and makes the text safe for XML 1.0: invalid UTF-8 bytes and control
// characters (which no XML parser accepts) become U+FFFD.
std::string escape(std::string_view text);

// The shortest text that reads back as the same float ("0.0749", "1e-07"): the exact value.
std::string exact(float v);
// A value with `decimals` decimals for tables and cells ("-inf" and "inf" kept readable).
std::string fixed(float v, int decimals);

// The floats' bytes (IEEE 754, little-endian, whatever the machine) in base64: how the page
// carries long arrays (JSON numbers would be three times the size).
std::string base64_floats(const float* values, size_t count);

// Columns a label takes (one per code point; tokens are rarely wide).
size_t code_points(std::string_view text);

}  // namespace attn::viz
