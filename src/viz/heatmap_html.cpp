// The self-contained page: the heatmap (inline SVG), the head view (drawn by inline script from
// inline JSON), a head selector when there are several heads, and the explain steps as tables.
// Everything is in the one file: no links, no fonts, no scripts from elsewhere.
#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/heatmap.hpp"
#include "viz/color_scale.hpp"
#include "viz/heatmap_svg.hpp"
#include "viz/markup.hpp"
#include "viz/page_assets.hpp"

namespace attn {

namespace {

// Wide matrices (E and C have d columns) show their first columns, "…", and the last one, as the
// text walkthrough does; the exact value of every shown cell is in its title.
constexpr size_t max_columns = 16, max_rows = 64;

std::vector<int64_t> shown(int64_t count, size_t limit) {
  std::vector<int64_t> out;
  if (static_cast<size_t>(count) <= limit) {
    for (int64_t i = 0; i < count; ++i) out.push_back(i);
  } else {
    for (int64_t i = 0; i < static_cast<int64_t>(limit) - 2; ++i) out.push_back(i);
    out.push_back(-1);  // the "…"
    out.push_back(count - 1);
  }
  return out;
}

std::string table_html(const heatmap_table& t) {
  if (t.values.empty() || t.values.rank() != 2 ||
      static_cast<size_t>(t.values.dim(0)) != t.row_labels.size() ||
      static_cast<size_t>(t.values.dim(1)) != t.col_labels.size())
    throw_usage(fmt::format("table '{}' has values {} but {} row and {} column labels", t.title,
                            t.values.empty() ? "(none)" : shape_to_string(t.values.shape()),
                            t.row_labels.size(), t.col_labels.size()));
  const tensor m = t.values.contiguous();
  const int64_t rows = m.dim(0), cols = m.dim(1);
  const float* v = m.data();
  const viz::color_scale scale =
      viz::color_scale::fitting({v, static_cast<size_t>(m.numel())});
  const auto show_cols = shown(cols, max_columns), show_rows = shown(rows, max_rows);

  std::string out = fmt::format("<section class=\"step\">\n<h3>{}</h3>\n<div class=\"table-wrap\">"
                                "<table class=\"matrix\">\n<thead><tr><th></th>",
                                viz::escape(t.title));
  for (int64_t j : show_cols)
    out += j < 0 ? "<th class=\"gap\">…</th>"
                 : fmt::format("<th>{}</th>", viz::escape(t.col_labels[static_cast<size_t>(j)]));
  if (t.row_sums) out += "<th class=\"sum\">row sum</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (int64_t i : show_rows) {
    if (i < 0) {
      out += fmt::format("<tr><th class=\"gap\">…</th><td class=\"gap\" colspan=\"{}\">…</td></tr>\n",
                         show_cols.size() + (t.row_sums ? 1 : 0));
      continue;
    }
    out += fmt::format("<tr><th>{}</th>", viz::escape(t.row_labels[static_cast<size_t>(i)]));
    for (int64_t j : show_cols) {
      if (j < 0) {
        out += "<td class=\"gap\">…</td>";
        continue;
      }
      const float value = v[i * cols + j];
      if (t.shade)
        out += fmt::format("<td{} style=\"background:{}\" title=\"{}\">{}</td>",
                           scale.is_dark(value) ? " class=\"dark\"" : "",
                           viz::hex(scale.color(value)), viz::exact(value), viz::fixed(value, 4));
      else
        out += fmt::format("<td title=\"{}\">{}</td>", viz::exact(value), viz::fixed(value, 4));
    }
    if (t.row_sums) {
      double sum = 0;
      for (int64_t j = 0; j < cols; ++j) sum += v[i * cols + j];
      out += fmt::format("<td class=\"sum\">{:.4f}</td>", sum);
    }
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n</section>\n";
  return out;
}

// The weights for the head view, as JSON that is safe inside <script>: "</" cannot close the
// element and every non-ASCII character is escaped.
std::string data_json(const heatmap& m) {
  nlohmann::json heads = nlohmann::json::array();
  for (const auto& head : m.heads) {
    const tensor w = head.weights.contiguous();
    const int64_t rows = w.dim(0), cols = w.dim(1);
    nlohmann::json matrix = nlohmann::json::array();
    for (int64_t i = 0; i < rows; ++i) {
      nlohmann::json row = nlohmann::json::array();
      // Through the float's shortest text, so the page holds 0.0749, not 0.07490000128746033.
      for (int64_t j = 0; j < cols; ++j) {
        const std::string text = viz::exact(w.data()[i * cols + j]);
        double value = 0;  // from_chars, not stod: no locale may turn "0.5" into 0
        std::from_chars(text.data(), text.data() + text.size(), value);
        row.push_back(value);
      }
      matrix.push_back(std::move(row));
    }
    heads.push_back({{"name", head.name}, {"weights", std::move(matrix)}});
  }
  nlohmann::json data = {{"queries", m.queries}, {"keys", m.keys}, {"heads", std::move(heads)}};
  std::string text = data.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') out += '\\';
  }
  return out;
}

}  // namespace

std::string render_heatmap_html(const heatmap_page& page) {
  check_heatmap(page.map);
  const heatmap& m = page.map;
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += fmt::format("<title>attn: {}</title>\n", viz::escape(fmt::format("{}", fmt::join(m.queries, " "))));
  out += fmt::format("<style>{}</style>\n</head>\n<body>\n", viz::page_css);
  out += "<h1>Who attends to whom</h1>\n";
  for (const auto& note : page.notes) out += fmt::format("<p class=\"note\">{}</p>\n", viz::escape(note));
  if (m.heads.size() > 1) {
    out += "<div class=\"controls\"><label>Head <select id=\"head-select\">";
    for (size_t h = 0; h < m.heads.size(); ++h)
      out += fmt::format("<option value=\"{}\">{}</option>", h, viz::escape(m.heads[h].name));
    out += "</select></label></div>\n";
  }
  out += "<div class=\"pictures\">\n<section class=\"heatmap\">\n<h2>Heatmap</h2>\n"
         "<p class=\"hint\">Rows are queries, columns are keys; each row sums to 1. Point at a "
         "cell for its exact value.</p>\n";
  out += viz::heatmap_svg_element(m);
  out += "</section>\n<section class=\"head-view\">\n<h2>Head view</h2>\n"
         "<p class=\"hint\">Point at a token on the left to see what it attends to, on the right "
         "to see what attends to it; click to keep it.</p>\n"
         "<svg id=\"head-view\" xmlns=\"http://www.w3.org/2000/svg\"></svg>\n"
         "<noscript><p>The head view needs JavaScript; the heatmap and the tables do not.</p>"
         "</noscript>\n</section>\n</div>\n";
  if (!page.tables.empty()) {
    out += "<section class=\"steps\">\n<h2>Step by step</h2>\n";
    for (const auto& t : page.tables) out += table_html(t);
    out += "</section>\n";
  }
  out += fmt::format("<script type=\"application/json\" id=\"attn-data\">{}</script>\n",
                     data_json(m));
  out += fmt::format("<script>{}</script>\n</body>\n</html>\n", viz::head_view_js);
  return out;
}

}  // namespace attn
