// Masked mean pooling over tokens: each pooled row is the mean of the first `count` tokens of
// one sequence. A classifier pools a whole sentence (count = its length); the next-word model
// pools every prefix (count = 1, 2, …), which with a causal mask trains every prefix in one pass.
#pragma once

#include <cstdint>

namespace attn::nn {

struct pool_row {
  int64_t sequence;  // which sequence of the batch
  int64_t count;     // how many of its first tokens are averaged (≥ 1)
};

// y [B, L, E], rows [R] → p [R, E]; p[r] = mean_{t < count_r} y[sequence_r, t]
template <class T>
void mean_pool_forward(const T* y, const pool_row* rows, T* p, int64_t r, int64_t l, int64_t e);
// dy[sequence_r, t] += dp[r] / count_r for t < count_r
template <class T>
void mean_pool_backward(const T* dp, const pool_row* rows, T* dy, int64_t r, int64_t l, int64_t e);

}  // namespace attn::nn
