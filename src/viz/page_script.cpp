// The page's script is src/viz/page_script.js, embedded by page_script.S. It draws every view
// from the JSON the page holds (heatmap_html.cpp writes it): the model view (every layer × head),
// the heatmap (a canvas that zooms and scrolls), the head view (several heads overlaid), the
// neuron view (one query's arithmetic) and the predictions per layer, and exports each as SVG or
// PNG. Every byte of the .js goes into the page as it stands, comments too: it must never hold
// "</" (the page's <script> element would end there), and tests/js/ checks that and lints it.
#include "viz/page_assets.hpp"

extern "C" __attribute__((visibility("hidden"))) const char attn_page_script[];

namespace attn::viz {

const char* const page_js = attn_page_script;

}  // namespace attn::viz
