#include "viz/png.hpp"

#include <zlib.h>

#include <algorithm>

#include "attn/error.hpp"
#include "viz/bitmap_font.hpp"

namespace attn::viz {

namespace {

// The code points of UTF-8 text; a byte that starts no valid sequence is one (drawn as a box).
std::vector<char32_t> code_points_of(std::string_view s) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    char32_t c = n == 1 ? b : b & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(c);
    i += n;
  }
  return out;
}

void put_u32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}

void chunk(std::string& out, const char* type, const std::string& data) {
  put_u32(out, static_cast<uint32_t>(data.size()));
  const std::string body = std::string(type, 4) + data;
  out += body;
  put_u32(out, static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(body.data()),
                                           static_cast<uInt>(body.size()))));
}

}  // namespace

int text_length(std::string_view utf8, int scale) {
  return static_cast<int>(code_points_of(utf8).size()) * (glyph_width + 1) * scale;
}

raster::raster(int width, int height, rgb fill)
    : width_(std::max(1, width)), height_(std::max(1, height)),
      pixels_(static_cast<size_t>(width_) * static_cast<size_t>(height_) * 3) {
  this->fill(0, 0, width_, height_, fill);
}

rgb raster::at(int x, int y) const {
  const size_t o = (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)) * 3;
  return {pixels_[o], pixels_[o + 1], pixels_[o + 2]};
}

void raster::fill(int x, int y, int w, int h, rgb c) {
  const int x0 = std::max(0, x), y0 = std::max(0, y), x1 = std::min(width_, x + w), y1 = std::min(height_, y + h);
  for (int yy = y0; yy < y1; ++yy)
    for (int xx = x0; xx < x1; ++xx) {
      const size_t o = (static_cast<size_t>(yy) * static_cast<size_t>(width_) + static_cast<size_t>(xx)) * 3;
      pixels_[o] = c.r;
      pixels_[o + 1] = c.g;
      pixels_[o + 2] = c.b;
    }
}

int raster::text(int x, int y, std::string_view utf8, int scale, rgb c, bool upward) {
  int along = 0;
  for (char32_t ch : code_points_of(utf8)) {
    const auto& rows = glyph(ch);
    for (int r = 0; r < glyph_height; ++r)
      for (int col = 0; col < glyph_width; ++col) {
        if (!((rows[static_cast<size_t>(r)] >> (glyph_width - 1 - col)) & 1)) continue;
        // Upward text: the glyph's columns run up the picture, its rows to the right.
        if (upward) fill(x + r * scale, y - (along + col + 1) * scale, scale, scale, c);
        else fill(x + (along + col) * scale, y + r * scale, scale, scale, c);
      }
    along += glyph_width + 1;
  }
  return along * scale;
}

std::string raster::png() const {
  // Each row: filter type 0 (none), then its RGB bytes; zlib-compressed into one IDAT chunk.
  std::string raw;
  raw.reserve(static_cast<size_t>(height_) * (static_cast<size_t>(width_) * 3 + 1));
  for (int y = 0; y < height_; ++y) {
    raw += '\0';
    raw.append(reinterpret_cast<const char*>(pixels_.data()) + static_cast<size_t>(y) * static_cast<size_t>(width_) * 3,
               static_cast<size_t>(width_) * 3);
  }
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &size, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), 6) != Z_OK)
    throw_usage("the picture is too large to compress as PNG");
  packed.resize(size);
  std::string out = "\x89PNG\r\n\x1a\n";
  std::string header;
  put_u32(header, static_cast<uint32_t>(width_));
  put_u32(header, static_cast<uint32_t>(height_));
  header += std::string("\x08\x02\x00\x00\x00", 5);  // 8 bits, RGB, deflate, no filter choice, no interlace
  chunk(out, "IHDR", header);
  chunk(out, "IDAT", packed);
  chunk(out, "IEND", "");
  return out;
}

}  // namespace attn::viz
