// The training step's products on the GPU through cuBLAS (the CUDA toolkit's own library): the
// three products of a linear layer y = x·Wᵀ, as nn::linear_forward / linear_backward compute them
// on the CPU, on row-major buffers. Their operands are in the product type (float32, or bf16 under
// --dtype bf16: the caller keeps bf16 copies of the weights and of the activations that feed
// products) and every product sums in float32: PyTorch autocast's recipe. Outputs are float32,
// or in the product type where the caller asks (autocast's bf16 activations).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.hpp"

namespace attn::cuda::detail {

class device_linear {
 public:
  device_linear(cudaStream_t stream, bool bf16);
  ~device_linear();
  device_linear(const device_linear&) = delete;
  device_linear& operator=(const device_linear&) = delete;

  // y [n, out] = x [n, in] · w [out, in]ᵀ (+ y when accumulate); y float32, or in the product
  // type when y_in_product_type.
  void forward(const void* x, const void* w, void* y, int64_t n, int64_t in, int64_t out,
               bool accumulate = false, bool y_in_product_type = false);
  // dx [n, in] = dy [n, out] · w [out, in] (+ dx when accumulate), float32, or in the product
  // type when dx_in_product_type
  void backward_input(const void* dy, const void* w, void* dx, int64_t n, int64_t in,
                      int64_t out, bool accumulate = false, bool dx_in_product_type = false);
  // dw [out, in] += dyᵀ · x, float32
  void backward_weight(const void* dy, const void* x, float* dw, int64_t n, int64_t in,
                       int64_t out);

 private:
  // C (column-major m × n) = op(A)·op(B) (+ C)
  void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
            const void* b, int64_t ldb, void* c, bool c_in_product_type, int64_t ldc, bool accumulate);

  cublasHandle_t handle_{};
  bool bf16_;
};

}  // namespace attn::cuda::detail
