// One sdpa call as the CUDA kernels see it: device pointers, sizes and element strides. Plain
// C++17 (nvcc compiles it; CUDA 11.8's nvcc has no C++20), free of attn::tensor.
#pragma once

#include <cstdint>

namespace attn::cuda_kernels {

// The element type of q, k, v, o, grad_o and the gradients; the softmax, lse and every sum
// stay float32 whatever it is.
enum class element { float32 = 0, bf16 = 1, float16 = 2 };

struct attention_problem {
  int64_t B = 0, H = 0, Hkv = 0, L = 0, S = 0, D = 0, Dv = 0;
  // q [B, H, L, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv], o [B, H, L, Dv]: dense, row-major.
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;  // [B, H, L], natural log; -inf for a row whose every key is masked
  // Additive float32 mask broadcast to [B, H, L, S]: a broadcast dimension has stride 0.
  const float* mask = nullptr;
  int64_t ms[4] = {0, 0, 0, 0};
  bool causal = false;  // top-left: query i sees keys j <= i
  float scale = 1.0f;   // multiplies Q·Kᵀ
  element type = element::bf16;
};

// The backward's extra tensors (same layouts as their forward twins; dq, dk, dv in `type`).
struct attention_gradients {
  const void* grad_o = nullptr;  // [B, H, L, Dv]
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
};

// The forward these types and head sizes take (with 16-byte aligned tensors, as cudaMalloc's
// are): "tensor cores (mma.sync m16n8k16, float32 accumulation)" or "CUDA cores (float32)".
const char* forward_path(const attention_problem& p);

// Launch on `stream` (a cudaStream_t; null = the default stream). They throw std::runtime_error
// carrying CUDA's message when a launch fails, or for B·H above 65535 (one launch's grid) or
// head sizes above 256; they do not synchronise.
void flash_forward(const attention_problem& p, void* stream);
// Recomputes P from lse; deterministic (no atomics: each gradient row has one writer).
// `workspace` holds B·H·L floats (the rows' dO·O).
void flash_backward(const attention_problem& p, const attention_gradients& g, float* workspace,
                    void* stream);

}  // namespace attn::cuda_kernels

namespace attn::cuda_kernels {
// float32 ↔ the element type on the device (to nearest, ties to even), n values.
void convert_from_float(element type, const float* src, void* dst, int64_t n, void* stream);
void convert_to_float(element type, const void* src, float* dst, int64_t n, void* stream);
// Fills n elements with uniform values in [-1, 1) from a counter-based hash of (seed, index).
void fill_uniform(element type, void* dst, int64_t n, uint64_t seed, void* stream);
}  // namespace attn::cuda_kernels
