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
#include <memory>
#include <span>
#include <vector>

#include "core/aligned_vector.hpp"

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
  // On each sub-layer's output before its residual add (Vaswani's residual dropout,
  // nn.Transformer's dropout inside its layers), while training.
  double residual_dropout = 0.0;
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
  std::vector<T> scored, row_lse;                 // [R, E], [R]
  // [R, V], on whole cache lines (written streamed); backward overwrites them with their gradient
  aligned_vector<T> logits;
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
  // Adds the gradients of forward's loss to every parameter's grad. The cache's logits become
  // their gradient (R × V floats, 64 MB at 2,048 rows of 8,000 pieces: an array of its own was
  // mapped afresh every step, above what glibc keeps, and its page faults were 6% of the step).
  void backward(const translation_batch& b, translator_cache<T>& cache);
  // The encoder alone: the batch's sources → cache.memory [B, S, E] (forward's first half).
  void encode(const translation_batch& b, translator_cache<T>& cache, uint64_t dropout_seed) const;

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

// The translator's decoder weights packed for stepping (nn::decoder_block_steps for each layer,
// the tied output as a rows_linear), built once per model and shared by every sentence it
// translates. The model must outlive them and keep its weights while they are in use.
class translator_steps {
 public:
  explicit translator_steps(const translator<float>& model);
  const translator<float>& model() const { return *model_; }
  const std::vector<nn::decoder_block_steps>& blocks() const { return blocks_; }
  const nn::rows_linear& output() const { return output_; }

 private:
  const translator<float>* model_;
  std::vector<nn::decoder_block_steps> blocks_;
  nn::rows_linear output_;  // logits = LN(x)·embeddingᵀ
};

// The translator run one target token at a time for one source sentence: the encoder runs once,
// each decoder layer's cross-attention keys and values are projected once, and the decoder's
// self-attention keeps a key-value cache, so a new token costs one row through the decoder.
// step() gives the logits forward gives at the same position (tests hold the two together).
// Copies (beam search's hypotheses) share the sentence's memory and cross-attention keys and
// values (read-only while stepping) and each keep their own cache. The weights must outlive
// the decoder.
class translator_decoder {
 public:
  // source: the sentence's pieces (ending in </s>), none padding; capacity: the most target
  // tokens it will read (a usage error past it).
  translator_decoder(const translator_steps& weights, std::span<const int64_t> source, int64_t capacity);
  // A copy has read the same tokens and shares the sentence's memory; its logits() are empty
  // until it steps (beam search copies a hypothesis to continue it, never to reread its scores).
  translator_decoder(const translator_decoder& other);
  translator_decoder(translator_decoder&&) = default;
  translator_decoder& operator=(const translator_decoder&) = delete;
  translator_decoder& operator=(translator_decoder&&) = default;

  // Reads the token at position length(); returns the logits of the token after it [V], valid
  // while this decoder lives and reads nothing else.
  std::span<const float> step(int64_t id);
  // Several decoders (beam search's hypotheses, of one sentence or of several) each read their
  // token, decoder k ids[k], in one pass: each layer's weights are read once for all of them,
  // each row attends to its own cache and its own sentence. Their logits (logits()) are the bits
  // step() gives each alone. Decoders of other models or of other lengths step one at a time.
  static void step_together(std::span<translator_decoder* const> decoders, std::span<const int64_t> ids);
  std::span<const float> logits() const { return logits_; }
  int64_t length() const { return length_; }
  int64_t source_length() const { return source_length_; }

 private:
  const translator_steps* weights_;
  int64_t source_length_ = 0, capacity_ = 0, length_ = 0;
  std::shared_ptr<const std::vector<nn::cross_keys_values>> cross_;  // each decoder layer's
  std::vector<nn::self_attention_kv> self_kv_;                        // each decoder layer's
  // Rows read together write their logits into one block [rows, V] that they share: no copy
  // per row.
  std::shared_ptr<const float[]> logits_block_;
  std::span<const float> logits_;
};

}  // namespace attn::models
