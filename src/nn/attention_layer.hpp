// Trainable multi-head attention with queries from one sequence and keys/values from another
// (nn.MultiheadAttention's computation with query ≠ key = value):
//   Q = x_q·W_qᵀ + b_q [B, L, E],  K = x_kv·W_kᵀ + b_k,  V = x_kv·W_vᵀ + b_v [B, S, E],
//   split into H heads of D = E / H, attention per head (attention_core.hpp: key padding,
//   causal), heads concatenated, then y = concat·W_oᵀ + b_o [B, L, E].
// Self-attention is this with x_q = x_kv (self_attention_layer.hpp); an encoder–decoder's
// cross-attention takes the decoder's states as x_q, the encoder's output as x_kv and the
// encoder's lengths as the key padding. The input widths may differ from E and from each other
// (PyTorch's kdim = vdim ≠ embed_dim).
#pragma once

#include <cstdint>
#include <vector>

#include "nn/attention_core.hpp"

namespace attn::nn {

struct attention_shape {
  int64_t batch = 0;                       // B
  int64_t queries = 0, keys = 0;           // L, S
  int64_t query_input = 0, key_input = 0;  // widths of x_q and x_kv
  int64_t width = 0;                       // E
  int64_t heads = 1;                       // H (divides E)
};

template <class T>
struct attention_weights {
  const T *wq, *bq;            // [E, query_input], [E]
  const T *wk, *bk, *wv, *bv;  // [E, key_input], [E]
  const T *wo, *bo;            // [E, E], [E]
};

template <class T>
struct attention_grads {
  T *dwq, *dbq, *dwk, *dbk, *dwv, *dbv, *dwo, *dbo;
};

// What the backward needs from the forward.
template <class T>
struct attention_cache {
  std::vector<T> q;              // per head [B, H, L, D]
  std::vector<T> k, v;           // per head [B, H, S, D]
  std::vector<T> o;              // per head [B, H, L, D]
  attention_core_cache<T> core;  // the rows' log-sum-exp and the key padding
  std::vector<T> merged;         // heads concatenated [B, L, E]
};

// x_kv [B, S, key_input] → cache.k, cache.v. A decoder running one query row at a time over a
// fixed encoder output calls this once per sentence, then attention_queries_forward per step.
template <class T>
void attention_keys_values_forward(const T* x_kv, const attention_weights<T>& w,
                                   attention_cache<T>& cache, const attention_shape& s);

// x_q [B, L, query_input] and the cache's k, v → y [B, L, E]
template <class T>
void attention_queries_forward(const T* x_q, const attention_weights<T>& w, T* y,
                               attention_cache<T>& cache, const attention_shape& s,
                               const attention_mask_spec& mask);

// Both of the above: x_q [B, L, query_input], x_kv [B, S, key_input] → y [B, L, E]
template <class T>
void attention_forward(const T* x_q, const T* x_kv, const attention_weights<T>& w, T* y,
                       attention_cache<T>& cache, const attention_shape& s,
                       const attention_mask_spec& mask);

// dy [B, L, E] → dx_q [B, L, query_input] +=, dx_kv [B, S, key_input] += (each skipped when
// null; for self-attention both may be the same buffer), weight gradients +=
template <class T>
void attention_backward(const T* dy, const T* x_q, const T* x_kv, const attention_weights<T>& w,
                        const attention_cache<T>& cache, T* dx_q, T* dx_kv,
                        const attention_grads<T>& g, const attention_shape& s,
                        const attention_mask_spec& mask);

}  // namespace attn::nn
