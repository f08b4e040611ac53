// Trainable multi-head self-attention (nn.MultiheadAttention's computation with query = key =
// value = x): Q = x·W_qᵀ + b_q, K = x·W_kᵀ + b_k, V = x·W_vᵀ + b_v, split into H heads of
// D = E / H, attention per head, heads concatenated, then y = concat·W_oᵀ + b_o.
// The input width may differ from E (the projections take it to E).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nn/attention_core.hpp"

namespace attn::nn {

struct self_attention_shape {
  int64_t batch = 0, length = 0;  // B, L
  int64_t input = 0, width = 0;   // Ein, E
  int64_t heads = 1;              // H (divides E)
};

template <class T>
struct self_attention_weights {
  const T *wq, *bq, *wk, *bk, *wv, *bv;  // [E, Ein], [E]
  const T *wo, *bo;                      // [E, E], [E]
};

template <class T>
struct self_attention_grads {
  T *dwq, *dbq, *dwk, *dbk, *dwv, *dbv, *dwo, *dbo;
};

// What the backward needs from the forward.
template <class T>
struct self_attention_cache {
  std::vector<T> q, k, v, o;  // per head [B, H, L, D]
  std::vector<T> lse;         // [B, H, L]
  std::vector<T> merged;      // heads concatenated [B, L, E]
};

// x [B, L, Ein] → y [B, L, E]
template <class T>
void self_attention_forward(const T* x, const self_attention_weights<T>& w, T* y,
                            self_attention_cache<T>& cache, const self_attention_shape& s,
                            const attention_mask_spec& mask);

// dy [B, L, E] → dx [B, L, Ein] += (skipped when null), weight gradients +=
template <class T>
void self_attention_backward(const T* dy, const T* x, const self_attention_weights<T>& w,
                             const self_attention_cache<T>& cache, T* dx,
                             const self_attention_grads<T>& g, const self_attention_shape& s,
                             const attention_mask_spec& mask);

// The one-row path (generation): a causal layer reads one token at a time and keeps every
// position's key and value, so a new token costs one query row, never the whole prefix again.
// keys, values: dimension-major [E, capacity] (head h's rows h·D … h·D + D − 1), so that one
// query's scores and weighted sum run along the positions.
struct self_attention_kv {
  std::vector<float> keys, values;
  int64_t capacity = 0;
  void reset(int64_t width, int64_t positions) {
    capacity = positions;
    keys.assign(static_cast<std::size_t>(width * positions), 0.0f);
    values = keys;
  }
};

struct self_attention_row_scratch {
  std::vector<float> q, k, v, merged, scores;
};

// x [E] at position t (< kv.capacity) → y [E]: the query of t against the keys and values of
// 0 … t, position t's own joining kv first. The same projections and heads as the forward
// above with a causal mask, one row at a time (tests hold the two together).
void self_attention_row_forward(const float* x, const self_attention_weights<float>& w, float* y,
                                self_attention_kv& kv, int64_t t, const self_attention_shape& s,
                                self_attention_row_scratch& scratch);

}  // namespace attn::nn
