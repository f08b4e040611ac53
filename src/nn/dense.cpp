// The trainable layers' products on OpenBLAS, single-threaded: a product's summation order is
// then fixed, so a training run repeats bit for bit.
#include "nn/dense.hpp"

#include <cblas.h>

#include <algorithm>
#include <mutex>

namespace attn::nn {

namespace {

void single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// BLAS leaves C untouched when k = 0 only for beta = 1; the layers expect C·beta then.
template <class T>
bool trivial(int64_t m, int64_t n, int64_t k, T beta, T* c) {
  if (m == 0 || n == 0) return true;
  if (k != 0) return false;
  std::for_each(c, c + m * n, [beta](T& x) { x = beta == T(0) ? T(0) : x * beta; });
  return true;
}

}  // namespace

template <>
void gemm<float>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                 const float* b, float beta, float* c) {
  if (trivial(m, n, k, beta, c)) return;
  single_threaded_blas();
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(trans_a ? m : k), b,
              static_cast<int>(trans_b ? k : n), beta, c, static_cast<int>(n));
}

template <>
void gemm<double>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a,
                  const double* b, double beta, double* c) {
  if (trivial(m, n, k, beta, c)) return;
  single_threaded_blas();
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0, a, static_cast<int>(trans_a ? m : k), b,
              static_cast<int>(trans_b ? k : n), beta, c, static_cast<int>(n));
}

}  // namespace attn::nn
