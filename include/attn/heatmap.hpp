// Pictures of attention: a heatmap per head (rows are queries, columns are keys) as SVG, and a
// self-contained HTML page with the heatmap, a "head view" (lines from each token to those it
// attends to) and the explain steps as tables. No network, no external fonts, no scripts from
// elsewhere: the page works offline.
//
//   attn::embedding e = attn::embed("the animal was too tired", glove);
//   std::string svg = attn::render_heatmap_svg(attn::heatmap_of(e));
//   std::string html = attn::render_heatmap_html(attn::explain_page(e));
//
// The renderers take any list of heads, so a multi-head model gives one panel per head.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attn/embed.hpp"
#include "attn/inspection.hpp"
#include "attn/tensor.hpp"

namespace attn {

// One head's attention weights: weights [L, S], row i is how query i spreads over the keys.
struct heatmap_head {
  std::string name;  // shown above its panel and in the head selector
  tensor weights;    // [L, S]
};

struct heatmap {
  std::string title;
  std::vector<std::string> queries;  // L row labels
  std::vector<std::string> keys;     // S column labels
  std::vector<heatmap_head> heads;   // at least one, each [L, S]
};

// A labelled matrix shown as a table under the heatmap (one explain step).
struct heatmap_table {
  std::string title;
  tensor values;  // [rows, cols]
  std::vector<std::string> row_labels, col_labels;
  bool row_sums = false;  // add a "row sum" column (for A)
  bool shade = false;     // colour each cell by its value
};

struct heatmap_page {
  heatmap map;
  std::vector<std::string> notes;     // lines under the title (text, vectors, scale, left out)
  std::vector<heatmap_table> tables;  // shown in order under the pictures
  // The layers with each head's q, k and v (a trained model's inspect(), or the word vectors as
  // q = k = v): the page then draws every layer (its weights recomputed from q and k), the neuron
  // view and, when present, each layer's predictions. Empty: the page draws map's heads.
  std::optional<model_inspection> inspection;
  int initial_layer = -1;  // the layer and head the page opens on (-1: the last layer)
  int initial_head = 0;
  std::string training_curve;  // an <svg> (attn/training_curve.hpp) shown under the views, or ""
  std::string alignment;       // an <svg> (render_alignment_svg) of a translation's word links, or ""
};

// A translation's word alignment as an <svg>: the source words along the top, the target words
// along the bottom, a line for each (source i, target j) link (Moses' `i-j` pairs); links out
// of range are left out.
std::string render_alignment_svg(const std::vector<std::string>& source_words, const std::vector<std::string>& target_words,
                                 const std::vector<std::pair<int64_t, int64_t>>& links);

// Throws a usage error unless there is at least one head and every head is [L, S] with L and S
// the numbers of labels.
void check_heatmap(const heatmap& m);

// Keeps head `index` only; a usage error names the valid range when it is out of it.
heatmap select_head(const heatmap& m, int index);

// Basic self-attention has one head: A, labelled by the tokens.
heatmap heatmap_of(const embedding& e);
// The walkthrough E, S, scaled S, A, C as tables, the heatmap of A, and notes on the text.
// vectors_source names the vectors in the notes ("" leaves that note out).
heatmap_page explain_page(const embedding& e, const std::string& vectors_source = "");

// A standalone SVG document: one panel per head, one <rect class="cell"> per weight with the
// exact value in its <title>, every token labelled on both axes, and a colour legend.
std::string render_heatmap_svg(const heatmap& m);

// The same picture as a PNG file's bytes (labels in attn's own bitmap font; characters outside
// ASCII as boxes), for papers and slides.
std::string render_heatmap_png(const heatmap& m);

// One HTML file with inline CSS and JavaScript only.
std::string render_heatmap_html(const heatmap_page& page);

}  // namespace attn
