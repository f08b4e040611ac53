// The trainable text model, assembled from its pieces (src/models/):
//   trunk (trunk.hpp): token ids [B, L] → embeddings → (word window) → attention stack → y [B, L, E]
//   pooling (pooling.hpp): y → one vector per scored row [R, P], dropped out while training
//   a head: the classifier's MLP (mlp_head.hpp: classify, next-word), or the tied output
//     (tied_output.hpp: masked-word, lm) → logits [R, C] → softmax cross-entropy.
// Templated on the scalar: float trains, double is the specification for gradient checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/tensor.hpp"
#include "models/head_cache.hpp"
#include "models/mlp_head.hpp"
#include "models/pooling.hpp"
#include "models/tied_output.hpp"
#include "models/trunk.hpp"
#include "nn/batch.hpp"
#include "nn/network_shape.hpp"
#include "nn/parameter.hpp"

namespace attn::nn {

// Every piece's cache, under one name (a forward's results: y, logits, …).
template <class T>
struct network_cache : models::trunk_cache<T>, models::pooling_cache<T>, models::tied_output_cache<T> {};

template <class T>
class network {
 public:
  // Every parameter zero. output_rows: with tied_output, each class's embedding row [C];
  // output_cutoffs: with tied_output, the adaptive softmax's cuts c₀ < … < cₙ ≤ C over the classes
  // (most frequent first; adaptive_output.hpp), or none for the full softmax.
  explicit network(const network_shape& shape, std::vector<int64_t> output_rows = {},
                   std::vector<int64_t> output_cutoffs = {});

  const network_shape& shape() const { return shape_; }
  // The tied output's three products (the logits, and their gradients for the hidden rows and
  // the table) on bf16 operands with float32 sums, as PyTorch's autocast runs them: a training
  // choice (attn train --dtype bf16), not part of the model; off, every product is float32.
  void set_output_bf16(bool on) { output.set_bf16(on); }
  // Tied output: each class's embedding row.
  const std::vector<int64_t>& output_rows() const { return output.output_rows(); }
  bool adaptive() const { return output.adaptive(); }
  // The adaptive softmax's cuts (adaptive() only).
  adaptive_cuts cuts() const { return output.cuts(); }
  // Every parameter in a fixed order (the new words' and positional tables only when present).
  std::vector<parameter<T>*> parameters();
  std::vector<const parameter<T>*> parameters() const;

  // Fills cache (logits included) and returns the mean cross-entropy over the batch's rows
  // (0 when it has none or no targets). A nonzero dropout_seed trains: dropout draws its masks
  // from it; 0 evaluates.
  T forward(const batch& b, network_cache<T>& cache, uint64_t dropout_seed = 0) const;
  // Adds the gradients of forward's loss to each trainable parameter's grad.
  void backward(const batch& b, const network_cache<T>& cache);
  void zero_grad();

  models::trunk<T> trunk;
  models::pooling<T> pool;
  models::mlp_head<T> head;           // !tied_output
  models::tied_output<T> output;      // tied_output

 private:
  network_shape shape_;
};

}  // namespace attn::nn
