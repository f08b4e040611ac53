// Layer normalisation and its backward pass (see layer_norm.hpp).
#include "nn/layer_norm.hpp"

#include <cmath>

namespace attn::nn {

namespace {
constexpr double eps = 1e-5;  // nn.LayerNorm's default
}

template <class T>
void layer_norm_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd,
                        int64_t n, int64_t e) {
  for (int64_t r = 0; r < n; ++r) {
    const T* row = x + r * e;
    // Mean and variance in double: a row of E floats, summed once.
    double sum = 0, squares = 0;
    for (int64_t j = 0; j < e; ++j) sum += static_cast<double>(row[j]);
    const double mu = sum / static_cast<double>(e);
    for (int64_t j = 0; j < e; ++j) {
      const double c = static_cast<double>(row[j]) - mu;
      squares += c * c;
    }
    const double inv = 1.0 / std::sqrt(squares / static_cast<double>(e) + eps);
    mean[r] = static_cast<T>(mu);
    rstd[r] = static_cast<T>(inv);
    for (int64_t j = 0; j < e; ++j)  // y = (x − μ)·rstd·γ + β
      y[r * e + j] = static_cast<T>((static_cast<double>(row[j]) - mu) * inv) * gamma[j] + beta[j];
  }
}

template <class T>
void layer_norm_backward(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd,
                         T* dx, T* dgamma, T* dbeta, int64_t n, int64_t e) {
  for (int64_t r = 0; r < n; ++r) {
    const T* row = x + r * e;
    const T* g = dy + r * e;
    // With x̂ = (x − μ)·rstd and dx̂ = dy·γ: dx = rstd·(dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂)).
    double sum_dxhat = 0, sum_dxhat_xhat = 0;
    for (int64_t j = 0; j < e; ++j) {
      const double xhat = (static_cast<double>(row[j]) - mean[r]) * rstd[r];
      const double dxhat = static_cast<double>(g[j]) * gamma[j];
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * xhat;
      dgamma[j] += static_cast<T>(g[j] * xhat);  // y = x̂·γ + β
      dbeta[j] += g[j];
    }
    const double inv_e = 1.0 / static_cast<double>(e);
    for (int64_t j = 0; j < e; ++j) {
      const double xhat = (static_cast<double>(row[j]) - mean[r]) * rstd[r];
      const double dxhat = static_cast<double>(g[j]) * gamma[j];
      dx[r * e + j] += static_cast<T>(
          rstd[r] * (dxhat - sum_dxhat * inv_e - xhat * sum_dxhat_xhat * inv_e));
    }
  }
}

#define ATTN_INSTANTIATE(T)                                                                  \
  template void layer_norm_forward<T>(const T*, const T*, const T*, T*, T*, T*, int64_t,    \
                                      int64_t);                                             \
  template void layer_norm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, \
                                       T*, T*, int64_t, int64_t);
ATTN_INSTANTIATE(float)
ATTN_INSTANTIATE(double)
#undef ATTN_INSTANTIATE

}  // namespace attn::nn
