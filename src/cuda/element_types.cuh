// The element type a launch takes at run time, as the C++ type its kernel template takes, and
// the grid of an element-wise, grid-stride kernel: shared by the conversions, the backward's row
// term and the multi-head layer's head moves.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/cuda_problem.hpp"

namespace attn::cuda_kernels {

// Calls f with a value of the element's C++ type: float, __nv_bfloat16 or __half.
template <typename F>
void with_element_type(element type, F&& f) {
  switch (type) {
    case element::float32: f(float{}); return;
    case element::bf16: f(__nv_bfloat16{}); return;
    case element::float16: f(__half{}); return;
  }
}

// Blocks of 256 threads for a grid-stride loop over n elements: one element a thread up to 4,096
// blocks (a million threads, several waves on any GPU), then each thread takes several.
inline unsigned grid_stride_blocks(int64_t n) {
  const int64_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 4096 ? (blocks < 1 ? 1 : blocks) : 4096);
}

}  // namespace attn::cuda_kernels
