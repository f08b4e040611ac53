// Picking single tokens' vectors: the masked-word model scores only the tokens it hid, so each
// pooled row is one token's output rather than a summary of several.
#pragma once

#include <cstdint>

#include "nn/mean_pool.hpp"

namespace attn::nn {

// y [B, L, E], rows [R] → p [R, E]; p[r] = y[sequence_r, count_r − 1] (the last of the row's
// first count tokens, as the other pools read a row: here the row names that one token)
template <class T>
void token_pool_forward(const T* y, const pool_row* rows, T* p, int64_t r, int64_t l, int64_t e);
// dy[sequence_r, count_r − 1] += dp[r]
template <class T>
void token_pool_backward(const T* dp, const pool_row* rows, T* dy, int64_t r, int64_t l, int64_t e);

}  // namespace attn::nn
