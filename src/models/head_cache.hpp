// What a head's forward leaves for its backward and for the callers that read the scores.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/adaptive_output.hpp"
#include "nn/fused_output.hpp"

namespace attn::models {

template <class T>
struct head_cache {
  std::vector<T> pre, hidden;       // the head's hidden layer before and after ReLU [R, hidden]
  std::vector<T> logits;            // [R, C]; the adaptive softmax: each class's log-probability,
                                    // filled when evaluating only (training scores its pieces and
                                    // leaves it as it was)
  std::vector<T> row_lse;           // each row's log-sum-exp [R] (the loss's, for backward)
  // Backward's scratch for the output's gradients, its largest arrays ([R, C] and [C, Ein]: 268 MB
  // a step for a 16k-word language model; with a frozen table's adaptive output dtable holds only
  // the learned words' rows, [M, Ein]), kept so that each step reuses the memory instead of
  // faulting in and zeroing fresh pages. Not part of the forward's results.
  mutable std::vector<T> dlogits, dtable;
};

// The tied output's own (tied_output.hpp).
template <class T>
struct tied_output_cache : head_cache<T> {
  std::vector<T> output_table;      // the output words' embedding rows [C, Ein]
  // The frozen table output_table's rows were gathered from (null: none kept). A frozen table is
  // never written once training starts, so the next forward with this cache gathers only the
  // trainable rows (learned words) again: the 30,000-word table is 12 MB a step otherwise.
  const T* output_table_frozen_from = nullptr;
  nn::adaptive_output_cache<T> adaptive;  // the adaptive softmax's pieces (backward's input)
  std::vector<T> token_scores;      // the adaptive softmax's cluster tokens [R, K] (evaluating)
  // Training the full softmax in float: forward takes the loss and the output's gradients in one
  // pass (fused_output.hpp) and leaves them here for backward, with logits and row_lse left
  // empty (output_fused true).
  bool output_fused = false;
  std::vector<T> dhidden_fused, dbias_fused;  // [R, E], [C]; dtable above holds dtable
  nn::fused_output_scratch fused_scratch;
};

}  // namespace attn::models
