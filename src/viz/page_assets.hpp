// The CSS and JavaScript inlined into every HTML page, so the page needs nothing from a network.
#pragma once

namespace attn::viz {

extern const char* const page_css;
// Reads the JSON in <script id="attn-data">, draws the head view into <svg id="head-view">,
// and links it with the heatmap and the head selector.
extern const char* const head_view_js;

}  // namespace attn::viz
