// Attention pooling: a learned query u scores each token, and the pooled vector is the
// softmax-weighted mean of the tokens, p = Σ_t softmax_t(y_t·u)·y_t, over the first `count`
// tokens of a sequence (the rows are mean_pool.hpp's). With u = 0 it is the mean; training
// moves the weight to the tokens that decide the label. (Self-attention asks which tokens each
// token should read; this asks which tokens the sentence's label should read.)
#pragma once

#include <cstdint>

#include "nn/mean_pool.hpp"

namespace attn::nn {

// y [B, L, E], u [E], rows [R] → p [R, E]; weights [R, L] keeps each row's softmax (0 past count)
template <class T>
void attention_pool_forward(const T* y, const T* u, const pool_row* rows, T* p, T* weights,
                            int64_t r, int64_t l, int64_t e);
// dp [R, E] → dy [B, L, E] +=, du [E] +=
template <class T>
void attention_pool_backward(const T* dp, const T* y, const T* u, const pool_row* rows,
                             const T* weights, T* dy, T* du, int64_t r, int64_t l, int64_t e);

}  // namespace attn::nn
