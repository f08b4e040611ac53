// Renders the self-attention walkthrough as plain text (the library builds strings; the CLI
// prints them).
#include "attn/explain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "viz/color_scale.hpp"

namespace attn {

namespace {

// Columns a UTF-8 string takes in a terminal (one per code point; no wide characters in our
// labels).
size_t display_width(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// Cuts a label to `width` columns, ending it with … when cut.
std::string fit(const std::string& s, size_t width) {
  if (display_width(s) <= width) return s;
  std::string out;
  size_t cols = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    bool starts = (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    if (starts && ++cols > width - 1) break;
    out += s[i];
  }
  return out + "…";
}

std::string pad_left(const std::string& s, size_t width) {
  size_t w = display_width(s);
  return w >= width ? s : std::string(width - w, ' ') + s;
}
std::string pad_right(const std::string& s, size_t width) {
  size_t w = display_width(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

std::string format_value(float v, int precision) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return fmt::format("{:.{}f}", v, precision);
}

}  // namespace

std::string render_matrix(const std::string& title, const tensor& m,
                          const std::vector<std::string>& row_labels,
                          const std::vector<std::string>& col_labels,
                          const explain_options& options, bool with_row_sums) {
  const tensor dense = m.contiguous();
  const int64_t rows = dense.dim(0), cols = dense.dim(1);
  const float* values = dense.data();
  const viz::color_scale scale =
      viz::color_scale::fitting({values, static_cast<size_t>(dense.numel())});
  // Background from the heatmap's scale with black or white text on it; the escapes take no
  // columns, so the layout is the plain text's.
  auto paint = [&](const std::string& cell_text, float v) {
    if (!options.color) return cell_text;
    viz::rgb c = scale.color(v);
    return fmt::format("\x1b[38;5;{};48;5;{}m{}\x1b[0m", viz::is_dark(c) ? 231 : 16,
                       viz::ansi256(c), cell_text);
  };

  // Cell width: wide enough for every value shown and for short labels; long labels are cut.
  size_t cell = 0;
  for (int64_t i = 0; i < rows * cols; ++i)
    cell = std::max(cell, display_width(format_value(values[i], options.precision)));
  for (const auto& label : col_labels) cell = std::max(cell, std::min<size_t>(display_width(label), 8));
  size_t label_width = 0;
  for (const auto& label : row_labels) label_width = std::max(label_width, display_width(label));
  label_width = std::min<size_t>(label_width, 14);

  // Which columns fit in the width: all of them, or the first k, "…", and the last one.
  const size_t sums_width = with_row_sums ? 3 + cell + 5 : 0;
  const size_t room = static_cast<size_t>(std::max(options.width, 40)) - label_width - sums_width;
  std::vector<int64_t> shown;
  bool elided = false;
  if (static_cast<size_t>(cols) * (cell + 1) <= room) {
    for (int64_t j = 0; j < cols; ++j) shown.push_back(j);
  } else {
    int64_t first = static_cast<int64_t>((room - 2 - (cell + 1)) / (cell + 1));
    first = std::clamp<int64_t>(first, 1, cols - 1);
    for (int64_t j = 0; j < first; ++j) shown.push_back(j);
    shown.push_back(cols - 1);
    elided = true;
  }

  std::string out = title + "\n";
  std::string header = std::string(label_width, ' ');
  for (size_t c = 0; c < shown.size(); ++c) {
    if (elided && c + 1 == shown.size()) header += " …";
    header += ' ';
    header += pad_left(fit(col_labels[static_cast<size_t>(shown[c])], cell), cell);
  }
  if (with_row_sums) {
    header += "   ";
    header += pad_left("row sum", cell + 2);
  }
  out += header + "\n";
  for (int64_t i = 0; i < rows; ++i) {
    std::string line = pad_right(fit(row_labels[static_cast<size_t>(i)], label_width), label_width);
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += values[i * cols + j];
    for (size_t c = 0; c < shown.size(); ++c) {
      if (elided && c + 1 == shown.size()) line += " …";
      line += ' ';
      const float v = values[i * cols + shown[c]];
      line += paint(pad_left(format_value(v, options.precision), cell), v);
    }
    if (with_row_sums) {
      line += "   ";
      line += pad_left(fmt::format("{:.{}f}", sum, options.precision), cell + 2);
    }
    out += line + "\n";
  }
  return out;
}

std::string render_explain(const embedding& e, const explain_options& colored) {
  // Only A is coloured: it is the matrix the heatmap shows, on the same scale.
  explain_options options = colored;
  options.color = false;
  const auto& tokens = e.tokens;
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t d = e.static_vectors.dim(1);
  std::vector<std::string> dims;
  for (int64_t j = 0; j < d; ++j) dims.push_back(fmt::format("d{}", j));

  std::string out;
  out += fmt::format("Tokens ({}): {}\n", n, fmt::join(tokens, " "));
  if (!e.unknown.empty())
    out += fmt::format("Left out, not in the vectors: {}\n", fmt::join(e.unknown, " "));
  out += "\n";
  out += render_matrix(fmt::format("1. E: the static word vector of each token [{} × {}]", n, d),
                       e.static_vectors, tokens, dims, options);
  out += "\n";
  out += render_matrix(
      fmt::format("2. S = E·Eᵀ: the dot product of every pair of tokens [{} × {}]", n, n),
      e.steps.scores, tokens, tokens, options);
  out += "\n";
  out += render_matrix(fmt::format("3. S × {:.6g}: scaled scores (scale {})", e.steps.scale,
                                   d > 0 && std::abs(e.steps.scale * std::sqrt(double(d)) - 1) < 1e-9
                                       ? fmt::format("1/√{}", d)
                                       : fmt::format("{:.6g}", e.steps.scale)),
                       e.steps.scaled, tokens, tokens, options);
  out += "\n";
  out += render_matrix("4. A = softmax of each row: how much each token (row) attends to each "
                       "other (column)",
                       e.steps.weights, tokens, tokens, colored, /*with_row_sums=*/true);
  out += "\n";
  out += render_matrix(fmt::format("5. C = A·E: the contextual embedding of each token [{} × {}]",
                                   n, d),
                       e.steps.context, tokens, dims, options);
  return out;
}

}  // namespace attn
