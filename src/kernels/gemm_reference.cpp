// The specification of kernels::gemm: three loops, float64 sums.

#include "kernels/gemm.hpp"

namespace attn::kernels::ref {

void gemm(const gemm_args& g) {
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < g.k; ++p) {
        const double a = g.trans_a ? g.a[p * g.lda + i] : g.a[i * g.lda + p];
        const double b = g.trans_b ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j];
        sum += a * b;
      }
      float& c = *g.c_at(i, j);
      const double before = g.beta == 0.0f ? 0.0 : static_cast<double>(g.beta) * c;
      const double bias = g.bias != nullptr ? static_cast<double>(g.bias[j]) : 0.0;
      c = static_cast<float>(static_cast<double>(g.alpha) * sum + before + bias);
    }
}

}  // namespace attn::kernels::ref
