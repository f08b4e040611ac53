// The heads' attention inside the trainable attention layer: O = softmax(Q·Kᵀ·scale + mask)·V
// per batch and head, with queries and keys from sequences of different lengths (L, S). In float
// it is attn's fused sdpa kernels called directly (they keep the row log-sum-exp instead of the
// L×S weights); in double it is the plain formula, the specification the gradient checks and the
// fast path's tests run against.
#pragma once

#include <cstdint>
#include <vector>

namespace attn::nn {

// Which keys each query may see: causal (key ≤ query, top-left aligned as PyTorch's is_causal:
// with L > S the last queries see every key), and only the first lengths[b] keys of sequence b
// (padding after them) when lengths is not empty. A query that sees no key gets output 0.
struct attention_mask_spec {
  bool causal = false;
  std::vector<int64_t> lengths;  // keys per batch entry [B], or empty: every key is real
};

struct attention_core_shape {
  int64_t batch = 0, heads = 1;   // B, H
  int64_t queries = 0, keys = 0;  // L, S
  int64_t head_dim = 0;           // D
};

// What the backward needs from the forward besides q, k, v and o.
template <class T>
struct attention_core_cache {
  std::vector<T> lse;           // [B, H, L] row log-sum-exp (−inf: the row saw no key)
  std::vector<float> key_bias;  // [B, S] 0 for a real key, −inf for padding (float path only)
};

// q [B, H, L, D], k, v [B, H, S, D] → o [B, H, L, D]
template <class T>
void attention_core_forward(const T* q, const T* k, const T* v, T* o,
                            attention_core_cache<T>& cache, const attention_core_shape& s,
                            const attention_mask_spec& mask);

// d_o [B, H, L, D] → dq [B, H, L, D], dk, dv [B, H, S, D] (overwritten)
template <class T>
void attention_core_backward(const T* q, const T* k, const T* v, const T* o,
                             const attention_core_cache<T>& cache, const T* d_o, T* dq, T* dk,
                             T* dv, const attention_core_shape& s, const attention_mask_spec& mask);

}  // namespace attn::nn
