// One sdpa backward call as the fused kernels see it: the forward's problem (inputs, mask,
// causal, scale) plus o, grad_o and lse in, dq, dk, dv out. Raw pointers and element strides,
// shapes already checked; free of attn::tensor like flash_problem.hpp.
#pragma once

#include <cstdint>

#include "kernels/flash_problem.hpp"

namespace attn::kernels {

struct flash_backward_problem {
  flash_problem f;  // q, k, v, mask, causal, scale and the sizes; f.out/weights/lse unused
  // o, grad_o [B, H, L, Dv]: strides of the first three dimensions, the last contiguous.
  const float *o = nullptr, *grad_o = nullptr;
  int64_t os[3] = {0, 0, 0}, gs[3] = {0, 0, 0};
  const float* lse = nullptr;  // [B, H, L], contiguous, natural log (−inf: fully masked row)
  // Contiguous outputs: dq [B, H, L, D], dk [B, Hkv, S, D], dv [B, Hkv, S, Dv].
  float *dq = nullptr, *dk = nullptr, *dv = nullptr;
};

// Implemented once per instruction set; each runs the whole problem on the OpenMP threads.
void flash_backward_avx512(const flash_backward_problem& p);
void flash_backward_avx2(const flash_backward_problem& p);

// The five products on bf16 pairs with float32 accumulation: vdpbf16ps, or its exact float32
// emulation where the CPU lacks it (same bits on AVX-512; simd_bf16.hpp).
void flash_backward_bf16_avx512(const flash_backward_problem& p);
void flash_backward_bf16_emulated_avx512(const flash_backward_problem& p);
void flash_backward_bf16_emulated_avx2(const flash_backward_problem& p);

// The kernel of selected_bf16_path() (flash_bf16.cpp).
void flash_backward_bf16(const flash_backward_problem& p);

}  // namespace attn::kernels
