#include "viz/color_scale.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace attn::viz {

namespace {

// Anchor colours, evenly spaced in t, linear in sRGB between them. Light colours take the first
// half so that the many small weights of a long sentence stay distinguishable from zero.
constexpr std::array<rgb, 5> anchors = {{
    {255, 255, 255},
    {222, 235, 248},
    {143, 188, 230},
    {58, 127, 196},
    {11, 47, 102},
}};

}  // namespace

color_scale color_scale::fitting(std::span<const float> values) {
  double lo = 0, hi = -std::numeric_limits<double>::infinity();
  for (float v : values) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, double(v));
    hi = std::max(hi, double(v));
  }
  // An all-zero (or empty) matrix still needs a scale with some width.
  if (!(hi > lo)) hi = lo + 1;
  return {lo, hi};
}

double color_scale::position(double v) const {
  if (std::isnan(v)) return std::numeric_limits<double>::quiet_NaN();
  return std::clamp((v - lo) / (hi - lo), 0.0, 1.0);
}

rgb color_scale::color(double v) const {
  double t = position(v);
  if (std::isnan(t)) return {160, 160, 160};
  return color_at(t);
}

bool color_scale::is_dark(double v) const { return viz::is_dark(color(v)); }

rgb color_at(double t) {
  t = std::clamp(t, 0.0, 1.0) * double(anchors.size() - 1);
  size_t i = std::min(static_cast<size_t>(t), anchors.size() - 2);
  double f = t - double(i);
  auto mix = [f](uint8_t a, uint8_t b) {
    return static_cast<uint8_t>(std::lround(a + (b - a) * f));
  };
  const rgb& a = anchors[i];
  const rgb& b = anchors[i + 1];
  return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

std::string hex(rgb c) { return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b); }

int ansi256(rgb c) {
  // The cube's six levels per channel are 0, 95, 135, 175, 215, 255 (xterm), not evenly spaced.
  constexpr std::array<int, 6> levels = {0, 95, 135, 175, 215, 255};
  auto nearest = [&](int v) {
    int best = 0;
    for (int i = 1; i < 6; ++i)
      if (std::abs(levels[i] - v) < std::abs(levels[best] - v)) best = i;
    return best;
  };
  return 16 + 36 * nearest(c.r) + 6 * nearest(c.g) + nearest(c.b);
}

bool is_dark(rgb c) {
  // Relative luminance with the sRGB weights; below about half, white text reads better.
  double y = 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b;
  return y < 140;
}

}  // namespace attn::viz
