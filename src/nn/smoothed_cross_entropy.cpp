// Label-smoothed cross-entropy's forward and backward (see smoothed_cross_entropy.hpp). Each
// row's sums are in double; for float logits the exponentials are float and vectorised
// (kernels::exp_nonpositive, relative error near 1e-7) and the rows are shared among the threads:
// with libm's double exp, one thread, the loss of a translator's batch (8,000 classes) took a
// quarter of its training step. A row's bits do not depend on the thread count, and the mean
// adds the rows' losses in order.
#include "nn/smoothed_cross_entropy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/exp_nonpositive.hpp"
#include "kernels/isa_clones.hpp"

namespace attn::nn {

namespace {

// A row's log-sum-exp and the mean of its logits.
struct row_statistics {
  double lse = 0, mean = 0;
};

ATTN_ISA_CLONES(row_statistics, statistics_of, (const float* z, int64_t classes), (z, classes)) {
  float top = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : top)
  for (int64_t j = 0; j < classes; ++j) top = std::max(top, z[j]);
  double sum = 0, total = 0;
#pragma omp simd reduction(+ : sum, total)
  for (int64_t j = 0; j < classes; ++j) {
    sum += kernels::exp_nonpositive(z[j] - top);
    total += z[j];
  }
  return {static_cast<double>(top) + std::log(sum), total / static_cast<double>(classes)};
}

row_statistics statistics_of(const double* z, int64_t classes) {
  const double top = *std::max_element(z, z + classes);
  double sum = 0, total = 0;
  for (int64_t j = 0; j < classes; ++j) {
    sum += std::exp(z[j] - top);
    total += z[j];
  }
  return {top + std::log(sum), total / static_cast<double>(classes)};
}

// d = (softmax − ε/C)·scale, softmax = exp(z − lse).
ATTN_ISA_CLONES(void, softmax_minus_spread,
                (const float* z, double lse, double spread, double scale, float* d, int64_t classes),
                (z, lse, spread, scale, d, classes)) {
  const auto l = static_cast<float>(lse), s = static_cast<float>(spread), k = static_cast<float>(scale);
#pragma omp simd
  for (int64_t j = 0; j < classes; ++j) d[j] = (kernels::exp_nonpositive(z[j] - l) - s) * k;
}

void softmax_minus_spread(const double* z, double lse, double spread, double scale, double* d, int64_t classes) {
  for (int64_t j = 0; j < classes; ++j) d[j] = (std::exp(z[j] - lse) - spread) * scale;
}

}  // namespace

template <class T>
T smoothed_cross_entropy_forward(const T* logits, const int64_t* targets, int64_t rows, int64_t classes,
                                 double smoothing, T* row_lse) {
  std::vector<double> loss(static_cast<size_t>(std::max<int64_t>(rows, 0)));
#pragma omp parallel for schedule(static) if (rows * classes >= (int64_t{1} << 16))
  for (int64_t r = 0; r < rows; ++r) {
    const T* z = logits + r * classes;
    const row_statistics s = statistics_of(z, classes);
    row_lse[r] = static_cast<T>(s.lse);
    // −log p_t = lse − z_t; mean_j(−log p_j) = lse − mean_j z_j
    loss[static_cast<size_t>(r)] =
        (1.0 - smoothing) * (s.lse - static_cast<double>(z[targets[r]])) + smoothing * (s.lse - s.mean);
  }
  double total = 0;
  for (const double l : loss) total += l;
  return rows > 0 ? static_cast<T>(total / static_cast<double>(rows)) : T(0);
}

template <class T>
void smoothed_cross_entropy_backward(const T* logits, const int64_t* targets, const T* row_lse, T* dlogits,
                                     int64_t rows, int64_t classes, double smoothing) {
  const double scale = rows > 0 ? 1.0 / static_cast<double>(rows) : 0.0;
  const double spread = smoothing / static_cast<double>(classes);
#pragma omp parallel for schedule(static) if (rows * classes >= (int64_t{1} << 16))
  for (int64_t r = 0; r < rows; ++r) {
    T* d = dlogits + r * classes;
    softmax_minus_spread(logits + r * classes, static_cast<double>(row_lse[r]), spread, scale, d, classes);
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
