// Softmax cross-entropy over classes, averaged over rows. double: the specification (std::exp,
// one row after another); float: rows in parallel, a vectorised exponential (cross_entropy.cpp).
#pragma once

#include <cstdint>

namespace attn::nn {

// logits [R, C], targets [R] (class indices) → the mean over rows of -log softmax(logits)[target];
// probabilities [R, C] (when not null) receives softmax(logits); row_lse [R] (when not null)
// each row's log-sum-exp, which spares the backward pass computing it again.
double cross_entropy_forward(const double* logits, const int64_t* targets, double* probabilities,
                             int64_t r, int64_t c, double* row_lse = nullptr);
float cross_entropy_forward(const float* logits, const int64_t* targets, float* probabilities,
                            int64_t r, int64_t c, float* row_lse = nullptr);
// dlogits [R, C] = (softmax(logits) − onehot(target)) / R, times dloss (row_lse: the forward's,
// or null to compute it). column_sums [C], when given, has Σ over rows of dlogits added to it:
// the output bias's gradient, taken while each row is still in cache rather than in a pass of
// its own over R × C floats.
void cross_entropy_backward(const double* logits, const int64_t* targets, double* dlogits, int64_t r,
                            int64_t c, double dloss = 1.0, const double* row_lse = nullptr,
                            double* column_sums = nullptr);
void cross_entropy_backward(const float* logits, const int64_t* targets, float* dlogits, int64_t r,
                            int64_t c, float dloss = 1.0f, const float* row_lse = nullptr,
                            float* column_sums = nullptr);

// One row of logits z [C] turned into its gradient where it lies, for an output that scores a
// block of rows at a time (fused_output.hpp): returns the row's loss lse(z) − z[target], then z
// = (softmax(z) − onehot(target)) · scale, and column_sums [C] (when not null) += z.
float cross_entropy_row_in_place(float* z, int64_t target, float scale, int64_t c, float* column_sums);

}  // namespace attn::nn
