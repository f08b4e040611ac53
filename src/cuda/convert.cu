// Element conversions and random fills on the device (what the host-tensor API and the timing
// need around the attention kernels).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cuda/cuda_problem.hpp"
#include "cuda/device_math.cuh"
#include "cuda/element_types.cuh"
#include "cuda/launch_check.cuh"

namespace attn::cuda_kernels {

namespace {

template <typename T>
__global__ void from_float_kernel(const float* __restrict__ src, T* __restrict__ dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = from_float<T>(src[i]);
}
template <typename T>
__global__ void to_float_kernel(const T* __restrict__ src, float* __restrict__ dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = to_float(src[i]);
}
// splitmix64 of (seed + index): independent of the launch shape, so a fill repeats exactly.
template <typename T>
__global__ void uniform_kernel(T* __restrict__ dst, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    dst[i] = from_float<T>(static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f);
  }
}

}  // namespace

void convert_from_float(element type, const float* src, void* dst, int64_t n, void* s) {
  if (n == 0) return;
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    from_float_kernel<T><<<grid_stride_blocks(n), 256, 0, static_cast<cudaStream_t>(s)>>>(src, static_cast<T*>(dst), n);
  });
  check_launch("converting to the element type");
}

void convert_to_float(element type, const void* src, float* dst, int64_t n, void* s) {
  if (n == 0) return;
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    to_float_kernel<T><<<grid_stride_blocks(n), 256, 0, static_cast<cudaStream_t>(s)>>>(static_cast<const T*>(src), dst, n);
  });
  check_launch("converting to float32");
}

void fill_uniform(element type, void* dst, int64_t n, uint64_t seed, void* s) {
  if (n == 0) return;
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    uniform_kernel<T><<<grid_stride_blocks(n), 256, 0, static_cast<cudaStream_t>(s)>>>(static_cast<T*>(dst), n, seed);
  });
  check_launch("filling with random values");
}

}  // namespace attn::cuda_kernels
