// Max pooling and its backward pass (see max_pool.hpp).
#include "nn/max_pool.hpp"

namespace attn::nn {

template <class T>
void max_pool_forward(const T* y, const pool_row* rows, T* p, int64_t* which, int64_t r,
                      int64_t l, int64_t e) {
  for (int64_t i = 0; i < r; ++i) {
    const T* seq = y + rows[i].sequence * l * e;
    for (int64_t j = 0; j < e; ++j) {
      int64_t best = 0;
      for (int64_t t = 1; t < rows[i].count; ++t)
        if (seq[t * e + j] > seq[best * e + j]) best = t;
      p[i * e + j] = seq[best * e + j];
      which[i * e + j] = best;
    }
  }
}

template <class T>
void max_pool_backward(const T* dp, const pool_row* rows, const int64_t* which, T* dy, int64_t r,
                       int64_t l, int64_t e) {
  for (int64_t i = 0; i < r; ++i) {
    T* seq = dy + rows[i].sequence * l * e;
    for (int64_t j = 0; j < e; ++j)  // p[i, j] = y[which, j] → dy[which, j] += dp[i, j]
      seq[which[i * e + j] * e + j] += dp[i * e + j];
  }
}

#define ATTN_INSTANTIATE(T)                                                                     \
  template void max_pool_forward<T>(const T*, const pool_row*, T*, int64_t*, int64_t, int64_t, \
                                    int64_t);                                                  \
  template void max_pool_backward<T>(const T*, const pool_row*, const int64_t*, T*, int64_t,   \
                                     int64_t, int64_t);
ATTN_INSTANTIATE(float)
ATTN_INSTANTIATE(double)
#undef ATTN_INSTANTIATE

}  // namespace attn::nn
