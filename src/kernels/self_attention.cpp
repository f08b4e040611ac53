// Basic self-attention with Q = K = V = E (seed 000), keeping every step for `attn explain`.
#include "attn/self_attention.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "attn/error.hpp"

namespace attn {

namespace {

// Max-subtracted softmax of n doubles in place; all -inf (or n == 0) gives all zeros, since a
// row with nothing to attend to should contribute nothing rather than 0/0 = NaN.
void softmax_in_place(double* row, int64_t n) {
  double row_max = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n; ++j)
    if (std::isnan(row[j]) || row[j] > row_max) row_max = row[j];
  if (row_max == -std::numeric_limits<double>::infinity()) {
    for (int64_t j = 0; j < n; ++j) row[j] = 0.0;
    return;
  }
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    row[j] = std::exp(row[j] - row_max);
    sum += row[j];
  }
  for (int64_t j = 0; j < n; ++j) row[j] /= sum;
}

}  // namespace

// e [N, d] → scores, scaled, weights [N, N], context [N, d]
self_attention_steps self_attention(const tensor& e, const scale_spec& scale) {
  check_rank(e, 2, "e");
  const int64_t n = e.dim(0), d = e.dim(1);
  const int64_t s0 = e.strides()[0], s1 = e.strides()[1];
  const float* x = e.data();

  self_attention_steps steps{tensor({n, n}), scale.resolve(d), tensor({n, n}), tensor({n, n}),
                             tensor({n, d})};
  // The steps are chained in double and rounded to float only when stored, so each stored step
  // is the correctly rounded exact value rather than one that inherits earlier roundings.
  std::vector<double> row(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0.0;
      for (int64_t k = 0; k < d; ++k)
        dot += static_cast<double>(x[i * s0 + k * s1]) * static_cast<double>(x[j * s0 + k * s1]);
      const double scaled = dot * steps.scale;
      steps.scores.data()[i * n + j] = static_cast<float>(dot);
      steps.scaled.data()[i * n + j] = static_cast<float>(scaled);
      row[static_cast<size_t>(j)] = scaled;
    }
    softmax_in_place(row.data(), n);
    for (int64_t j = 0; j < n; ++j)
      steps.weights.data()[i * n + j] = static_cast<float>(row[static_cast<size_t>(j)]);
    for (int64_t k = 0; k < d; ++k) {
      double acc = 0.0;
      for (int64_t j = 0; j < n; ++j)
        acc += row[static_cast<size_t>(j)] * static_cast<double>(x[j * s0 + k * s1]);
      steps.context.data()[i * d + k] = static_cast<float>(acc);
    }
  }
  return steps;
}

// x [rows, cols] → softmax of each row [rows, cols]
tensor softmax_rows(const tensor& x) {
  check_rank(x, 2, "x");
  const int64_t rows = x.dim(0), cols = x.dim(1);
  const int64_t s0 = x.strides()[0], s1 = x.strides()[1];
  tensor out({rows, cols});
  std::vector<double> row(static_cast<size_t>(cols));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j)
      row[static_cast<size_t>(j)] = static_cast<double>(x.data()[i * s0 + j * s1]);
    softmax_in_place(row.data(), cols);
    for (int64_t j = 0; j < cols; ++j)
      out.data()[i * cols + j] = static_cast<float>(row[static_cast<size_t>(j)]);
  }
  return out;
}

}  // namespace attn
