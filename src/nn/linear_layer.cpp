// Linear and ReLU with their backward passes (see linear_layer.hpp for the shapes).
#include "nn/linear_layer.hpp"

#include <algorithm>
#include <vector>

#include "nn/dense.hpp"
#include "nn/parallel_elements.hpp"

namespace attn::nn {

template <class T>
void linear_forward(const T* x, const T* w, const T* b, T* y, int64_t n, int64_t in, int64_t out,
                    bool bf16) {
  gemm<T>(false, true, n, out, in, x, w, T(0), y, b, bf16);  // y = x·wᵀ (+ b)
}

namespace {

// dx = dy·w + dx_beta·dx, dw += dyᵀ·x, db += Σ_rows dy
template <class T>
void linear_gradients(const T* dy, const T* x, const T* w, T* dx, T dx_beta, T* dw, T* db, int64_t n, int64_t in,
                      int64_t out, bool bf16) {
  if (dx != nullptr) gemm<T>(false, false, n, in, out, dy, w, dx_beta, dx, nullptr, bf16);  // y = x·wᵀ → dx = dy·w
  if (dw != nullptr) gemm<T>(true, false, out, in, n, dy, x, T(1), dw, nullptr, bf16);  // → dw = dyᵀ·x
  if (db == nullptr) return;  // y = … + b → db = Σ dy
  // The rows in up to 32 runs shared by the threads, each run summed on its own and the runs
  // added in order: the same bits on any thread count.
  const int64_t run = std::max<int64_t>(1, (n + 31) / 32), runs = (n + run - 1) / run;
  std::vector<T> partial(static_cast<size_t>(runs * out), T(0));
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n * out))
  for (int64_t k = 0; k < runs; ++k) {
    T* sums = partial.data() + k * out;
    for (int64_t r = k * run; r < std::min(n, (k + 1) * run); ++r)
      for (int64_t o = 0; o < out; ++o) sums[o] += dy[r * out + o];
  }
  for (int64_t k = 0; k < runs; ++k)
    for (int64_t o = 0; o < out; ++o) db[o] += partial[static_cast<size_t>(k * out + o)];
}

}  // namespace

template <class T>
void linear_backward(const T* dy, const T* x, const T* w, T* dx, T* dw, T* db, int64_t n,
                     int64_t in, int64_t out, bool bf16) {
  linear_gradients(dy, x, w, dx, T(1), dw, db, n, in, out, bf16);
}

template <class T>
void linear_backward_writing_dx(const T* dy, const T* x, const T* w, T* dx, T* dw, T* db, int64_t n,
                                int64_t in, int64_t out, bool bf16) {
  // beta 0: the sums are stored, C never read (kernels::gemm), the bits those of 0 + dy·w
  linear_gradients(dy, x, w, dx, T(0), dw, db, n, in, out, bf16);
}

template <class T>
void relu_forward(const T* x, T* y, int64_t n) {
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n))
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

template <class T>
void relu_backward(const T* dy, const T* x, T* dx, int64_t n) {
  // A mask multiplied in, not a branch: the signs of x are a coin toss, and the branch GCC made
  // of `if (x > 0) dx += dy` (or of a select, which it will not if-convert) mispredicted half
  // the time: 2.8% of a language-model step. This form vectorises. (dy · 0 differs from
  // leaving dx alone only where dy is inf or NaN, a step already lost.)
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n))
  for (int64_t i = 0; i < n; ++i) {
    const T keep = x[i] > T(0) ? T(1) : T(0);
    dx[i] += dy[i] * keep;
  }
}

template <class T>
void relu_backward_in_place(T* d, const T* x, int64_t n) {
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n))
  for (int64_t i = 0; i < n; ++i) d[i] = x[i] > T(0) ? d[i] : T(0);  // a select: a NaN where x ≤ 0 stays out, as in relu_backward
}

#define ATTN_INSTANTIATE(T)                                                                  \
  template void linear_forward<T>(const T*, const T*, const T*, T*, int64_t, int64_t,       \
                                  int64_t, bool);                                           \
  template void linear_backward<T>(const T*, const T*, const T*, T*, T*, T*, int64_t,       \
                                   int64_t, int64_t, bool);                                 \
  template void linear_backward_writing_dx<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, \
                                              int64_t, int64_t, bool);                      \
  template void relu_forward<T>(const T*, T*, int64_t);                                     \
  template void relu_backward_in_place<T>(T*, const T*, int64_t);                                     \
  template void relu_backward<T>(const T*, const T*, T*, int64_t);
ATTN_INSTANTIATE(float)
ATTN_INSTANTIATE(double)
#undef ATTN_INSTANTIATE

}  // namespace attn::nn
