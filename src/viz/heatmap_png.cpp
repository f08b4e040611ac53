// The heatmap as a PNG, for papers and slides: the SVG's picture (a panel per head, labels on
// both axes, a colour legend) drawn in pixels with attn's bitmap font, at twice its size.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/heatmap.hpp"
#include "viz/bitmap_font.hpp"
#include "viz/color_scale.hpp"
#include "viz/png.hpp"

namespace attn {

namespace {

constexpr int font_scale = 2;                                   // a font pixel is 2 × 2
constexpr int line = (viz::glyph_height + 3) * font_scale;      // a label's height with its gap
constexpr int margin = 24, gap = 40, max_label_chars = 16;

// Labels longer than the room get cut, with a final "." saying so.
std::string fitted(const std::string& label) {
  std::vector<size_t> starts;  // where each code point begins
  for (size_t i = 0; i < label.size(); ++i)
    if ((static_cast<unsigned char>(label[i]) & 0xC0) != 0x80) starts.push_back(i);
  if (starts.size() <= static_cast<size_t>(max_label_chars)) return label;
  return label.substr(0, starts[max_label_chars - 1]) + ".";
}

int longest(const std::vector<std::string>& labels) {
  int most = 1;
  for (const auto& l : labels) most = std::max(most, viz::text_length(fitted(l), font_scale));
  return most;
}

}  // namespace

std::string render_heatmap_png(const heatmap& m) {
  check_heatmap(m);
  std::vector<float> all;
  for (const auto& head : m.heads) {
    const tensor w = head.weights.contiguous();
    all.insert(all.end(), w.data(), w.data() + w.numel());
  }
  const viz::color_scale scale = viz::color_scale::fitting(all);
  const auto rows = static_cast<int>(m.queries.size()), cols = static_cast<int>(m.keys.size());
  const int cell = std::clamp(960 / std::max({rows, cols, 1}), 3, 80);
  // Every label when a cell is as tall as one; otherwise every k-th, so that none overlap.
  const int every = (line + cell - 1) / cell;
  const int row_labels = longest(m.queries) + 12, col_labels = longest(m.keys) + 12;
  const int heading = m.heads.size() > 1 ? line + 8 : 0;
  const int panel_w = row_labels + cols * cell, panel_h = heading + col_labels + rows * cell;
  const int per_row = static_cast<int>(std::min<size_t>(m.heads.size(), 4));
  const int panel_rows = static_cast<int>((m.heads.size() + 3) / 4);
  const int title_h = line + 16;
  const int legend_x = margin + per_row * panel_w + (per_row - 1) * gap + 24;
  const int legend_h = std::clamp(rows * cell, 160, 480);
  const int width = std::max(legend_x + 16 * font_scale / 2 + 12 + viz::text_length("0.000", font_scale) + margin,
                             2 * margin + viz::text_length(m.title, font_scale));
  const int height = std::max(margin + title_h + panel_rows * panel_h + (panel_rows - 1) * gap + margin,
                              margin + title_h + heading + col_labels + legend_h + margin);
  viz::raster r(width, height);
  const viz::rgb ink{34, 34, 34};
  r.text(margin, margin, m.title, font_scale, ink);
  for (size_t h = 0; h < m.heads.size(); ++h) {
    const int px = margin + static_cast<int>(h % 4) * (panel_w + gap);
    const int py = margin + title_h + static_cast<int>(h / 4) * (panel_h + gap);
    const int gx = px + row_labels, gy = py + heading + col_labels;
    if (heading > 0) r.text(gx, py, m.heads[h].name, font_scale, ink);
    const tensor w = m.heads[h].weights.contiguous();
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) {
        const float v = w.data()[i * cols + j];
        // A hairline of white between cells large enough to spare it, as the SVG draws them.
        const int inset = cell >= 8 ? 1 : 0;
        r.fill(gx + j * cell, gy + i * cell, cell - inset, cell - inset, scale.color(v));
      }
    const int half = viz::glyph_height * font_scale / 2;
    for (int i = 0; i < rows; i += every) {
      const std::string label = fitted(m.queries[static_cast<size_t>(i)]);
      r.text(gx - 8 - viz::text_length(label, font_scale), gy + i * cell + cell / 2 - half, label, font_scale, ink);
    }
    for (int j = 0; j < cols; j += every)
      r.text(gx + j * cell + cell / 2 - half, gy - 8, fitted(m.keys[static_cast<size_t>(j)]), font_scale, ink, true);
  }
  // The legend: the scale's colours from the largest value (top) to the smallest.
  const int top = margin + title_h + heading + col_labels;
  r.text(legend_x, top - 2 * line, "weight", font_scale, ink);
  for (int y = 0; y < legend_h; ++y)
    r.fill(legend_x, top + y, 16, 1, viz::color_at(1.0 - (y + 0.5) / legend_h));
  for (double t : {1.0, 0.5, 0.0}) {
    const double value = scale.lo + t * (scale.hi - scale.lo);
    r.text(legend_x + 24, top + static_cast<int>(std::lround((1 - t) * (legend_h - 1))) - viz::glyph_height * font_scale / 2,
           fmt::format("{:.3g}", value), font_scale, ink);
  }
  return r.png();
}

}  // namespace attn
