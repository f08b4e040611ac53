// Softmax cross-entropy: the row maximum is subtracted before exp, so large logits cannot
// overflow, and log-sum-exp is computed once per row. The double version is the
// specification (std::exp); the float version trains, and a language model's output makes it
// hot (R × C exponentials, C the vocabulary, twice a step): its rows run in parallel and its
// exponential is a polynomial the compiler vectorises.
#include "nn/cross_entropy.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/exp_nonpositive.hpp"
#include "kernels/isa_clones.hpp"

namespace attn::nn {

namespace {

using kernels::exp_nonpositive;

double row_log_sum_exp(const double* z, int64_t c) {
  const double top = *std::max_element(z, z + c);
  double sum = 0;
  for (int64_t j = 0; j < c; ++j) sum += std::exp(z[j] - top);
  return top + std::log(sum);
}

// The hot loops are compiled for AVX-512, AVX2 + FMA and the baseline, and run in the one the
// selected instruction set names (kernels/isa_clones.hpp).
ATTN_ISA_CLONES(float, row_log_sum_exp, (const float* z, int64_t c), (z, c)) {
  float top = z[0];
#pragma omp simd reduction(max : top)
  for (int64_t j = 1; j < c; ++j) top = top > z[j] ? top : z[j];
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < c; ++j) sum += exp_nonpositive(z[j] - top);
  return top + std::log(sum);
}

// Parallel over rows only when there is enough work to share.
bool worth_threads(int64_t r, int64_t c) { return r * c >= (int64_t{1} << 16); }

// d = (e^(z − lse) − onehot(target)) · scale
ATTN_ISA_CLONES(void, softmax_gradient_row,
                (const float* __restrict z, float lse, int64_t target, float scale, float* __restrict d,
                 int64_t c),
                (z, lse, target, scale, d, c)) {
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) d[j] = exp_nonpositive(z[j] - lse) * scale;
  d[target] -= scale;
}

// z = (e^(z − lse) − onehot(target)) · scale, in place (the fused output's block of logits)
ATTN_ISA_CLONES(void, softmax_gradient_in_place,
                (float* __restrict z, float lse, int64_t target, float scale, int64_t c),
                (z, lse, target, scale, c)) {
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) z[j] = exp_nonpositive(z[j] - lse) * scale;
  z[target] -= scale;
}

// to[j] += from[j]
ATTN_ISA_CLONES(void, add_row, (const float* __restrict from, float* __restrict to, int64_t c), (from, to, c)) {
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) to[j] += from[j];
}

}  // namespace

float cross_entropy_row_in_place(float* z, int64_t target, float scale, int64_t c, float* column_sums) {
  const float lse = row_log_sum_exp(z, c);
  const float loss = lse - z[target];
  softmax_gradient_in_place(z, lse, target, scale, c);
  if (column_sums != nullptr) add_row(z, column_sums, c);
  return loss;
}

double cross_entropy_forward(const double* logits, const int64_t* targets, double* probabilities,
                             int64_t r, int64_t c, double* row_lse) {
  double total = 0;
  for (int64_t i = 0; i < r; ++i) {
    const double* z = logits + i * c;
    const double lse = row_log_sum_exp(z, c);
    if (row_lse != nullptr) row_lse[i] = lse;
    total += lse - z[targets[i]];  // -log softmax(z)[t] = lse(z) − z[t]
    if (probabilities != nullptr)
      for (int64_t j = 0; j < c; ++j) probabilities[i * c + j] = std::exp(z[j] - lse);
  }
  return r > 0 ? total / static_cast<double>(r) : 0.0;
}

float cross_entropy_forward(const float* logits, const int64_t* targets, float* probabilities,
                            int64_t r, int64_t c, float* row_lse) {
  double total = 0;  // summed in double: R may be thousands of rows
#pragma omp parallel for reduction(+ : total) if (worth_threads(r, c))
  for (int64_t i = 0; i < r; ++i) {
    const float* z = logits + i * c;
    const float lse = row_log_sum_exp(z, c);
    if (row_lse != nullptr) row_lse[i] = lse;
    total += static_cast<double>(lse - z[targets[i]]);
    if (probabilities != nullptr) {
      float* p = probabilities + i * c;
#pragma omp simd
      for (int64_t j = 0; j < c; ++j) p[j] = exp_nonpositive(z[j] - lse);
    }
  }
  return r > 0 ? static_cast<float>(total / static_cast<double>(r)) : 0.0f;
}

void cross_entropy_backward(const double* logits, const int64_t* targets, double* dlogits, int64_t r,
                            int64_t c, double dloss, const double* row_lse, double* column_sums) {
  const double scale = r > 0 ? dloss / static_cast<double>(r) : 0.0;
  for (int64_t i = 0; i < r; ++i) {
    const double* z = logits + i * c;
    const double lse = row_lse != nullptr ? row_lse[i] : row_log_sum_exp(z, c);
    for (int64_t j = 0; j < c; ++j)  // d(lse − z[t])/dz = softmax(z) − onehot(t)
      dlogits[i * c + j] = (std::exp(z[j] - lse) - (j == targets[i] ? 1.0 : 0.0)) * scale;
  }
  for (int64_t i = 0; i < r && column_sums != nullptr; ++i)
    for (int64_t j = 0; j < c; ++j) column_sums[j] += dlogits[i * c + j];
}

void cross_entropy_backward(const float* logits, const int64_t* targets, float* dlogits, int64_t r,
                            int64_t c, float dloss, const float* row_lse, float* column_sums) {
  const float scale = r > 0 ? dloss / static_cast<float>(r) : 0.0f;
  // The rows in (at most) 32 runs, shared among the threads: each run sums its columns on its own,
  // and the runs are added in order, so the sums do not depend on the thread count.
  const int64_t chunk_rows = std::max<int64_t>(1, (r + 31) / 32);
  const int64_t chunks = (r + chunk_rows - 1) / chunk_rows;
  std::vector<float> partial(column_sums != nullptr ? static_cast<size_t>(chunks * c) : 0, 0.0f);
#pragma omp parallel for schedule(static) if (worth_threads(r, c))
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    for (int64_t i = chunk * chunk_rows; i < std::min(r, (chunk + 1) * chunk_rows); ++i) {
      const float* z = logits + i * c;
      const float lse = row_lse != nullptr ? row_lse[i] : row_log_sum_exp(z, c);
      softmax_gradient_row(z, lse, targets[i], scale, dlogits + i * c, c);
      if (column_sums != nullptr) add_row(dlogits + i * c, partial.data() + chunk * c, c);
    }
  }
  for (int64_t chunk = 0; chunk < chunks && column_sums != nullptr; ++chunk)
    add_row(partial.data() + chunk * c, column_sums, c);
}

}  // namespace attn::nn
