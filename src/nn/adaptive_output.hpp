// The adaptive softmax on the tied output (Grave et al., 2017, "Efficient softmax approximation
// for GPUs"; PyTorch's AdaptiveLogSoftmaxWithLoss): the classes, most frequent first, are cut at
// c₀ < c₁ < … < cₙ. The head scores the frequent classes [0, c₀), the classes after the last cut
// [cₙ, C) (a language model's <unk> and <eos>) and one token per cluster [cᵢ, cᵢ₊₁); a class in
// cluster i has probability p_head(token i) · p_i(class), the second a softmax over the cluster
// alone. Training scores each row's head and only its target's cluster, so a step costs
// (c₀ + clusters) products a row plus the rare rows' clusters, instead of C.
//
// Every score is hidden·row + bias as the full softmax's is (rows of the tied table, one learned
// vector per cluster token): unlike PyTorch's module the clusters keep the full width, so the
// table stays tied. Templated on the scalar: float trains, double is the gradient checks'.
#pragma once

#include <cstdint>
#include <vector>

namespace attn::nn {

// Where the head puts things: head index of class c (or -1), its cluster (-1: in the head).
struct adaptive_cuts {
  std::vector<int64_t> cutoffs;  // c₀ < … < cₙ ≤ classes
  int64_t classes = 0;

  int64_t clusters() const { return static_cast<int64_t>(cutoffs.size()) - 1; }
  // Head entries: the c₀ frequent classes, the C − cₙ after the last cut, a token per cluster.
  int64_t head() const { return cutoffs.front() + (classes - cutoffs.back()) + clusters(); }
  int64_t cluster_of(int64_t c) const;   // -1: a head class
  int64_t head_index(int64_t c) const;   // a head class's place in the head, or its cluster's token
};

template <class T>
struct adaptive_output_cache {
  std::vector<T> head_table, head_bias;  // [H, E], [H]: the head's rows gathered
  std::vector<int64_t> head_targets;     // [R]
  std::vector<T> head_logits, head_lse;  // [R, H], [R]
  struct cluster {
    std::vector<int64_t> rows, targets;  // the rows whose target is in it, and the target's place
    std::vector<T> hidden, logits, lse;  // [Rᵢ, E], [Rᵢ, Sᵢ], [Rᵢ]
  };
  std::vector<cluster> clusters;
  // Backward's scratch, kept so that steps reuse the memory.
  mutable std::vector<T> dhead, dhead_table, dhead_bias, dlogits, dhidden;
};

// hidden [R, E]; table [C, E] and bias [C] (the tied rows and the classes' biases); token_weight
// [K, E] and token_bias [K] (the clusters' head tokens); targets [R] → the mean over rows of
// −log p(target), the pieces kept in cache for backward. bf16: the products' operands rounded to
// bf16 (linear_layer.hpp).
template <class T>
T adaptive_output_forward(const T* hidden, const T* table, const T* bias, const T* token_weight,
                          const T* token_bias, const int64_t* targets, int64_t rows, int64_t width,
                          const adaptive_cuts& cuts, adaptive_output_cache<T>& cache, bool bf16 = false);

// Adds the gradients of forward's loss: dhidden [R, E], dtable [C, E] (null: frozen rows), dbias
// [C], dtoken_weight [K, E], dtoken_bias [K]. (The head's rows, token vectors included, are the
// ones forward gathered into the cache.) With dtable_classes (M sorted classes), dtable is
// [M, E], row m the gradient of class dtable_classes[m]'s row alone: a frozen table with a few
// learned rows then costs M·Rᵢ products instead of a [C, E] gradient written and read each step.
template <class T>
void adaptive_output_backward(const T* hidden, const T* table, const adaptive_output_cache<T>& cache,
                              int64_t rows, int64_t width,
                              const adaptive_cuts& cuts, T* dhidden, T* dtable, T* dbias,
                              T* dtoken_weight, T* dtoken_bias, bool bf16 = false,
                              const std::vector<int64_t>* dtable_classes = nullptr);

// Every class's log-probability [R, C], from each class's score hidden·row + bias [R, C] and
// each cluster token's [R, K] (overwritten in place): what predict, eval and generation read.
template <class T>
void adaptive_log_probabilities(T* class_scores, const T* token_scores, int64_t rows,
                                const adaptive_cuts& cuts);

}  // namespace attn::nn
