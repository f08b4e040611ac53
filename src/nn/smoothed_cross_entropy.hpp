// Cross-entropy with label smoothing (Szegedy et al.; the Transformer's ε = 0.1), as PyTorch's
// F.cross_entropy(label_smoothing=ε) and fairseq's label_smoothed_cross_entropy define it: the
// target's distribution is (1 − ε) on the target plus ε spread evenly over all C classes, so a row
// costs (1 − ε)·(−log p_target) + ε·mean_j(−log p_j). ε = 0 is plain cross-entropy.
#pragma once

#include <cstdint>

namespace attn::nn {

// logits [R, C], targets [R] → the mean over the rows; row_lse [R] keeps each row's log-sum-exp.
template <class T>
T smoothed_cross_entropy_forward(const T* logits, const int64_t* targets, int64_t rows, int64_t classes,
                                 double smoothing, T* row_lse);
// dlogits [R, C] = (softmax − (1 − ε)·onehot − ε/C) / R (written, not added; dlogits may be
// logits itself: each element is read before it is written).
template <class T>
void smoothed_cross_entropy_backward(const T* logits, const int64_t* targets, const T* row_lse, T* dlogits,
                                     int64_t rows, int64_t classes, double smoothing);

}  // namespace attn::nn
