// The self-contained page: the heatmap (inline SVG), the head view (drawn by inline script from
// inline JSON), a head selector when there are several heads, and the explain steps as tables.
// Everything is in the one file: no links, no fonts, no scripts from elsewhere.
#include <fmt/format.h>

#include <algorithm>
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

// JSON that is safe inside <script>: "</" cannot close the element and every non-ASCII
// character is escaped.
std::string script_json(const nlohmann::json& data) {
  std::string text = data.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') out += '\\';
  }
  return out;
}

std::string floats_of(const tensor& t) {
  const tensor c = t.contiguous();
  return viz::base64_floats(c.data(), static_cast<size_t>(c.numel()));
}

// What the page's script draws: the layers and heads (each head's q, k and v, from which the
// page computes its weights; or, for a heatmap built from weights alone, the weights), base64
// float32 rows, and each layer's predictions.
nlohmann::json page_data(const heatmap_page& page) {
  const heatmap& m = page.map;
  nlohmann::json layers = nlohmann::json::array();
  nlohmann::json data = {{"queries", m.queries}, {"keys", m.keys}};
  if (page.inspection) {
    const model_inspection& x = *page.inspection;
    const auto n = static_cast<int64_t>(x.tokens.size());
    for (size_t l = 0; l < x.layers.size(); ++l) {
      const layer_inspection& layer = x.layers[l];
      nlohmann::json heads = nlohmann::json::array();
      const int64_t count = layer.q.dim(0), d = layer.q.dim(2);
      for (int64_t h = 0; h < count; ++h)
        heads.push_back({{"name", fmt::format("head {}", h)},
                         {"dim", d},
                         {"q", floats_of(layer.q.slice(0, h, h + 1))},
                         {"k", floats_of(layer.k.slice(0, h, h + 1))},
                         {"v", floats_of(layer.v.slice(0, h, h + 1))}});
      layers.push_back({{"name", x.layers.size() > 1 ? fmt::format("layer {}", l) : std::string()},
                        {"heads", std::move(heads)}});
    }
    data["queries"] = x.tokens;
    data["keys"] = x.tokens;
    data["scale"] = x.scale;
    data["causal"] = x.causal;
    // The token the views open on: the hidden word, or the last token of a causal model (what
    // comes next); none otherwise.
    data["focus"] = x.mask_position >= 0 ? x.mask_position : x.causal ? n - 1 : -1;
    const bool words = !x.layers.empty() && !x.layers.front().predictions.empty();
    if (words) {
      nlohmann::json predicted = nlohmann::json::array();
      for (const layer_inspection& layer : x.layers) {
        nlohmann::json rows = nlohmann::json::array();
        for (const auto& top : layer.predictions) {
          nlohmann::json row = nlohmann::json::array();
          for (const scored_label& w : top) row.push_back({w.label, w.probability});
          rows.push_back(std::move(row));
        }
        predicted.push_back(std::move(rows));
      }
      data["predictions"] = {{"about", x.causal ? "next" : "here"}, {"layers", std::move(predicted)}};
    }
  } else {
    nlohmann::json heads = nlohmann::json::array();
    for (const auto& head : m.heads) heads.push_back({{"name", head.name}, {"weights", floats_of(head.weights)}});
    layers.push_back({{"name", ""}, {"heads", std::move(heads)}});
    data["focus"] = -1;
  }
  const auto layer_count = static_cast<int>(layers.size());
  data["initialLayer"] = page.initial_layer >= 0 && page.initial_layer < layer_count ? page.initial_layer
                                                                                    : layer_count - 1;
  data["initialHead"] = std::max(0, page.initial_head);
  data["layers"] = std::move(layers);
  return data;
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
  // The views are drawn by the script from the data below; the tables need no script.
  out += "<noscript><p>The pictures need JavaScript; the tables below do not.</p></noscript>\n"
         "<div id=\"app\"></div>\n";
  if (!page.training_curve.empty())
    out += "<section class=\"view\" id=\"training-curve-section\">\n<h2>Training curve</h2>"
           "<span class=\"toolbar\"></span>\n<p class=\"hint\">What the run that made the model scored as "
           "it went, as the model file records it.</p>\n" + page.training_curve + "</section>\n";
  if (!page.alignment.empty())
    out += "<section class=\"view\" id=\"alignment-section\">\n<h2>Word alignment</h2>"
           "<span class=\"toolbar\"></span>\n<p class=\"hint\">Each target word linked to the source word its "
           "pieces attended to most, summed over the last decoder layer's cross-attention heads (what "
           "<code>attn translate --alignment</code> prints as i-j pairs).</p>\n" + page.alignment + "</section>\n";
  if (!page.tables.empty()) {
    out += "<section class=\"steps\">\n<h2>Step by step</h2>\n";
    for (const auto& t : page.tables) out += table_html(t);
    out += "</section>\n";
  }
  out += fmt::format("<script type=\"application/json\" id=\"attn-data\">{}</script>\n",
                     script_json(page_data(page)));
  out += fmt::format("<script>{}</script>\n</body>\n</html>\n", viz::page_js);
  return out;
}

}  // namespace attn
