// Row-major matrix products for the trainable layers, in float or double (the double versions
// are the specification the gradient checks run). C = alpha·op(A)·op(B) + beta·C.
#pragma once

#include <cstdint>

namespace attn::nn {

// op(A) [m, k], op(B) [k, n], C [m, n]; trans_a: A is stored [k, m]; trans_b: B is stored [n, k].
// beta = 0 overwrites C, beta = 1 accumulates into it (gradients add up over a batch).
// bias [n], when given, is added to every row (a linear layer's b, in the product's last pass
// over C rather than in one of its own). bf16: each element of A and B rounded to bf16 first,
// the sums kept in T (kernels::gemm_bf16; in double, the specification of that product).
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b,
          T beta, T* c, const T* bias = nullptr, bool bf16 = false);

}  // namespace attn::nn
