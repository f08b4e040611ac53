// A raster picture and its PNG encoding (8-bit RGB, zlib from Debian): what attn heatmap -o x.png
// writes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "viz/color_scale.hpp"

namespace attn::viz {

class raster {
 public:
  raster(int width, int height, rgb fill = {255, 255, 255});
  int width() const { return width_; }
  int height() const { return height_; }
  rgb at(int x, int y) const;
  void fill(int x, int y, int w, int h, rgb c);  // clipped to the picture
  // UTF-8 text in the bitmap font, `scale` pixels a font pixel, its top-left corner at (x, y);
  // `upward`: turned a quarter left, running up from (x, y), its top at the left. Returns the
  // length drawn, in pixels.
  int text(int x, int y, std::string_view utf8, int scale, rgb c, bool upward = false);
  std::string png() const;  // the PNG file's bytes

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;  // RGB rows
};

// Pixels a text takes along its line at `scale` (6 font pixels a character: 5 and a gap).
int text_length(std::string_view utf8, int scale);

}  // namespace attn::viz
