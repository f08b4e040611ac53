// What a heatmap shows, independent of how it is drawn: the heads, their labels, and for basic
// self-attention the walkthrough tables that go under it.
#include "attn/heatmap.hpp"

#include <fmt/format.h>

#include <cmath>

#include "attn/error.hpp"

namespace attn {

void check_heatmap(const heatmap& m) {
  if (m.heads.empty()) throw_usage("a heatmap needs at least one head");
  const auto rows = static_cast<int64_t>(m.queries.size());
  const auto cols = static_cast<int64_t>(m.keys.size());
  for (size_t h = 0; h < m.heads.size(); ++h) {
    const tensor& w = m.heads[h].weights;
    if (w.empty() || w.rank() != 2 || w.dim(0) != rows || w.dim(1) != cols)
      throw_usage(fmt::format("heatmap head {} has weights {}, expected [{}, {}] ({} queries × "
                              "{} keys)",
                              h, w.empty() ? std::string("(none)") : shape_to_string(w.shape()),
                              rows, cols, rows, cols));
  }
}

heatmap select_head(const heatmap& m, int index) {
  const int count = static_cast<int>(m.heads.size());
  if (index < 0 || index >= count)
    throw_usage(fmt::format("--head {} is out of range: there {} {} head{} (0 … {})", index,
                            count == 1 ? "is" : "are", count, count == 1 ? "" : "s", count - 1));
  heatmap out = m;
  out.heads = {m.heads[static_cast<size_t>(index)]};
  return out;
}

namespace {

std::string scale_text(double scale, int64_t d) {
  if (d > 0 && std::abs(scale * std::sqrt(double(d)) - 1) < 1e-9) return fmt::format("1/√{}", d);
  return fmt::format("{:.6g}", scale);
}

}  // namespace

heatmap heatmap_of(const embedding& e) {
  heatmap m;
  m.title = "A: how much each token (row) attends to each token (column)";
  m.queries = e.tokens;
  m.keys = e.tokens;
  m.heads.push_back({"head 0", e.steps.weights});
  return m;
}

heatmap_page explain_page(const embedding& e, const std::string& vectors_source) {
  heatmap_page page;
  page.map = heatmap_of(e);
  const auto n = static_cast<int64_t>(e.tokens.size());
  const int64_t d = e.static_vectors.dim(1);
  page.notes.push_back(fmt::format("Tokens ({}): {}", n, fmt::join(e.tokens, " ")));
  if (!e.unknown.empty())
    page.notes.push_back(fmt::format("Left out, not in the vectors: {}", fmt::join(e.unknown, " ")));
  if (!vectors_source.empty())
    page.notes.push_back(fmt::format("Vectors: {} ({} dimensions); scale {}", vectors_source, d,
                                     scale_text(e.steps.scale, d)));

  std::vector<std::string> dims;
  for (int64_t j = 0; j < d; ++j) dims.push_back(fmt::format("d{}", j));
  const auto& t = e.tokens;
  page.tables.push_back({fmt::format("1. E: the static word vector of each token [{} × {}]", n, d),
                         e.static_vectors, t, dims, false, false});
  page.tables.push_back(
      {fmt::format("2. S = E·Eᵀ: the dot product of every pair of tokens [{} × {}]", n, n),
       e.steps.scores, t, t, false, true});
  page.tables.push_back({fmt::format("3. S × {:.6g}: scaled scores (scale {})", e.steps.scale,
                                     scale_text(e.steps.scale, d)),
                         e.steps.scaled, t, t, false, true});
  page.tables.push_back({"4. A = softmax of each row: how much each token (row) attends to each "
                         "other (column)",
                         e.steps.weights, t, t, true, true});
  page.tables.push_back(
      {fmt::format("5. C = A·E: the contextual embedding of each token [{} × {}]", n, d),
       e.steps.context, t, dims, false, false});
  // The seeds' attention as one layer with one head whose query, key and value are the word
  // vectors themselves: the page's neuron view then shows S = E·Eᵀ row by row.
  model_inspection x;
  x.tokens = e.tokens;
  x.unknown = e.unknown;
  x.scale = e.steps.scale;
  layer_inspection layer;
  layer.q = e.static_vectors.contiguous().reshape({1, n, d});
  layer.k = layer.q;
  layer.v = layer.q;
  layer.weights = e.steps.weights.contiguous().reshape({1, n, n});
  x.layers.push_back(std::move(layer));
  page.inspection = std::move(x);
  return page;
}

}  // namespace attn
