// The part every text model shares: token ids [B, L] → embeddings [B, L, Ein] (+ learned
// positions) → dropout → (window > 0: a word window, each token with its neighbours,
// word_window.hpp) →
//   layers = 0: the seeds' multi-head self-attention [B, L, E] (no residual, norm or
//               feed-forward: the layer of seed 003, and the reference in the tests)
//   layers = N: N Transformer encoder layers (encoder_block.hpp) [B, L, E], pre-norm ones
//               followed by a final LayerNorm
// → y [B, L, E], each token's vector, which a head pools or scores. Causal attention (the
// next-word and language models) lets token t see tokens ≤ t only.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/batch.hpp"
#include "nn/encoder_block.hpp"
#include "nn/network_shape.hpp"
#include "nn/parameter.hpp"
#include "nn/self_attention_layer.hpp"
#include "nn/word_window.hpp"

namespace attn::models {

template <class T>
struct trunk_cache {
  std::vector<T> x;                     // embeddings (+ positions, after dropout) [B, L, Ein]
  std::vector<T> drop_x;                // x's dropout mask (empty: no dropout)
  nn::word_window_cache<T> window;      // window > 0
  std::vector<T> windowed;              // the word window's output, the attention's input [B, L, Ein]
  nn::self_attention_cache<T> attention;           // layers = 0
  std::vector<nn::encoder_block_cache<T>> blocks;  // layers = N
  std::vector<std::vector<T>> between;             // encoder layers' outputs but the last [B, L, E]
  std::vector<T> stack, final_mean, final_rstd;  // pre-norm: the last block's output, before the
                                                 // final norm, and the norm's statistics
  std::vector<T> y;                     // the last attention block's output [B, L, E]

  // The last block's attention (its per-head Q, K, V and row log-sum-exp).
  const nn::self_attention_cache<T>& last_attention() const {
    return blocks.empty() ? attention : blocks.back().attention;
  }
};

template <class T>
class trunk {
 public:
  explicit trunk(const nn::network_shape& shape);  // every parameter zero

  // The trunk's parameters in the model file's order (the new words', positional and window
  // tables only when present).
  void append_parameters(std::vector<nn::parameter<T>*>& all);

  // ids → cache.y. A nonzero dropout_seed trains: dropout draws its mask from it.
  void forward(const nn::batch& b, trunk_cache<T>& cache, uint64_t dropout_seed) const;
  // dy [B, L, E] (taken) → every trainable parameter's grad +=. table_rows and new_rows list the
  // embedding rows a head has already given a gradient; the trunk adds its own and marks them
  // all touched.
  void backward(const nn::batch& b, const trunk_cache<T>& cache, std::vector<T> dy,
                std::vector<int64_t>& table_rows, std::vector<int64_t>& new_rows);

  nn::parameter<T> embedding, new_words, position;
  nn::parameter<T> window_weight, window_bias;        // window > 0: [Ein, window·Ein], [Ein]
  nn::attention_parameters<T> attention;              // layers = 0
  std::vector<nn::encoder_parameters<T>> layers;      // layers = N
  nn::parameter<T> final_norm_weight, final_norm_bias;  // pre-norm layers: [E]

 private:
  nn::self_attention_shape attention_shape(const nn::batch& b) const;
  nn::attention_mask_spec mask(const nn::batch& b) const;
  nn::word_window_shape window_shape(const nn::batch& b) const;

  nn::network_shape shape_;
};

}  // namespace attn::models
