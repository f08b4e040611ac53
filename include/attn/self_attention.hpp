// Basic self-attention with no parameters (seed 000): Q = K = V = E.
//   e [N, d] → scores S = E·Eᵀ [N, N], scaled = S·scale, weights A = softmax of each row,
//   context C = A·E [N, d]
// Every step is kept so that `attn explain` can show it.
#pragma once

#include "attn/scale.hpp"
#include "attn/tensor.hpp"

namespace attn {

struct self_attention_steps {
  tensor scores;   // S = E·Eᵀ            [N, N]
  double scale;    // the factor applied
  tensor scaled;   // S · scale            [N, N]
  tensor weights;  // A, rows sum to 1     [N, N]
  tensor context;  // C = A·E              [N, d]
};

self_attention_steps self_attention(const tensor& e, const scale_spec& scale = {});

// Row-wise softmax of a [rows, cols] matrix, max-subtracted, double accumulation.
// A row of all -inf gives all zeros.
tensor softmax_rows(const tensor& x);

}  // namespace attn
