// The one colour scale every attention picture uses (SVG, HTML, the terminal), so a weight looks
// the same wherever it is shown: white for 0 through blues to a dark navy for the largest value.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace attn::viz {

struct rgb {
  uint8_t r, g, b;
};

// Maps values in [lo, hi] onto the scale; values outside are clamped, NaN is grey.
struct color_scale {
  double lo = 0, hi = 1;

  // The scale for a set of values: lo = min(0, smallest), hi = the largest (above lo).
  // Non-finite values are ignored (a -inf score is a masked one, drawn as lo).
  static color_scale fitting(std::span<const float> values);

  double position(double v) const;  // 0 … 1 along the scale
  rgb color(double v) const;
  bool is_dark(double v) const;     // true when text on this colour should be white
};

rgb color_at(double t);          // t in [0, 1]
std::string hex(rgb c);          // "#0b2f66"
int ansi256(rgb c);              // nearest colour of the 6×6×6 cube (16 … 231)
bool is_dark(rgb c);

}  // namespace attn::viz
