// The multi-head layer's projections and head moves (projection.hpp). The projections are a
// plain tiled float32 product (64 × 64 outputs a block, 4 × 4 a thread, 16 of k at a time
// through shared memory): the layer's cost at attention sizes is the attention, and float32
// keeps the projections what attn's CPU layer computes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cuda/device_math.cuh"
#include "cuda/element_types.cuh"
#include "cuda/launch_check.cuh"
#include "cuda/projection.hpp"

namespace attn::cuda_kernels {

namespace {

constexpr int tile = 64, tile_k = 16;

__global__ void __launch_bounds__(256) linear_rows_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                                          const float* __restrict__ bias, float* __restrict__ y,
                                                          int64_t M, int64_t N, int64_t K) {
  __shared__ float xs[tile_k][tile + 4];  // xs[k][row]
  __shared__ float ws[tile_k][tile + 4];  // ws[k][column]
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  // Rows on the grid's x (up to 2^31 − 1 blocks), columns on y (the layer's width: few).
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * tile, n0 = static_cast<int64_t>(blockIdx.y) * tile;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < K; k0 += tile_k) {
    for (int i = threadIdx.x; i < tile * tile_k; i += blockDim.x) {
      const int r = i / tile_k, c = i % tile_k;  // row r of the tile, column c of the k slice
      const int64_t k = k0 + c, m = m0 + r, n = n0 + r;
      xs[c][r] = m < M && k < K ? x[m * K + k] : 0.f;
      ws[c][r] = n < N && k < K ? w[n * K + k] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < tile_k; ++kk) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = xs[kk][ty * 4 + i], b[i] = ws[kk][tx * 4 + i];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;
      if (m < M && n < N) y[m * N + n] = acc[i][j] + (bias != nullptr ? bias[n] : 0.f);
    }
}

// One thread an element of the heads' layout [B, H, n, hd]; `rows` is [B, n, H·hd].
template <typename T>
__global__ void split_heads_kernel(const float* __restrict__ rows, T* __restrict__ heads, int64_t B, int64_t n,
                                   int64_t H, int64_t hd) {
  const int64_t total = B * H * n * hd;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t d = e % hd, i = (e / hd) % n, h = (e / (hd * n)) % H, b = e / (hd * n * H);
    heads[e] = from_float<T>(rows[(b * n + i) * H * hd + h * hd + d]);
  }
}

template <typename T>
__global__ void merge_heads_kernel(const T* __restrict__ heads, float* __restrict__ rows, int64_t B, int64_t n,
                                   int64_t H, int64_t hd) {
  const int64_t total = B * H * n * hd;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t d = e % hd, i = (e / hd) % n, h = (e / (hd * n)) % H, b = e / (hd * n * H);
    rows[(b * n + i) * H * hd + h * hd + d] = to_float(heads[e]);
  }
}

}  // namespace

void linear_rows(const float* x, const float* w, const float* bias, float* y, int64_t M, int64_t N, int64_t K,
                 void* stream) {
  if (M == 0 || N == 0) return;
  if ((M + tile - 1) / tile > 0x7fffffff || (N + tile - 1) / tile > 65535)
    throw std::runtime_error("a projection of " + std::to_string(M) + " rows × " + std::to_string(N) +
                             " columns is past one CUDA launch's grid");
  const dim3 grid(static_cast<unsigned>((M + tile - 1) / tile), static_cast<unsigned>((N + tile - 1) / tile));
  linear_rows_kernel<<<grid, 256, 0, static_cast<cudaStream_t>(stream)>>>(x, w, bias, y, M, N, K);
  check_launch("the projection");
}

void split_heads(element type, const float* rows, void* heads, int64_t B, int64_t n, int64_t H, int64_t hd,
                 void* stream) {
  const int64_t total = B * H * n * hd;
  if (total == 0) return;
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    split_heads_kernel<T><<<grid_stride_blocks(total), 256, 0, static_cast<cudaStream_t>(stream)>>>(
        rows, static_cast<T*>(heads), B, n, H, hd);
  });
  check_launch("splitting the heads");
}

void merge_heads(element type, const void* heads, float* rows, int64_t B, int64_t n, int64_t H, int64_t hd,
                 void* stream) {
  const int64_t total = B * H * n * hd;
  if (total == 0) return;
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    merge_heads_kernel<T><<<grid_stride_blocks(total), 256, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T*>(heads), rows, B, n, H, hd);
  });
  check_launch("merging the heads");
}

}  // namespace attn::cuda_kernels
