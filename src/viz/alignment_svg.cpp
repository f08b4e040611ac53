// A translation's word alignment drawn as links: the source words in a row along the top, the
// target words along the bottom, a line from each target word to its strongest source word (the
// picture Moses' and fast_align's viewers draw for `i-j` pairs).
#include <fmt/format.h>

#include <algorithm>

#include "attn/heatmap.hpp"
#include "viz/markup.hpp"

namespace attn {

namespace {

// Each word's centre along a row: widths from the characters (code points), a gap between.
std::vector<double> centres(const std::vector<std::string>& words, double& end) {
  std::vector<double> out;
  double x = 16;
  for (const std::string& w : words) {
    const auto chars = static_cast<double>(std::count_if(w.begin(), w.end(), [](char c) { return (c & 0xC0) != 0x80; }));
    const double width = std::max(24.0, 7.5 * chars + 10);
    out.push_back(x + width / 2);
    x += width + 8;
  }
  end = x + 8;
  return out;
}

std::string num(double v) { return fmt::format("{:.1f}", v); }

}  // namespace

std::string render_alignment_svg(const std::vector<std::string>& source_words, const std::vector<std::string>& target_words,
                                 const std::vector<std::pair<int64_t, int64_t>>& links) {
  double source_end = 0, target_end = 0;
  const std::vector<double> xs = centres(source_words, source_end), xt = centres(target_words, target_end);
  const double width = std::max({source_end, target_end, 200.0}), top = 28, bottom = 132, height = 160;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"attn-alignment\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<style>.attn-alignment text{{font-size:13px;fill:#222}} .attn-alignment .link{{stroke:#2a6ab8;"
      "stroke-width:2;stroke-opacity:0.75}} .attn-alignment .side{{font-size:11px;fill:#777}}</style>\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"#fff\"/>\n",
      num(width), num(height));
  for (const auto& [i, j] : links) {
    if (i < 0 || j < 0 || i >= static_cast<int64_t>(xs.size()) || j >= static_cast<int64_t>(xt.size())) continue;
    out += fmt::format("<line class=\"link\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"><title>{}-{}: {} → {}</title></line>\n",
                       num(xs[static_cast<size_t>(i)]), num(top + 8), num(xt[static_cast<size_t>(j)]), num(bottom - 16),
                       i, j, viz::escape(source_words[static_cast<size_t>(i)]),
                       viz::escape(target_words[static_cast<size_t>(j)]));
  }
  for (size_t k = 0; k < xs.size(); ++k)
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", num(xs[k]), num(top),
                       viz::escape(source_words[k]));
  for (size_t k = 0; k < xt.size(); ++k)
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", num(xt[k]), num(bottom),
                       viz::escape(target_words[k]));
  out += fmt::format("<text x=\"16\" y=\"{}\" class=\"side\">top: the source; bottom: the translation</text>\n",
                     num(height - 8));
  out += "</svg>\n";
  return out;
}

}  // namespace attn
