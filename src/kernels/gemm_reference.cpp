// The specification of kernels::gemm: three loops, float64 sums.

#include "kernels/gemm.hpp"

#include "core/half.hpp"

namespace attn::kernels::ref {

namespace {

// C = alpha · Σ read(op(A)[i, p]) · read(op(B)[p, j]) + beta · C + bias, in float64.
template <class Read>
void product(const gemm_args& g, Read read) {
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < g.k; ++p) {
        const double a = read(g.trans_a ? g.a[p * g.lda + i] : g.a[i * g.lda + p]);
        const double b = read(g.trans_b ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j]);
        sum += a * b;
      }
      float& c = *g.c_at(i, j);
      const double before = g.beta == 0.0f ? 0.0 : static_cast<double>(g.beta) * c;
      const double bias = g.bias != nullptr ? static_cast<double>(g.bias[j]) : 0.0;
      c = static_cast<float>(static_cast<double>(g.alpha) * sum + before + bias);
    }
}

}  // namespace

void gemm(const gemm_args& g) {
  product(g, [](float x) { return static_cast<double>(x); });
}

void gemm_bf16(const gemm_args& g) {
  product(g, [](float x) { return static_cast<double>(bf16_to_float(float_to_bf16(x))); });
}

}  // namespace attn::kernels::ref
