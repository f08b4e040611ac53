// Linear and ReLU with their backward passes (see linear_layer.hpp for the shapes).
#include "nn/linear_layer.hpp"

#include <algorithm>

#include "nn/dense.hpp"
#include "nn/parallel_elements.hpp"

namespace attn::nn {

template <class T>
void linear_forward(const T* x, const T* w, const T* b, T* y, int64_t n, int64_t in, int64_t out) {
  gemm<T>(false, true, n, out, in, x, w, T(0), y, b);  // y = x·wᵀ (+ b)
}

template <class T>
void linear_backward(const T* dy, const T* x, const T* w, T* dx, T* dw, T* db, int64_t n,
                     int64_t in, int64_t out) {
  if (dx != nullptr) gemm<T>(false, false, n, in, out, dy, w, T(1), dx);  // y = x·wᵀ → dx = dy·w
  if (dw != nullptr) gemm<T>(true, false, out, in, n, dy, x, T(1), dw);  // → dw = dyᵀ·x
  if (db == nullptr) return;  // y = … + b → db = Σ dy
  // The threads take blocks of outputs (a language model's 16k words × 4k rows is 67M adds);
  // each output sums its rows in order, as one thread would.
  constexpr int64_t block = 512;
#pragma omp parallel for schedule(static) if (n * out >= (int64_t{1} << 22))
  for (int64_t o0 = 0; o0 < out; o0 += block) {
    const int64_t o1 = std::min(out, o0 + block);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t o = o0; o < o1; ++o) db[o] += dy[r * out + o];
  }
}

template <class T>
void relu_forward(const T* x, T* y, int64_t n) {
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n))
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

template <class T>
void relu_backward(const T* dy, const T* x, T* dx, int64_t n) {
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n))
  for (int64_t i = 0; i < n; ++i)
    if (x[i] > T(0)) dx[i] += dy[i];
}

#define ATTN_INSTANTIATE(T)                                                                  \
  template void linear_forward<T>(const T*, const T*, const T*, T*, int64_t, int64_t,       \
                                  int64_t);                                                 \
  template void linear_backward<T>(const T*, const T*, const T*, T*, T*, T*, int64_t,       \
                                   int64_t, int64_t);                                       \
  template void relu_forward<T>(const T*, T*, int64_t);                                     \
  template void relu_backward<T>(const T*, const T*, T*, int64_t);
ATTN_INSTANTIATE(float)
ATTN_INSTANTIATE(double)
#undef ATTN_INSTANTIATE

}  // namespace attn::nn
