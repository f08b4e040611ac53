// attn's own 5 × 7 pixel font (bitmap_font.cpp), for PNG pictures written without a font library.
#pragma once

#include <array>
#include <cstdint>

namespace attn::viz {

inline constexpr int glyph_width = 5, glyph_height = 7;

// Row r (0 = top) of the glyph, bit 4 the leftmost column. Characters outside printable ASCII
// get a box.
const std::array<uint8_t, 7>& glyph(char32_t c);

}  // namespace attn::viz
