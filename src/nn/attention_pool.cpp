// Attention pooling and its backward pass (see attention_pool.hpp).
#include "nn/attention_pool.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace attn::nn {

template <class T>
void attention_pool_forward(const T* y, const T* u, const pool_row* rows, T* p, T* weights,
                            int64_t r, int64_t l, int64_t e) {
  for (int64_t i = 0; i < r; ++i) {
    const T* seq = y + rows[i].sequence * l * e;
    T* a = weights + i * l;
    std::fill(a, a + l, T(0));
    const int64_t n = rows[i].count;
    // s_t = y_t·u, then a = softmax(s) over t < count (shifted by the maximum)
    T top = -std::numeric_limits<T>::infinity();
    for (int64_t t = 0; t < n; ++t) {
      T s = T(0);
      for (int64_t j = 0; j < e; ++j) s += seq[t * e + j] * u[j];
      a[t] = s;
      top = std::max(top, s);
    }
    T sum = T(0);
    for (int64_t t = 0; t < n; ++t) sum += a[t] = std::exp(a[t] - top);
    for (int64_t t = 0; t < n; ++t) a[t] /= sum;
    T* out = p + i * e;  // p = Σ_t a_t·y_t
    std::fill(out, out + e, T(0));
    for (int64_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < e; ++j) out[j] += a[t] * seq[t * e + j];
  }
}

template <class T>
void attention_pool_backward(const T* dp, const T* y, const T* u, const pool_row* rows,
                             const T* weights, T* dy, T* du, int64_t r, int64_t l, int64_t e) {
  std::vector<T> da(static_cast<size_t>(l));
  for (int64_t i = 0; i < r; ++i) {
    const T* seq = y + rows[i].sequence * l * e;
    T* dseq = dy + rows[i].sequence * l * e;
    const T* a = weights + i * l;
    const T* g = dp + i * e;
    const int64_t n = rows[i].count;
    // p = Σ_t a_t·y_t → dy_t += a_t·dp, da_t = y_t·dp
    T weighted = T(0);
    for (int64_t t = 0; t < n; ++t) {
      T d = T(0);
      for (int64_t j = 0; j < e; ++j) {
        dseq[t * e + j] += a[t] * g[j];
        d += seq[t * e + j] * g[j];
      }
      da[static_cast<size_t>(t)] = d;
      weighted += a[t] * d;
    }
    // a = softmax(s) → ds_t = a_t·(da_t − Σ_k a_k·da_k); s_t = y_t·u → dy_t += ds_t·u, du += ds_t·y_t
    for (int64_t t = 0; t < n; ++t) {
      const T ds = a[t] * (da[static_cast<size_t>(t)] - weighted);
      for (int64_t j = 0; j < e; ++j) {
        dseq[t * e + j] += ds * u[j];
        du[j] += ds * seq[t * e + j];
      }
    }
  }
}

#define ATTN_INSTANTIATE(T)                                                                     \
  template void attention_pool_forward<T>(const T*, const T*, const pool_row*, T*, T*, int64_t, \
                                          int64_t, int64_t);                                   \
  template void attention_pool_backward<T>(const T*, const T*, const T*, const pool_row*,      \
                                           const T*, T*, T*, int64_t, int64_t, int64_t);
ATTN_INSTANTIATE(float)
ATTN_INSTANTIATE(double)
#undef ATTN_INSTANTIATE

}  // namespace attn::nn
