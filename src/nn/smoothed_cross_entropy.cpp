// Label-smoothed cross-entropy's forward and backward (see smoothed_cross_entropy.hpp); each row's
// sums in double.
#include "nn/smoothed_cross_entropy.hpp"

#include <algorithm>
#include <cmath>

namespace attn::nn {

template <class T>
T smoothed_cross_entropy_forward(const T* logits, const int64_t* targets, int64_t rows, int64_t classes,
                                 double smoothing, T* row_lse) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const T* z = logits + r * classes;
    const double m = static_cast<double>(*std::max_element(z, z + classes));
    double sum = 0, mean_z = 0;
    for (int64_t j = 0; j < classes; ++j) {
      sum += std::exp(static_cast<double>(z[j]) - m);
      mean_z += static_cast<double>(z[j]);
    }
    const double lse = m + std::log(sum);
    mean_z /= static_cast<double>(classes);
    row_lse[r] = static_cast<T>(lse);
    // −log p_t = lse − z_t; mean_j(−log p_j) = lse − mean_j z_j
    total += (1.0 - smoothing) * (lse - static_cast<double>(z[targets[r]])) + smoothing * (lse - mean_z);
  }
  return rows > 0 ? static_cast<T>(total / static_cast<double>(rows)) : T(0);
}

template <class T>
void smoothed_cross_entropy_backward(const T* logits, const int64_t* targets, const T* row_lse, T* dlogits,
                                     int64_t rows, int64_t classes, double smoothing) {
  const double scale = rows > 0 ? 1.0 / static_cast<double>(rows) : 0.0;
  const double spread = smoothing / static_cast<double>(classes);
  for (int64_t r = 0; r < rows; ++r) {
    const T* z = logits + r * classes;
    T* d = dlogits + r * classes;
    const double lse = static_cast<double>(row_lse[r]);
    for (int64_t j = 0; j < classes; ++j)
      d[j] = static_cast<T>((std::exp(static_cast<double>(z[j]) - lse) - spread) * scale);
    d[targets[r]] = static_cast<T>(static_cast<double>(d[targets[r]]) - (1.0 - smoothing) * scale);
  }
}

template float smoothed_cross_entropy_forward<float>(const float*, const int64_t*, int64_t, int64_t, double, float*);
template double smoothed_cross_entropy_forward<double>(const double*, const int64_t*, int64_t, int64_t, double,
                                                       double*);
template void smoothed_cross_entropy_backward<float>(const float*, const int64_t*, const float*, float*, int64_t,
                                                     int64_t, double);
template void smoothed_cross_entropy_backward<double>(const double*, const int64_t*, const double*, double*, int64_t,
                                                      int64_t, double);

}  // namespace attn::nn
