// Attention masks. Inside attn every mask is additive float: 0 where a key takes part, -inf
// where it does not (any other value is added to the score as is). Bool masks from users are
// turned into additive ones here, because PyTorch uses two opposite bool conventions:
//   scaled_dot_product_attention: True = takes part      (keep_when = true)
//   nn.MultiheadAttention:        True = masked / ignore (keep_when = false)
#pragma once

#include "attn/tensor.hpp"

namespace attn {

// flags holds 0/1 values; returns a tensor of the same shape with 0 (kept) or -inf (masked).
tensor additive_mask_from_bool(const tensor& flags, bool keep_when);

// The top-left aligned causal mask of PyTorch's is_causal (tril of an L×S matrix of ones):
// query i sees keys j <= i. With L > S the later rows see every key; with L < S the last keys
// are never seen by the first rows.
inline bool causal_allows(int64_t query, int64_t key) { return key <= query; }

}  // namespace attn
