// The translator (issue #54): a Transformer encoder–decoder, pre-norm, as PyTorch's
// nn.Transformer(norm_first=True) with ReLU, over one joint vocabulary of subword pieces:
//   source ids [B, S] → embedding·√E + sinusoidal positions → dropout → encoder layers
//     (encoder_block, the source's key padding) → LayerNorm → memory [B, S, E]
//   target ids [B, L] (<s> y₁ … y_{n}) → embedding·√E + positions → dropout → decoder layers
//     (decoder_block: causal self-attention, cross-attention over the memory) → LayerNorm
//   → each real target position's scores against the same embedding rows (tied output, no bias)
//   → cross-entropy with label smoothing against y₁ … y_n </s>.
// One embedding table serves the source, the target and the output (a joint vocabulary:
// Vaswani et al.'s and Marian's tied embeddings). Positions are Vaswani's sinusoids (sin at even
// dimensions, cos at odd ones): no table to learn and no longest sentence built in.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/decoder_block.hpp"
#include "nn/encoder_block.hpp"
#include "nn/parameter.hpp"

namespace attn::models {

struct translator_shape {
  int64_t vocabulary = 0;       // V: the joint pieces
  int64_t width = 0;            // E
  int64_t heads = 1;            // H (divides E)
  int64_t encoder_layers = 0, decoder_layers = 0;
  int64_t feedforward = 0;      // F
  double dropout = 0.0;         // on the embeddings (+ positions), while training
  double label_smoothing = 0.0; // ε
};

// A batch of sentence pairs: ids padded with −1 past each sentence's length.
struct translation_batch {
  int64_t size = 0, source_length = 0, target_length = 0;  // B, S, L
  std::vector<int64_t> source, source_lengths;             // [B, S], [B]
  std::vector<int64_t> target_in;   // [B, L]: <s> y₁ … y_n (the decoder's input)
  std::vector<int64_t> target_out;  // [B, L]: y₁ … y_n </s> (what each position predicts; −1: none)
};

template <class T>
struct translator_cache {
  std::vector<T> source_x, target_x;              // embeddings + positions, after dropout
  std::vector<T> source_drop, target_drop;        // dropout's masks (empty: none)
  std::vector<nn::encoder_block_cache<T>> encoder;
  std::vector<std::vector<T>> encoder_out;        // each encoder layer's output [B, S, E]
  std::vector<T> memory, memory_mean, memory_rstd;
  std::vector<nn::decoder_block_cache<T>> decoder;
  std::vector<std::vector<T>> decoder_out;        // each decoder layer's output [B, L, E]
  std::vector<T> y, y_mean, y_rstd;               // the final norm's output [B, L, E]
  std::vector<int64_t> rows, targets;             // the scored positions (b·L + t) and their targets
  std::vector<T> scored, logits, row_lse;         // [R, E], [R, V], [R]
};

template <class T>
class translator {
 public:
  explicit translator(const translator_shape& shape);  // every parameter zero

  // In nn.Transformer's names: embedding.weight, encoder.layers.N.…, encoder.norm.…,
  // decoder.layers.N.…, decoder.norm.…
  void append_parameters(std::vector<nn::parameter<T>*>& all);

  // The mean label-smoothed cross-entropy over the batch's real target positions; a nonzero
  // dropout_seed trains.
  T forward(const translation_batch& b, translator_cache<T>& cache, uint64_t dropout_seed) const;
  // Adds the gradients of forward's loss to every parameter's grad.
  void backward(const translation_batch& b, const translator_cache<T>& cache);

  const translator_shape& shape() const { return shape_; }

  nn::parameter<T> embedding;  // [V, E]
  std::vector<nn::encoder_parameters<T>> encoder;
  nn::parameter<T> encoder_norm_weight, encoder_norm_bias;
  std::vector<nn::decoder_parameters<T>> decoder;
  nn::parameter<T> decoder_norm_weight, decoder_norm_bias;

 private:
  // ids [B, N] → x [B, N, E] = embedding[id]·√E + position, dropped out while training.
  void embed(const std::vector<int64_t>& ids, int64_t batch, int64_t length, std::vector<T>& x,
             std::vector<T>& drop, uint64_t dropout_seed) const;
  nn::encoder_block_shape encoder_shape(const translation_batch& b) const;
  nn::decoder_block_shape decoder_shape(const translation_batch& b) const;

  translator_shape shape_;
};

// Vaswani's sinusoid at position t, dimension j of E.
double sinusoid(int64_t t, int64_t j, int64_t width);

}  // namespace attn::models
