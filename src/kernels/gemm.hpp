// Matrix products for the layers (projections, and their gradients): our own register-blocked
// sgemm, one translation unit per instruction set, with a float64 reference twin.
#pragma once

#include <cstdint>

namespace attn::kernels {

// C[m, n] = alpha · op(A) · op(B) + beta · C, every matrix row-major with its leading dimension
// (the distance between rows), the convention of cblas_sgemm(CblasRowMajor, ...):
//   op(A) is A [m, k], or Aᵀ when trans_a (A stored [k, m]);
//   op(B) is B [k, n], or Bᵀ when trans_b (B stored [n, k]).
// beta == 0 never reads C (it may hold garbage, NaN included).
struct gemm_args {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  float beta = 0.0f;
  float* c = nullptr;
  int64_t ldc = 0;
};

// On the OpenMP threads (one, when called inside a parallel region or for a small product).
void gemm(const gemm_args& g);

// The instruction set's kernel on `threads` OpenMP threads (gemm picks the set and the count).
void gemm_avx512(const gemm_args& g, int threads);
void gemm_avx2(const gemm_args& g, int threads);

// y[rows, out] = x[rows, in] · w[out, in]ᵀ (+ bias[out] when given); all dense: a linear layer.
void gemm_xwt(const float* x, int64_t rows, int64_t in, const float* w, int64_t out,
              const float* bias, float* y);

namespace ref {
// The specification: three loops, float64 accumulation.
void gemm(const gemm_args& g);
}  // namespace ref

}  // namespace attn::kernels
