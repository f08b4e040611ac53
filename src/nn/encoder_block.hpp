// A Transformer encoder layer, as PyTorch's nn.TransformerEncoderLayer (ReLU), in its two forms:
//   post-norm (norm_first=False, PyTorch's default and the original Transformer's):
//     h = LayerNorm₁(x + SelfAttention(x));   y = LayerNorm₂(h + W₂·relu(W₁·h + b₁) + b₂)
//   pre-norm (norm_first=True, as GPT-2): the residual stream is never normalised in place,
//     h = x + SelfAttention(LayerNorm₁(x));   y = h + W₂·relu(W₁·LayerNorm₂(h) + b₁) + b₂
// The residual connections need the input and output widths equal (E).
#pragma once

#include <cstdint>
#include <vector>

#include "nn/self_attention_layer.hpp"

namespace attn::nn {

struct encoder_block_shape {
  self_attention_shape attention;  // input == width (E)
  int64_t feedforward = 0;         // F, the feed-forward part's hidden width
  bool norm_first = false;         // pre-norm (see above)
  // Pre-norm blocks: dropout on each sub-layer's output before its residual add (Vaswani's
  // residual dropout; nn.TransformerEncoderLayer's dropout1 and dropout2), masks drawn from
  // dropout_seed. 0 (or a zero seed: evaluating): none.
  double dropout = 0;
  uint64_t dropout_seed = 0;
};

template <class T>
struct encoder_block_weights {
  self_attention_weights<T> attention;
  const T *norm1_weight, *norm1_bias;      // [E]
  const T *linear1_weight, *linear1_bias;  // [F, E], [F]
  const T *linear2_weight, *linear2_bias;  // [E, F], [E]
  const T *norm2_weight, *norm2_bias;      // [E]
};

template <class T>
struct encoder_block_grads {
  self_attention_grads<T> attention;
  T *dnorm1_weight, *dnorm1_bias, *dlinear1_weight, *dlinear1_bias;
  T *dlinear2_weight, *dlinear2_bias, *dnorm2_weight, *dnorm2_bias;
};

template <class T>
struct encoder_block_cache {
  self_attention_cache<T> attention;
  // post-norm: sum1 = x + attention(x) [N, E]; h = LayerNorm₁(sum1); sum2 = h + feed-forward(h)
  // pre-norm: normed = LayerNorm₁(x) [N, E]; sum1 = x + attention(normed); h = LayerNorm₂(sum1)
  std::vector<T> normed, sum1, h, mean1, rstd1;
  std::vector<T> pre, act;            // the feed-forward hidden layer before / after ReLU [N, F]
  std::vector<T> sum2, mean2, rstd2;
  std::vector<T> drop1, drop2;        // residual dropout's masks on the attention's and the feed-forward's outputs (empty: none)
};

// x [B, L, E] → y [B, L, E]
template <class T>
void encoder_block_forward(const T* x, const encoder_block_weights<T>& w, T* y,
                           encoder_block_cache<T>& cache, const encoder_block_shape& s,
                           const attention_mask_spec& mask);

// dy [B, L, E] → dx [B, L, E] += (skipped when null), weight gradients +=
template <class T>
void encoder_block_backward(const T* dy, const T* x, const encoder_block_weights<T>& w,
                            const encoder_block_cache<T>& cache, T* dx,
                            const encoder_block_grads<T>& g, const encoder_block_shape& s,
                            const attention_mask_spec& mask);

// The pre-norm block's one-row path (generation, causal attention): x [E], the residual stream
// of the token at position t, passes the block in place, as encoder_block_forward's pre-norm
// path takes that row (the same steps in the same order, with one-row products); the
// attention's kv gains position t's key and value. s.attention's batch and length are unused.
struct encoder_block_row_scratch {
  self_attention_row_scratch attention;
  std::vector<float> normed, attended, pre, mean, rstd;
};
void encoder_block_row_forward(float* x, const encoder_block_weights<float>& w,
                               self_attention_kv& kv, int64_t t, const encoder_block_shape& s,
                               encoder_block_row_scratch& scratch);

}  // namespace attn::nn
