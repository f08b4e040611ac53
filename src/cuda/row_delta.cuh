// The backward's row term, shared by the tensor-core and CUDA-core backwards.
#pragma once

#include "cuda/device_math.cuh"

namespace attn::cuda_kernels {

// The backward's row term: delta_i = Σ_d dO[i,d]·O[i,d] (dS = P ∘ (dP − delta)); a warp a row,
// its lanes reading adjacent elements. Blocks of 256 threads: 8 rows each.
template <typename T>
__global__ void row_delta_kernel(const T* __restrict__ o, const T* __restrict__ grad_o, float* __restrict__ delta,
                                 int64_t rows, int Dv) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  sum_t<T> sum = 0;
  for (int d = lane; d < Dv; d += 32) sum += static_cast<sum_t<T>>(to_float(o[r * Dv + d])) * to_float(grad_o[r * Dv + d]);
#pragma unroll
  for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  if (lane == 0) delta[r] = static_cast<float>(sum);
}

}  // namespace attn::cuda_kernels
