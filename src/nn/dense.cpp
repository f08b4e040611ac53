// The trainable layers' products: float on attn's own sgemm (kernels::gemm sums each element in
// a fixed order whatever the thread count, so a training run repeats bit for bit), double on
// plain loops (the specification the gradient checks run; small shapes only).
#include "nn/dense.hpp"

#include <algorithm>

#include "core/half.hpp"
#include "kernels/gemm.hpp"
#include "nn/autocast.hpp"
#include "nn/serial_when_small.hpp"

namespace attn::nn {

namespace {
std::atomic<bool> autocast_on{false};
}  // namespace

bool bf16_products() { return autocast_on.load(std::memory_order_relaxed); }

bf16_autocast::bf16_autocast(bool on) : before_(autocast_on.load()) { autocast_on.store(before_ || on); }
bf16_autocast::~bf16_autocast() { autocast_on.store(before_); }

template <>
void gemm<float>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                 const float* b, float beta, float* c, const float* bias, bool bf16) {
  kernels::gemm_args g;
  g.trans_a = trans_a, g.trans_b = trans_b;
  g.m = m, g.n = n, g.k = k;
  g.a = a, g.lda = trans_a ? m : k;
  g.b = b, g.ldb = trans_b ? k : n;
  g.beta = beta;
  g.c = c, g.ldc = n;
  g.bias = bias;
  const serial_when_small serial(m * n * k);
  if (bf16 || bf16_products())
    kernels::gemm_bf16(g);
  else
    kernels::gemm(g);  // k = 0 gives C·beta, as the layers expect
}

template <>
void gemm<double>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a,
                  const double* b, double beta, double* c, const double* bias, bool bf16) {
  const auto read = [bf16](double x) {
    return bf16 ? static_cast<double>(bf16_to_float(float_to_bf16(static_cast<float>(x)))) : x;
  };
  const auto at = [&](int64_t i, int64_t p) { return read(trans_a ? a[p * m + i] : a[i * k + p]); };
  for (int64_t i = 0; i < m; ++i) {
    double* row = c + i * n;
    if (beta == 0.0) std::fill(row, row + n, 0.0);
    else if (beta != 1.0) std::for_each(row, row + n, [beta](double& x) { x *= beta; });
    if (trans_b) {  // B stored [n, k]: a dot product per element
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < k; ++p) sum += at(i, p) * read(b[j * k + p]);
        row[j] += sum;
      }
    } else {  // B [k, n]: add rows of B, scaled
      for (int64_t p = 0; p < k; ++p) {
        const double x = at(i, p);
        const double* brow = b + p * n;
        for (int64_t j = 0; j < n; ++j) row[j] += x * read(brow[j]);
      }
    }
    if (bias != nullptr)
      for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
  }
}

}  // namespace attn::nn
