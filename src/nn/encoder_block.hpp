// A Transformer encoder layer, as PyTorch's nn.TransformerEncoderLayer with its defaults
// (norm_first=False, ReLU):
//   h = LayerNorm₁(x + SelfAttention(x));   y = LayerNorm₂(h + W₂·relu(W₁·h + b₁) + b₂)
// The residual connections need the input and output widths equal (E).
#pragma once

#include <cstdint>
#include <vector>

#include "nn/self_attention_layer.hpp"

namespace attn::nn {

struct encoder_block_shape {
  self_attention_shape attention;  // input == width (E)
  int64_t feedforward = 0;         // F, the feed-forward part's hidden width
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
  std::vector<T> sum1, h, mean1, rstd1;  // sum1 = x + attention(x) [N, E]; h = LayerNorm₁(sum1)
  std::vector<T> pre, act;               // the feed-forward hidden layer before / after ReLU [N, F]
  std::vector<T> sum2, mean2, rstd2;     // sum2 = h + feed-forward(h) [N, E]
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

}  // namespace attn::nn
