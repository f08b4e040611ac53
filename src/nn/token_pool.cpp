// Token picking and its backward pass.
#include "nn/token_pool.hpp"

#include <algorithm>

namespace attn::nn {

template <class T>
void token_pool_forward(const T* y, const pool_row* rows, T* p, int64_t r, int64_t l, int64_t e) {
  for (int64_t i = 0; i < r; ++i)
    std::copy_n(y + (rows[i].sequence * l + rows[i].count - 1) * e, e, p + i * e);
}

template <class T>
void token_pool_backward(const T* dp, const pool_row* rows, T* dy, int64_t r, int64_t l, int64_t e) {
  for (int64_t i = 0; i < r; ++i) {
    T* out = dy + (rows[i].sequence * l + rows[i].count - 1) * e;
    for (int64_t j = 0; j < e; ++j) out[j] += dp[i * e + j];
  }
}

template void token_pool_forward<float>(const float*, const pool_row*, float*, int64_t, int64_t,
                                        int64_t);
template void token_pool_forward<double>(const double*, const pool_row*, double*, int64_t,
                                         int64_t, int64_t);
template void token_pool_backward<float>(const float*, const pool_row*, float*, int64_t, int64_t,
                                         int64_t);
template void token_pool_backward<double>(const double*, const pool_row*, double*, int64_t,
                                          int64_t, int64_t);

}  // namespace attn::nn
