// A Transformer decoder layer, pre-norm, as PyTorch's nn.TransformerDecoderLayer(norm_first=True,
// activation ReLU): causal self-attention over the target so far, then cross-attention — queries
// from the target, keys and values from the encoder's output (the memory) — then feed-forward,
// each on a layer-normed input and added to the residual stream:
//   sum1 = x + SelfAttention(LN₁(x))               (causal: target position t sees ≤ t)
//   sum2 = sum1 + CrossAttention(LN₂(sum1), memory)  (source key padding: a sentence's own words)
//   y    = sum2 + W₂·relu(W₁·LN₃(sum2) + b₁) + b₂
// The encoder–decoder translator (src/models/) stacks these over an encoder of encoder_block's.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "nn/attention_layer.hpp"
#include "nn/parameter.hpp"
#include "nn/rows_linear.hpp"
#include "nn/self_attention_layer.hpp"

namespace attn::nn {

struct decoder_block_shape {
  int64_t batch = 0;
  int64_t target = 0, source = 0;  // L (target positions), S (memory positions)
  int64_t width = 0;               // E, the target's and the memory's width
  int64_t heads = 1;
  int64_t feedforward = 0;         // F
  // Dropout on each sub-layer's output before its residual add (nn.TransformerDecoderLayer's
  // dropout1, 2 and 3), masks drawn from dropout_seed; 0 (or a zero seed): none.
  double dropout = 0;
  uint64_t dropout_seed = 0;
};

// nn.TransformerDecoderLayer's parameters under "PREFIX": self_attn, multihead_attn (the
// cross-attention), linear1, linear2, norm1, norm2, norm3.
template <class T>
struct decoder_parameters {
  attention_parameters<T> self_attention, cross_attention;
  parameter<T> norm1_weight, norm1_bias, norm2_weight, norm2_bias, norm3_weight, norm3_bias;
  parameter<T> linear1_weight, linear1_bias, linear2_weight, linear2_bias;
  void append_to(std::vector<parameter<T>*>& all);  // in the model file's order
};
template <class T>
decoder_parameters<T> make_decoder_parameters(const std::string& prefix, int64_t width, int64_t feedforward);

template <class T>
struct decoder_block_cache {
  std::vector<T> normed1, sum1, normed2, sum2, normed3, pre, act;
  std::vector<T> mean1, rstd1, mean2, rstd2, mean3, rstd3;
  attention_cache<T> self_attention, cross_attention;
  std::vector<T> drop1, drop2, drop3;  // residual dropout's masks (empty: none)
};

// x [B, L, E], memory [B, S, E] → y [B, L, E]. source_lengths [B]: each sentence's real memory
// positions (empty: all S).
template <class T>
void decoder_block_forward(const T* x, const T* memory, const std::vector<int64_t>& source_lengths,
                           const decoder_parameters<T>& w, T* y, decoder_block_cache<T>& cache,
                           const decoder_block_shape& s);

// dy [B, L, E] → dx [B, L, E] += and dmemory [B, S, E] += (each skipped when null), the
// weights' gradients +=.
template <class T>
void decoder_block_backward(const T* dy, const T* x, const T* memory, const std::vector<int64_t>& source_lengths,
                            decoder_parameters<T>& w, const decoder_block_cache<T>& cache, T* dx, T* dmemory,
                            const decoder_block_shape& s);

// Decoding (translation, float): target rows at position t pass the block in place, as
// decoder_block_forward takes those rows (the same steps in the same order), with every product
// packed once for a few rows (rows_linear). The weights for that, built from a block's
// parameters (which must outlive them: the layer norms read them):
struct decoder_block_steps {
  decoder_block_steps(const decoder_parameters<float>& w, int64_t width, int64_t feedforward);
  const decoder_parameters<float>* parameters;
  rows_linear self_qkv, self_out, cross_query, cross_out, linear1, linear2;
};

// One sentence's memory as each decoder layer's cross-attention reads it: its keys and values
// projected once (attention_keys_values_forward), kept as the self-attention cache keeps its
// own (keys_values, the layout of attend_cached).
using cross_keys_values = keys_values;
// memory [S, E] (one sentence, every position real) → its keys and values for block w.
cross_keys_values cross_keys_values_forward(const float* memory, const decoder_parameters<float>& w, int64_t source,
                                            int64_t width, int64_t heads);

struct decoder_block_row_scratch {
  self_attention_row_scratch self_attention;
  std::vector<float> normed, attended, pre, mean, rstd, query, merged, scores;
};

// x [rows, E] at position t, each row with its own self-attention cache and its own sentence's
// cross keys and values (beam search's hypotheses, of one sentence or of several searched
// together; one row for a single decoder): the weights are read once for all the rows. Each
// row's bits are the same alone as among others. s: width, heads and feedforward.
void decoder_block_rows_forward(float* x, const decoder_block_steps& w, std::span<self_attention_kv* const> self_kv,
                                int64_t t, std::span<const cross_keys_values* const> cross,
                                const decoder_block_shape& s, decoder_block_row_scratch& scratch);

}  // namespace attn::nn
