// Masked mean pooling and its backward pass.
#include "nn/mean_pool.hpp"

namespace attn::nn {

template <class T>
void mean_pool_forward(const T* y, const pool_row* rows, T* p, int64_t r, int64_t l, int64_t e) {
  for (int64_t i = 0; i < r; ++i) {
    T* out = p + i * e;
    for (int64_t j = 0; j < e; ++j) out[j] = T(0);
    const T* seq = y + rows[i].sequence * l * e;
    for (int64_t t = 0; t < rows[i].count; ++t)
      for (int64_t j = 0; j < e; ++j) out[j] += seq[t * e + j];
    const T inv = T(1) / static_cast<T>(rows[i].count);
    for (int64_t j = 0; j < e; ++j) out[j] *= inv;
  }
}

template <class T>
void mean_pool_backward(const T* dp, const pool_row* rows, T* dy, int64_t r, int64_t l, int64_t e) {
  for (int64_t i = 0; i < r; ++i) {
    const T inv = T(1) / static_cast<T>(rows[i].count);
    T* seq = dy + rows[i].sequence * l * e;
    for (int64_t t = 0; t < rows[i].count; ++t)  // p = Σ_t y[t] / count → dy[t] += dp / count
      for (int64_t j = 0; j < e; ++j) seq[t * e + j] += dp[i * e + j] * inv;
  }
}

template void mean_pool_forward<float>(const float*, const pool_row*, float*, int64_t, int64_t,
                                       int64_t);
template void mean_pool_forward<double>(const double*, const pool_row*, double*, int64_t, int64_t,
                                        int64_t);
template void mean_pool_backward<float>(const float*, const pool_row*, float*, int64_t, int64_t,
                                        int64_t);
template void mean_pool_backward<double>(const double*, const pool_row*, double*, int64_t,
                                         int64_t, int64_t);

}  // namespace attn::nn
