// Max pooling over tokens: each pooled row holds, feature by feature, the largest value over the
// first `count` tokens of one sequence (the rows are mean_pool.hpp's: a sentence, or a prefix).
// Sentiment often rests on one strong word, which a mean dilutes and a max keeps.
#pragma once

#include <cstdint>

#include "nn/mean_pool.hpp"

namespace attn::nn {

// y [B, L, E], rows [R] → p [R, E]; which [R, E] holds the token each maximum came from (the
// first, on ties)
template <class T>
void max_pool_forward(const T* y, const pool_row* rows, T* p, int64_t* which, int64_t r,
                      int64_t l, int64_t e);
// dy[sequence_r, which[r, j], j] += dp[r, j]
template <class T>
void max_pool_backward(const T* dp, const pool_row* rows, const int64_t* which, T* dy, int64_t r,
                       int64_t l, int64_t e);

}  // namespace attn::nn
