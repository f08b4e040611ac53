// Layer normalisation and its backward pass (see layer_norm.hpp).
#include "nn/layer_norm.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/isa_clones.hpp"
#include "nn/parallel_elements.hpp"

namespace attn::nn {

namespace {
constexpr double eps = 1e-5;  // nn.LayerNorm's default

// Σ f(j) over j < e in double, in `lanes` running sums (lane j % lanes) added in order at the end:
// the order of every addition is fixed, so the bits are the same on any instruction set, and the
// compiler can keep the lanes in vector registers rather than wait on one long chain of adds
// (a row of 256 was 256 dependent additions).
constexpr int64_t lanes = 8;

template <class F>
[[gnu::always_inline]] inline double lane_sum(int64_t e, const F& f) {
  double part[lanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  const int64_t whole = e / lanes * lanes;
  for (int64_t j = 0; j < whole; j += lanes)
    for (int64_t l = 0; l < lanes; ++l) part[l] += f(j + l);
  for (int64_t j = whole; j < e; ++j) part[j - whole] += f(j);
  double sum = 0;
  for (int64_t l = 0; l < lanes; ++l) sum += part[l];
  return sum;
}

// One row of the forward: mean and variance in double, y = (x − μ)·rstd·γ + β.
template <class T>
[[gnu::always_inline]] inline void forward_row(const T* row, const T* gamma, const T* beta, T* y, T* mean,
                                               T* rstd, int64_t e) {
  const double mu = lane_sum(e, [&](int64_t j) { return static_cast<double>(row[j]); }) / static_cast<double>(e);
  const double squares = lane_sum(e, [&](int64_t j) {
    const double c = static_cast<double>(row[j]) - mu;
    return c * c;
  });
  const double inv = 1.0 / std::sqrt(squares / static_cast<double>(e) + eps);
  *mean = static_cast<T>(mu);
  *rstd = static_cast<T>(inv);
  for (int64_t j = 0; j < e; ++j) y[j] = static_cast<T>((static_cast<double>(row[j]) - mu) * inv) * gamma[j] + beta[j];
}

// One row of the backward. With x̂ = (x − μ)·rstd and dx̂ = dy·γ: dx = rstd·(dx̂ − mean(dx̂) −
// x̂·mean(dx̂·x̂)). One pass for both sums (in lane_sum's lanes and order, so the same bits) and
// γ's and β's gradients (pg, pb: this run of rows' sums, in double).
template <class T>
[[gnu::always_inline]] inline void backward_row(const T* g, const T* row, const T* gamma, T mean, T rstd, T* dx,
                                                double* pg, double* pb, int64_t e) {
  double part_dxhat[lanes] = {0, 0, 0, 0, 0, 0, 0, 0}, part_dxhat_xhat[lanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  const auto visit = [&](int64_t j, int64_t l) {
    const double xhat = (static_cast<double>(row[j]) - mean) * rstd;
    const double dxhat = static_cast<double>(g[j]) * gamma[j];
    part_dxhat[l] += dxhat;
    part_dxhat_xhat[l] += dxhat * xhat;
    pg[j] += static_cast<double>(g[j]) * xhat;  // y = x̂·γ + β
    pb[j] += static_cast<double>(g[j]);
  };
  const int64_t whole = e / lanes * lanes;
  for (int64_t j = 0; j < whole; j += lanes)
    for (int64_t l = 0; l < lanes; ++l) visit(j + l, l);
  for (int64_t j = whole; j < e; ++j) visit(j, j - whole);
  double sum_dxhat = 0, sum_dxhat_xhat = 0;
  for (int64_t l = 0; l < lanes; ++l) sum_dxhat += part_dxhat[l], sum_dxhat_xhat += part_dxhat_xhat[l];
  const double inv_e = 1.0 / static_cast<double>(e);
  for (int64_t j = 0; j < e; ++j) {
    const double xhat = (static_cast<double>(row[j]) - mean) * rstd;
    const double dxhat = static_cast<double>(g[j]) * gamma[j];
    dx[j] += static_cast<T>(rstd * (dxhat - sum_dxhat * inv_e - xhat * sum_dxhat_xhat * inv_e));
  }
}

// The float rows (training's) compiled for AVX-512, AVX2 and the baseline, run in the one the
// selected instruction set names (kernels/isa_clones.hpp): the same operations in the same order
// on each (the lanes are explicit, and ISO C++ contracts no a·b + c into an FMA), so the same
// bits, 8 doubles a vector rather than the baseline's 2. Each layer norm of a translator's step
// was ~1.3 ns an element before.
ATTN_ISA_CLONES(void, forward_rows,
                (const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                 int64_t first, int64_t last, int64_t e),
                (x, gamma, beta, y, mean, rstd, first, last, e)) {
  for (int64_t r = first; r < last; ++r) forward_row(x + r * e, gamma, beta, y + r * e, mean + r, rstd + r, e);
}

void forward_rows(const double* x, const double* gamma, const double* beta, double* y, double* mean,
                  double* rstd, int64_t first, int64_t last, int64_t e) {
  for (int64_t r = first; r < last; ++r) forward_row(x + r * e, gamma, beta, y + r * e, mean + r, rstd + r, e);
}

ATTN_ISA_CLONES(void, backward_rows,
                (const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                 float* dx, double* pg, double* pb, int64_t first, int64_t last, int64_t e),
                (dy, x, gamma, mean, rstd, dx, pg, pb, first, last, e)) {
  for (int64_t r = first; r < last; ++r)
    backward_row(dy + r * e, x + r * e, gamma, mean[r], rstd[r], dx + r * e, pg, pb, e);
}

void backward_rows(const double* dy, const double* x, const double* gamma, const double* mean, const double* rstd,
                   double* dx, double* pg, double* pb, int64_t first, int64_t last, int64_t e) {
  for (int64_t r = first; r < last; ++r)
    backward_row(dy + r * e, x + r * e, gamma, mean[r], rstd[r], dx + r * e, pg, pb, e);
}

}  // namespace

template <class T>
void layer_norm_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd,
                        int64_t n, int64_t e) {
  // Runs of rows, so that each thread calls the row loop once (the clones' dispatch is a call).
  constexpr int64_t run = 64;
  const int64_t runs = (n + run - 1) / run;
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n * e))
  for (int64_t k = 0; k < runs; ++k) forward_rows(x, gamma, beta, y, mean, rstd, k * run, std::min(n, (k + 1) * run), e);
}

template <class T>
void layer_norm_backward(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd,
                         T* dx, T* dgamma, T* dbeta, int64_t n, int64_t e) {
  // dγ and dβ sum over the rows: each run of chunk_rows rows sums its own (in double), and the
  // runs are added in order, so the threads share the rows and the bits do not depend on how many
  // there are.
  constexpr int64_t chunk_rows = 256;
  const int64_t chunks = (n + chunk_rows - 1) / chunk_rows;
  std::vector<double> partial(static_cast<size_t>(chunks * 2 * e), 0.0);  // [chunk][dγ | dβ][e]
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n * e))
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    double* pg = partial.data() + chunk * 2 * e;
    backward_rows(dy, x, gamma, mean, rstd, dx, pg, pg + e, chunk * chunk_rows,
                  std::min(n, (chunk + 1) * chunk_rows), e);
  }
  for (int64_t chunk = 0; chunk < chunks; ++chunk)
    for (int64_t j = 0; j < e; ++j) {
      dgamma[j] += static_cast<T>(partial[static_cast<size_t>(chunk * 2 * e + j)]);
      dbeta[j] += static_cast<T>(partial[static_cast<size_t>(chunk * 2 * e + e + j)]);
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
