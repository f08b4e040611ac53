// Softmax cross-entropy: the row maximum is subtracted before exp, so large logits cannot
// overflow, and log-sum-exp is computed once per row.
#include "nn/cross_entropy.hpp"

#include <algorithm>
#include <cmath>

namespace attn::nn {

namespace {

template <class T>
T row_log_sum_exp(const T* z, int64_t c) {
  const T top = *std::max_element(z, z + c);
  T sum = 0;
  for (int64_t j = 0; j < c; ++j) sum += std::exp(z[j] - top);
  return top + std::log(sum);
}

}  // namespace

template <class T>
T cross_entropy_forward(const T* logits, const int64_t* targets, T* probabilities, int64_t r,
                        int64_t c) {
  T total = 0;
  for (int64_t i = 0; i < r; ++i) {
    const T* z = logits + i * c;
    const T lse = row_log_sum_exp(z, c);
    total += lse - z[targets[i]];  // -log softmax(z)[t] = lse(z) − z[t]
    if (probabilities != nullptr)
      for (int64_t j = 0; j < c; ++j) probabilities[i * c + j] = std::exp(z[j] - lse);
  }
  return r > 0 ? total / static_cast<T>(r) : T(0);
}

template <class T>
void cross_entropy_backward(const T* logits, const int64_t* targets, T* dlogits, int64_t r,
                            int64_t c, T dloss) {
  const T scale = r > 0 ? dloss / static_cast<T>(r) : T(0);
  for (int64_t i = 0; i < r; ++i) {
    const T* z = logits + i * c;
    const T lse = row_log_sum_exp(z, c);
    for (int64_t j = 0; j < c; ++j)  // d(lse − z[t])/dz = softmax(z) − onehot(t)
      dlogits[i * c + j] = (std::exp(z[j] - lse) - (j == targets[i] ? T(1) : T(0))) * scale;
  }
}

template float cross_entropy_forward<float>(const float*, const int64_t*, float*, int64_t, int64_t);
template double cross_entropy_forward<double>(const double*, const int64_t*, double*, int64_t,
                                              int64_t);
template void cross_entropy_backward<float>(const float*, const int64_t*, float*, int64_t, int64_t,
                                            float);
template void cross_entropy_backward<double>(const double*, const int64_t*, double*, int64_t,
                                             int64_t, double);

}  // namespace attn::nn
