// The heads' attention inside the trainable self-attention layer: O = softmax(Q·Kᵀ·scale + mask)·V
// per batch and head. In float it is attn's fused sdpa forward and backward (which keep the
// row log-sum-exp instead of the L×S weights); in double it is the plain formula, the
// specification the finite-difference gradient checks run against.
#pragma once

#include <cstdint>
#include <vector>

namespace attn::nn {

// Which keys each query may see: causal (key ≤ query), and only the first lengths[b] keys of
// sequence b (padding after them) when lengths is not empty.
struct attention_mask_spec {
  bool causal = false;
  std::vector<int64_t> lengths;
};

// q, k, v [B, H, L, D] → o [B, H, L, D]; lse [B, H, L] is kept for the backward.
template <class T>
void attention_core_forward(const T* q, const T* k, const T* v, T* o, std::vector<T>& lse,
                            int64_t b, int64_t h, int64_t l, int64_t d,
                            const attention_mask_spec& mask);

// do [B, H, L, D] → dq, dk, dv [B, H, L, D] (overwritten)
template <class T>
void attention_core_backward(const T* q, const T* k, const T* v, const T* o,
                             const std::vector<T>& lse, const T* d_o, T* dq, T* dk, T* dv,
                             int64_t b, int64_t h, int64_t l, int64_t d,
                             const attention_mask_spec& mask);

}  // namespace attn::nn
