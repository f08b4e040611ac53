// Softmax cross-entropy over classes, averaged over rows.
#pragma once

#include <cstdint>

namespace attn::nn {

// logits [R, C], targets [R] (class indices) → the mean over rows of -log softmax(logits)[target];
// probabilities [R, C] (when not null) receives softmax(logits).
template <class T>
T cross_entropy_forward(const T* logits, const int64_t* targets, T* probabilities, int64_t r,
                        int64_t c);
// dlogits [R, C] = (softmax(logits) − onehot(target)) / R, times dloss
template <class T>
void cross_entropy_backward(const T* logits, const int64_t* targets, T* dlogits, int64_t r,
                            int64_t c, T dloss = T(1));

}  // namespace attn::nn
