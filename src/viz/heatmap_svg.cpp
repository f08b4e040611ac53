// The heatmap as SVG: one panel per head, rows are queries and columns are keys, one <rect> per
// weight with its exact value in a <title> (shown on hover), and a colour legend.
#include "viz/heatmap_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "viz/color_scale.hpp"
#include "viz/markup.hpp"

namespace attn {

namespace viz {

namespace {

// Coordinates to one decimal, without a trailing ".0": short and byte-for-byte reproducible.
std::string num(double v) {
  std::string s = fmt::format("{:.1f}", v);
  if (s.size() > 2 && s.ends_with(".0")) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

size_t longest(const std::vector<std::string>& labels) {
  size_t n = 1;
  for (const auto& l : labels) n = std::max(n, code_points(l));
  return n;
}

// Sizes that depend only on the shape: cells shrink as the sentence grows, so a 40-token
// sentence still fits a page; labels keep a readable minimum.
struct layout {
  double margin = 16, title_height = 28, gap = 28;
  double cell, font, char_width;
  double row_label_width, col_label_extent, heading_height;
  double panel_width, panel_height;
  int panels_per_row, panel_rows;
  double legend_x, legend_width = 70;
  double width, height;
  bool values_in_cells;

  layout(const heatmap& m, size_t title_chars) {
    const double l = double(m.queries.size()), s = double(m.keys.size());
    cell = std::clamp(std::floor(480 / std::max({l, s, 1.0})), 10.0, 40.0);
    font = std::clamp(std::round(cell * 0.4), 9.0, 13.0);
    char_width = font * 0.62;  // a generous average for sans-serif text
    row_label_width = double(longest(m.queries)) * char_width + 8;
    // Column labels run up and to the right at 45°: their extent is the same in x and y.
    col_label_extent = double(longest(m.keys)) * char_width * 0.7071 + 8;
    heading_height = m.heads.size() > 1 ? 22 : 0;
    panel_width = row_label_width + s * cell + col_label_extent;
    panel_height = heading_height + col_label_extent + l * cell;
    panels_per_row = static_cast<int>(std::min<size_t>(m.heads.size(), 4));
    panel_rows = static_cast<int>((m.heads.size() + 3) / 4);
    legend_x = margin + panels_per_row * panel_width + (panels_per_row - 1) * gap + 8;
    width = std::max(legend_x + legend_width + margin,
                     2 * margin + double(title_chars) * 14 * 0.62);
    height = margin + title_height + panel_rows * panel_height + (panel_rows - 1) * gap + margin;
    values_in_cells = cell >= 28;
  }
};

void write_panel(std::string& out, const heatmap& m, size_t h, const layout& g,
                 const color_scale& scale) {
  const double px = g.margin + double(h % 4) * (g.panel_width + g.gap);
  const double py = g.margin + g.title_height + double(h / 4) * (g.panel_height + g.gap);
  const double gx = px + g.row_label_width, gy = py + g.heading_height + g.col_label_extent;
  const auto& head = m.heads[h];
  out += fmt::format("<g class=\"panel\" data-head=\"{}\">\n", h);
  if (m.heads.size() > 1)
    out += fmt::format("<text class=\"panel-title\" x=\"{}\" y=\"{}\">{}</text>\n", num(gx),
                       num(py + 15), escape(head.name));

  out += "<g class=\"col-labels\">\n";
  for (size_t j = 0; j < m.keys.size(); ++j) {
    double x = gx + (double(j) + 0.5) * g.cell, y = gy - 6;
    out += fmt::format(
        "<text class=\"col-label\" data-col=\"{}\" x=\"{}\" y=\"{}\" transform=\"rotate(-45 {} "
        "{})\">{}</text>\n",
        j, num(x), num(y), num(x), num(y), escape(m.keys[j]));
  }
  out += "</g>\n<g class=\"row-labels\">\n";
  for (size_t i = 0; i < m.queries.size(); ++i)
    out += fmt::format("<text class=\"row-label\" data-row=\"{}\" x=\"{}\" y=\"{}\">{}</text>\n",
                       i, num(gx - 6), num(gy + (double(i) + 0.5) * g.cell), escape(m.queries[i]));
  out += "</g>\n<g class=\"cells\">\n";

  const tensor w = head.weights.contiguous();
  const float* v = w.data();
  const size_t cols = m.keys.size();
  std::string values;
  for (size_t i = 0; i < m.queries.size(); ++i) {
    for (size_t j = 0; j < cols; ++j) {
      const float value = v[i * cols + j];
      const double x = gx + double(j) * g.cell, y = gy + double(i) * g.cell;
      out += fmt::format(
          "<rect class=\"cell\" data-head=\"{}\" data-row=\"{}\" data-col=\"{}\" x=\"{}\" "
          "y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} ({}) → {} ({}): {}</title>"
          "</rect>\n",
          h, i, j, num(x), num(y), num(g.cell), num(g.cell), hex(scale.color(value)),
          escape(m.queries[i]), i, escape(m.keys[j]), j, exact(value));
      if (g.values_in_cells)
        values += fmt::format("<text class=\"value{}\" x=\"{}\" y=\"{}\">{}</text>\n",
                              scale.is_dark(value) ? " dark" : "", num(x + g.cell / 2),
                              num(y + g.cell / 2), fixed(value, 2));
    }
  }
  out += "</g>\n";
  if (g.values_in_cells) out += "<g class=\"values\">\n" + values + "</g>\n";
  out += "</g>\n";
}

void write_legend(std::string& out, const layout& g, const color_scale& scale, size_t rows) {
  // As tall as the grid, within limits, and level with its top.
  const double top = g.margin + g.title_height + g.heading_height + g.col_label_extent;
  const double height = std::clamp(double(rows) * g.cell, 120.0, 320.0);
  const double x = g.legend_x, bar = 14;
  constexpr int steps = 48;
  out += "<g class=\"legend\">\n";
  out += fmt::format("<text class=\"legend-title\" x=\"{}\" y=\"{}\">weight</text>\n", num(x),
                     num(top - 14));
  for (int k = 0; k < steps; ++k) {
    // Top of the bar is the largest value.
    double t = 1 - (k + 0.5) / steps;
    out += fmt::format(
        "<rect class=\"legend-step\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n",
        num(x), num(top + height * k / steps), num(bar), num(height / steps + 0.5),
        hex(color_at(t)));
  }
  out += fmt::format(
      "<rect class=\"legend-frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", num(x),
      num(top), num(bar), num(height));
  for (double t : {1.0, 0.5, 0.0}) {
    double value = scale.lo + t * (scale.hi - scale.lo);
    out += fmt::format("<text class=\"legend-tick\" x=\"{}\" y=\"{}\">{:.3g}</text>\n",
                       num(x + bar + 5), num(top + (1 - t) * height), value);
  }
  out += "</g>\n";
}

}  // namespace

std::string heatmap_svg_element(const heatmap& m) {
  std::vector<float> all;
  for (const auto& head : m.heads) {
    const tensor w = head.weights.contiguous();
    all.insert(all.end(), w.data(), w.data() + w.numel());
  }
  const color_scale scale = color_scale::fitting(all);
  const layout g(m, code_points(m.title));

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"attn-heatmap\" width=\"{}\" "
      "height=\"{}\" viewBox=\"0 0 {} {}\" font-family=\"DejaVu Sans, Helvetica, Arial, "
      "sans-serif\">\n",
      num(g.width), num(g.height), num(g.width), num(g.height));
  // Styles by class, so the HTML page can restyle the same markup.
  out += fmt::format(
      "<style>\n"
      ".title {{ font-size: 14px; font-weight: bold; fill: #222; }}\n"
      ".panel-title {{ font-size: 13px; font-weight: bold; fill: #222; }}\n"
      ".row-label {{ font-size: {}px; text-anchor: end; dominant-baseline: central; fill: #222; }}\n"
      ".col-label {{ font-size: {}px; text-anchor: start; fill: #222; }}\n"
      ".cell {{ stroke: #ffffff; stroke-width: 0.5; }}\n"
      ".cell:hover {{ stroke: #d62728; stroke-width: 2; }}\n"
      ".value {{ font-size: {}px; text-anchor: middle; dominant-baseline: central; fill: #222; "
      "pointer-events: none; }}\n"
      ".value.dark {{ fill: #ffffff; }}\n"
      ".legend-title, .legend-tick {{ font-size: 11px; fill: #222; }}\n"
      ".legend-tick {{ dominant-baseline: central; }}\n"
      ".legend-frame {{ fill: none; stroke: #888; stroke-width: 0.5; }}\n"
      "</style>\n",
      num(g.font), num(g.font), num(std::min(11.0, g.cell * 0.3)));
  out += fmt::format("<rect class=\"background\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                     num(g.width), num(g.height));
  out += fmt::format("<text class=\"title\" x=\"{}\" y=\"{}\">{}</text>\n", num(g.margin),
                     num(g.margin + 12), escape(m.title));
  for (size_t h = 0; h < m.heads.size(); ++h) write_panel(out, m, h, g, scale);
  write_legend(out, g, scale, m.queries.size());
  out += "</svg>\n";
  return out;
}

}  // namespace viz

std::string render_heatmap_svg(const heatmap& m) {
  check_heatmap(m);
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + viz::heatmap_svg_element(m);
}

}  // namespace attn
