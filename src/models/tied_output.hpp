// The tied output (the masked-word and language models): each token's vector [R, E] → a linear
// transform to the embedding width [R, Ein] (no ReLU: it is compared with embedding rows, which
// have both signs) → scores against the output words' own embedding rows (+ a bias per word) →
// logits [R, C]: no output matrix to learn, so a large vocabulary stays cheap. The softmax over
// them is full (fused with its gradient while training in float32: fused_output.hpp) or adaptive
// (adaptive_output.hpp: a head of frequent words and clusters of rarer ones).
#pragma once

#include <cstdint>
#include <vector>

#include "models/head_cache.hpp"
#include "models/trunk.hpp"
#include "nn/adaptive_output.hpp"
#include "nn/batch.hpp"
#include "nn/network_shape.hpp"
#include "nn/parameter.hpp"

namespace attn::models {

template <class T>
class tied_output {
 public:
  // (empty unless tied_output.) output_rows: each class's embedding row [C]; output_cutoffs: the
  // adaptive softmax's cuts c₀ < … < cₙ ≤ C over the classes (most frequent first), or none for
  // the full softmax.
  tied_output(const nn::network_shape& shape, std::vector<int64_t> output_rows,
              std::vector<int64_t> output_cutoffs);

  void append_parameters(std::vector<nn::parameter<T>*>& all);

  const std::vector<int64_t>& output_rows() const { return output_rows_; }
  bool adaptive() const { return !output_cutoffs_.empty(); }
  nn::adaptive_cuts cuts() const { return {output_cutoffs_, shape_.classes}; }
  // The three products of the scores on bf16 operands with float32 sums (attn train --dtype bf16).
  void set_bf16(bool on) { bf16_ = on; }

  // pooled [R, P] → cache.logits [R, C] (see head_cache.hpp for what training leaves instead);
  // the mean cross-entropy over the rows (0 without targets). A nonzero dropout_seed trains.
  T forward(const nn::batch& b, const T* pooled, const trunk<T>& table, tied_output_cache<T>& cache,
            uint64_t dropout_seed) const;
  // → dpooled [R, P]; the weights' grads +=, and the output words' embedding rows' grads (rows
  // listed in table_rows and new_rows, for the trunk to mark touched).
  std::vector<T> backward(const nn::batch& b, const T* pooled, trunk<T>& table,
                          const tied_output_cache<T>& cache, std::vector<int64_t>& table_rows,
                          std::vector<int64_t>& new_rows);

  // Inference queries (neighbors, the page, predict, generation): forward's products while
  // evaluating, without its cache.
  // The output words' rows as the model reads them [C, Ein].
  std::vector<T> table(const trunk<T>& trunk) const;
  // y [R, P] → y·Wᵀ + b [R, Ein]: each row read in the word vectors' space.
  std::vector<T> transform(const T* y, int64_t rows) const;
  // y [R, P] → every class's score [R, C] (the adaptive softmax: its log-probability).
  std::vector<T> scores(const T* y, int64_t rows, const std::vector<T>& table) const;
  // The one-row path (generation, float): y [P] → hidden [Ein] → scores [C], with one-row
  // products; clusters holds the adaptive softmax's cluster tokens [K].
  void row_scores(const float* y, const std::vector<float>& table, std::vector<float>& hidden,
                  std::vector<float>& scores, std::vector<float>& clusters) const;

  nn::parameter<T> transform_weight, transform_bias;  // [Ein, P], [Ein]
  nn::parameter<T> bias;                              // each word's [C]
  nn::parameter<T> cluster_weight, cluster_bias;      // the adaptive softmax's cluster tokens [K, Ein], [K]

 private:
  // Whether the scores' gradient reaches a trainable embedding row.
  bool rows_train(const trunk<T>& table) const;
  // cache.output_table = table[output_rows], a frozen table's rows kept from the last forward.
  void gather(const trunk<T>& table, tied_output_cache<T>& cache) const;
  bool fuses(const nn::batch& b, uint64_t dropout_seed) const;
  T fused_forward(const nn::batch& b, const trunk<T>& table, tied_output_cache<T>& cache) const;
  // Forward from cache.hidden and cache.output_table (each class's log-probability in
  // cache.logits unless training); backward to hidden's gradient.
  T adaptive_forward(const nn::batch& b, tied_output_cache<T>& cache, bool training) const;
  std::vector<T> adaptive_backward(const nn::batch& b, trunk<T>& table,
                                   const tied_output_cache<T>& cache,
                                   std::vector<int64_t>& table_rows, std::vector<int64_t>& new_rows);
  // dtable [C, Ein] taken back to the embedding rows it came from (listed in table_rows, new_rows).
  void rows_backward(trunk<T>& table, const std::vector<T>& dtable, std::vector<int64_t>& table_rows,
                     std::vector<int64_t>& new_rows) const;

  nn::network_shape shape_;
  std::vector<int64_t> output_rows_, output_cutoffs_;
  bool bf16_ = false;
};

}  // namespace attn::models
