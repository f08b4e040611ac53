// Everything a trained model's attention does with one text, layer by layer, for the page that
// looks inside it (attn heatmap -o page.html): each head's query, key and value vectors and the
// weights they make, and, for models with a word output (lm, masked-word), the words each
// layer's output would predict at each place.
//
//   attn::text_model m = attn::text_model::load("builtin-lm");
//   attn::model_inspection x = m.inspect("the river bank was");
//   x.layers[1].weights;        // [H, L, L], softmax(scale·q·kᵀ) under the causal mask
//   x.layers[1].predictions[3]; // the 5 words layer 1's output at token 3 points to
//
// The weights are exactly what attention(text, layer) gives; q, k and v are the rows the
// layer's heads computed (heads' columns of x·Wqᵀ + bq, …), so a reader can redo the
// arithmetic: weights[h][i][j] = softmax_j(scale · Σ_d q[h][i][d]·k[h][j][d]).
#pragma once

#include <string>
#include <vector>

#include "attn/tensor.hpp"
#include "attn/text_model.hpp"

namespace attn {

struct layer_inspection {
  tensor q, k, v;   // [H, L, D]: each head's query, key and value rows
  tensor weights;   // [H, L, L]: row i is how query i spreads over the keys
  // Models with a word output: for each token, the k most likely words from this layer's
  // output read through the model's own output layer (the last layer's: what the model
  // predicts). A pre-norm model's inner layers pass its final layer norm first, as the last
  // one does. An lm's token t predicts the token after t; a masked-word model's predicts the
  // word at t (hidden or not). Other models: empty.
  std::vector<std::vector<scored_label>> predictions;  // [L][k]
};

struct model_inspection {
  std::vector<std::string> tokens;   // the L tokens the model read
  std::vector<std::string> unknown;  // words of the text the model has no embedding for
  bool causal = false;               // query i sees keys 0 … i only
  double scale = 0;                  // the scores' factor, 1/√D
  int64_t mask_position = -1;        // masked-word: the first [MASK]'s token (-1: none)
  std::vector<layer_inspection> layers;  // first to last (the seeds' model: one)
};

}  // namespace attn
