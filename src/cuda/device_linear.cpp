// cuBLAS is column-major: a row-major [r, c] buffer is its column-major [c, r] transpose, so each
// row-major product C = A·B is asked for as Cᵀ = Bᵀ·Aᵀ (see device_linear.hpp).
#include "cuda/device_linear.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace attn::cuda::detail {

namespace {

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("cuBLAS: {}: {}", what, cublasGetStatusString(s)));
}

}  // namespace

device_linear::device_linear(cudaStream_t stream, bool bf16) : bf16_(bf16) {
  check_blas(cublasCreate(&handle_), "cublasCreate");
  check_blas(cublasSetStream(handle_, stream), "cublasSetStream");
  // float32 stays float32 (no TF32): the products are what the CPU computes, to rounding
  check_blas(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

device_linear::~device_linear() { cublasDestroy(handle_); }

void device_linear::gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, const void* b,
                         int64_t ldb, void* c, bool c_in_product_type, int64_t ldc, bool accumulate) {
  if (m == 0 || n == 0) return;
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  const cudaDataType_t type = bf16_ ? CUDA_R_16BF : CUDA_R_32F;
  const cudaDataType_t c_type = c_in_product_type ? type : CUDA_R_32F;
  check_blas(cublasGemmEx(handle_, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(m),
                          static_cast<int>(n), static_cast<int>(k), &alpha, a, type, static_cast<int>(lda), b, type,
                          static_cast<int>(ldb), &beta, c, c_type, static_cast<int>(ldc), CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT),
             "cublasGemmEx");
}

void device_linear::forward(const void* x, const void* w, void* y, int64_t n, int64_t in, int64_t out,
                            bool accumulate, bool y_in_product_type) {
  // yᵀ [out, n] = (wᵀ [in, out])ᵀ · xᵀ [in, n]
  gemm(true, false, out, n, in, w, in, x, in, y, y_in_product_type, out, accumulate);
}

void device_linear::backward_input(const void* dy, const void* w, void* dx, int64_t n, int64_t in, int64_t out,
                                   bool accumulate, bool dx_in_product_type) {
  // dxᵀ [in, n] = wᵀ [in, out] · dyᵀ [out, n]
  gemm(false, false, in, n, out, w, in, dy, out, dx, dx_in_product_type, in, accumulate);
}

void device_linear::backward_weight(const void* dy, const void* x, float* dw, int64_t n, int64_t in, int64_t out) {
  // dwᵀ [in, out] += xᵀ [in, n] · (dyᵀ [out, n])ᵀ
  gemm(false, true, in, out, n, x, in, dy, out, dw, false, in, true);
}

}  // namespace attn::cuda::detail
