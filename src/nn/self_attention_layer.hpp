// Trainable multi-head self-attention: the attention layer (attention_layer.hpp) with queries,
// keys and values all from one sequence x (nn.MultiheadAttention with query = key = value = x).
// The weights, their layout and their names in the model file are the attention layer's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "nn/attention_layer.hpp"

namespace attn::nn {

class rows_linear;

struct self_attention_shape {
  int64_t batch = 0, length = 0;  // B, L (= S)
  int64_t input = 0, width = 0;   // Ein, E
  int64_t heads = 1;              // H (divides E)

  attention_shape as_attention() const {
    return {.batch = batch,
            .queries = length,
            .keys = length,
            .query_input = input,
            .key_input = input,
            .width = width,
            .heads = heads};
  }
};

template <class T>
using self_attention_weights = attention_weights<T>;
template <class T>
using self_attention_grads = attention_grads<T>;
template <class T>
using self_attention_cache = attention_cache<T>;

// x [B, L, Ein] → y [B, L, E]
template <class T>
void self_attention_forward(const T* x, const self_attention_weights<T>& w, T* y,
                            self_attention_cache<T>& cache, const self_attention_shape& s,
                            const attention_mask_spec& mask) {
  attention_forward(x, x, w, y, cache, s.as_attention(), mask);
}

// dy [B, L, E] → dx [B, L, Ein] += (skipped when null), weight gradients +=
template <class T>
void self_attention_backward(const T* dy, const T* x, const self_attention_weights<T>& w,
                             const self_attention_cache<T>& cache, T* dx,
                             const self_attention_grads<T>& g, const self_attention_shape& s,
                             const attention_mask_spec& mask) {
  attention_backward(dy, x, x, w, cache, dx, dx, g, s.as_attention(), mask);
}

// The one-row path (generation): a causal layer reads one token at a time and keeps every
// position's key and value, so a new token costs one query row, never the whole prefix again.
// Laid out for attend_cached: keys in blocks of 16 positions, each block dimension-major
// [E][16] (one head's scores are 16 positions per vector operation, whatever the length),
// values position-major [n][E] (the weighted sum adds whole value rows, no sums across a
// vector's lanes). Both grow as positions join, so a copy (a beam's hypothesis) copies only
// the positions read.
struct keys_values {
  static constexpr int64_t block = 16;
  std::vector<float> keys, values;
  int64_t width = 0, length = 0;  // E, n
  // Empty, room for `positions` (a hint: it grows past them).
  void reset(int64_t e, int64_t positions);
  // Forgets the positions from n on (n ≤ length).
  void keep(int64_t n);
  // k, v [E] join as position `length`.
  void append(const float* k, const float* v);
};
using self_attention_kv = keys_values;

struct self_attention_row_scratch {
  std::vector<float> q, k, v, merged, scores;
};

// x [E] at position t (≤ kv.length; any positions from t on are forgotten first) → y [E]: the
// query of t against the keys and values of 0 … t, position t's own joining kv first. The same
// projections and heads as the forward above with a causal mask, one row at a time (tests hold
// the two together).
void self_attention_row_forward(const float* x, const self_attention_weights<float>& w, float* y,
                                self_attention_kv& kv, int64_t t, const self_attention_shape& s,
                                self_attention_row_scratch& scratch);
// The same for several rows at position t, each with its own cache (beam search's hypotheses),
// with the projections packed for a few rows (rows_linear): qkv stacks W_q, W_k, W_v; out is
// W_o. x [rows, Ein] → y [rows, E]; each row's bits are the same alone as among others.
void self_attention_rows_forward(const float* x, const rows_linear& qkv, const rows_linear& out, float* y,
                                 std::span<self_attention_kv* const> kv, int64_t t, const self_attention_shape& s,
                                 self_attention_row_scratch& scratch);

// Head h's query q [d] (d = E / heads) against the cached keys and values of positions
// 0 … length − 1: softmax(q·kⱼ·scale)·V → out [d]. scores: room for length rounded up to 16.
void attend_cached(const float* q, const keys_values& kv, int64_t h, int64_t d, float scale, float* out,
                   float* scores);

}  // namespace attn::nn
