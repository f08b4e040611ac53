// Matrix products for the layers (projections), through OpenBLAS's sgemm.
#pragma once

#include <cstdint>

namespace attn::kernels {

// y[rows, out] = x[rows, in] · w[out, in]ᵀ (+ bias[out] when given); all row-major, dense.
// Rows are split across the OpenMP threads, each running a single-threaded sgemm, so OpenBLAS's
// own thread pool never competes with attn's.
void gemm_xwt(const float* x, int64_t rows, int64_t in, const float* w, int64_t out,
              const float* bias, float* y);

}  // namespace attn::kernels
