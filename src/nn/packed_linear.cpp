#include "nn/packed_linear.hpp"

namespace attn::nn {

namespace {

// x·Wᵀ: W [out, in] is op(B) transposed.
kernels::gemm_args xwt(const tensor& weight) {
  kernels::gemm_args g;
  g.trans_b = true;
  g.n = weight.dim(0), g.k = weight.dim(1);
  g.b = weight.data(), g.ldb = g.k;
  return g;
}

}  // namespace

packed_linear::packed_linear(const tensor& weight, const tensor& bias)
    : weight_(weight.contiguous()),
      bias_(bias.empty() ? tensor() : bias.contiguous()),
      packed_(xwt(weight_)) {}

void packed_linear::apply(const float* x, int64_t rows, float* y, int64_t ldy, int64_t first,
                          int64_t count) const {
  kernels::gemm_args g = xwt(weight_);
  g.m = rows, g.n = count;
  g.a = x, g.lda = in();
  g.b += first * g.ldb;
  g.c = y, g.ldc = ldy;
  g.bias = bias_.empty() ? nullptr : bias_.data() + first;
  kernels::gemm(g, packed_, first);
}

void packed_linear::apply_as_heads(const float* x, int64_t B, int64_t L, float* y,
                                   int64_t head_size) const {
  kernels::gemm_args g = xwt(weight_);
  g.m = B * L;
  g.a = x, g.lda = in();
  g.c = y, g.ldc = head_size;
  g.c_rows = L, g.c_row_group_stride = L * out();          // one batch: every head
  g.c_cols = head_size, g.c_col_group_stride = L * head_size;  // one head: [L, head_size]
  g.bias = bias_.empty() ? nullptr : bias_.data();
  kernels::gemm(g, packed_);
}

}  // namespace attn::nn
