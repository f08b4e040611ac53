// The SVG heatmap as an element, for the standalone file and for inlining in the HTML page.
#pragma once

#include <string>

#include "attn/heatmap.hpp"

namespace attn::viz {

// An <svg> element (with its xmlns, so it is also a valid document body); the caller checks m.
std::string heatmap_svg_element(const heatmap& m);

}  // namespace attn::viz
