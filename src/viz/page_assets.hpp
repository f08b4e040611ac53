// The CSS and JavaScript inlined into every HTML page, so the page needs nothing from a network.
#pragma once

namespace attn::viz {

extern const char* const page_css;
// Reads the JSON in <script id="attn-data"> and draws every view into <div id="app">
// (page_script.js, embedded at build time: page_script.S, page_script.cpp).
extern const char* const page_js;

}  // namespace attn::viz
