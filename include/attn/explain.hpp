// The seeds' walkthrough as text: E, S = E·Eᵀ, the scaled S, A = softmax of each row (with its
// row sum) and C = A·E, every matrix labelled by its tokens and shortened with … to fit a width.
#pragma once

#include <string>

#include "attn/embed.hpp"

namespace attn {

struct explain_options {
  int width = 100;       // columns the text should fit in
  int precision = 4;     // decimals shown
  bool color = false;    // colour A's cells with 256-colour ANSI escapes (for a terminal)
};

std::string render_explain(const embedding& e, const explain_options& options = {});

// One labelled matrix: a title line, a header of column labels, one line per row.
// Columns that do not fit are replaced by a single "…" column before the last one.
// With options.color every value cell gets the heatmap's colour for it (see heatmap.hpp).
std::string render_matrix(const std::string& title, const tensor& m,
                          const std::vector<std::string>& row_labels,
                          const std::vector<std::string>& col_labels,
                          const explain_options& options, bool with_row_sums = false);

}  // namespace attn
