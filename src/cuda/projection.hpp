// The multi-head layer's parts around the attention on the GPU (projection.cu): its linear
// projections in float32 and the moves between rows [B, n, H·hd] and heads [B, H, n, hd].
// Plain C++17, device pointers; each launches on `stream` (null: the default) and throws
// std::runtime_error when a launch fails.
#pragma once

#include <cstdint>

#include "cuda/cuda_problem.hpp"

namespace attn::cuda_kernels {

// y [M, N] = x [M, K] · w [N, K]ᵀ + bias [N] (bias may be null), float32 throughout: each
// output a float32 sum in k order. N up to 64·65535 columns.
void linear_rows(const float* x, const float* w, const float* bias, float* y, int64_t M, int64_t N, int64_t K,
                 void* stream);
// rows [B, n, H·hd] (float32) → heads [B, H, n, hd] in the element type (to nearest, ties to even).
void split_heads(element type, const float* rows, void* heads, int64_t B, int64_t n, int64_t H, int64_t hd,
                 void* stream);
// heads [B, H, n, hd] in the element type → rows [B, n, H·hd] (float32).
void merge_heads(element type, const void* heads, float* rows, int64_t B, int64_t n, int64_t H, int64_t hd,
                 void* stream);

}  // namespace attn::cuda_kernels
