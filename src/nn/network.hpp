// The trainable text model (seed 003's simple language model, generalised):
//   token ids [B, L] → embeddings [B, L, Ein] (+ learned positions) → multi-head self-attention
//   [B, L, E] → masked mean over tokens [R, E] → linear → ReLU → linear → logits [R, C]
// → softmax cross-entropy. A classifier pools each sentence once (R = B); the next-word model
// runs causal attention and pools every prefix, so one pass trains every prefix of every line.
// Templated on the scalar: float trains, double is the specification for gradient checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/tensor.hpp"
#include "nn/mean_pool.hpp"
#include "nn/self_attention_layer.hpp"

namespace attn::nn {

struct network_shape {
  int64_t vocabulary = 0;  // rows of the embedding table
  int64_t embed = 0;       // Ein, the embedding width
  int64_t width = 0;       // E, the attention width
  int64_t heads = 1;       // H
  int64_t hidden = 0;      // the MLP's hidden width
  int64_t classes = 0;     // C: output words or labels
  int64_t positions = 0;   // rows of the learned positional table; 0 = none
  bool causal = false;     // next-word: query t sees tokens ≤ t
  bool train_embeddings = true;
};

template <class T>
struct parameter {
  std::string name;  // as saved in the model file
  shape_t shape;
  std::vector<T> value, grad;
  bool trainable = true;
  bool decay = false;  // weight decay applies to matrices, not to biases or embeddings
};

// One padded batch: ids [B, L] (-1 after each sequence's end), the pooled rows and their
// target classes.
struct batch {
  int64_t size = 0, length = 0;
  std::vector<int64_t> ids, lengths;
  std::vector<pool_row> rows;
  std::vector<int64_t> targets;  // [R]
  int64_t tokens() const;        // real (unpadded) tokens
};

template <class T>
struct network_cache {
  std::vector<T> x;  // embeddings (+ positions) [B, L, Ein]
  self_attention_cache<T> attention;
  std::vector<T> y;                 // contextual embeddings [B, L, E]
  std::vector<T> pooled;            // [R, E]
  std::vector<T> pre, hidden;       // the MLP's hidden layer before and after ReLU [R, hidden]
  std::vector<T> logits;            // [R, C]
};

template <class T>
class network {
 public:
  explicit network(const network_shape& shape);  // every parameter zero

  const network_shape& shape() const { return shape_; }
  // Every parameter in a fixed order (the positional table only when there is one).
  std::vector<parameter<T>*> parameters();
  std::vector<const parameter<T>*> parameters() const;

  // Fills cache (logits included) and returns the mean cross-entropy over the batch's rows
  // (0 when it has none or no targets).
  T forward(const batch& b, network_cache<T>& cache) const;
  // Adds the gradients of forward's loss to each trainable parameter's grad.
  void backward(const batch& b, const network_cache<T>& cache);
  void zero_grad();

  parameter<T> embedding, position;
  parameter<T> wq, bq, wk, bk, wv, bv, wo, bo;  // attention
  parameter<T> w1, b1, w2, b2;                  // the MLP head

 private:
  self_attention_shape attention_shape(const batch& b) const;
  attention_mask_spec mask(const batch& b) const;
  self_attention_weights<T> attention_weights() const;

  network_shape shape_;
};

}  // namespace attn::nn
