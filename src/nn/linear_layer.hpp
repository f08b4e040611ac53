// The trainable layers' building blocks, each a forward/backward pair over row-major buffers,
// in float (training) or double (the gradient checks). Backward functions *add* into the
// gradients they are given, so a parameter used twice, or a batch, sums its contributions.
#pragma once

#include <cstdint>

namespace attn::nn {

// x [N, in], w [out, in], b [out] (null: no bias) → y [N, out]; y = x·wᵀ + b. bf16: the
// products' operands rounded to bf16, their sums in T (dense.hpp), forward and backward alike.
template <class T>
void linear_forward(const T* x, const T* w, const T* b, T* y, int64_t n, int64_t in, int64_t out,
                    bool bf16 = false);

// dy [N, out] → dx [N, in] += dy·w (skipped when dx is null: frozen inputs need none),
// dw [out, in] += dyᵀ·x (skipped when null: a frozen weight, such as a tied output's rows),
// db [out] += Σ_rows dy (skipped when null)
template <class T>
void linear_backward(const T* dy, const T* x, const T* w, T* dx, T* dw, T* db, int64_t n,
                     int64_t in, int64_t out, bool bf16 = false);

// As linear_backward, except that dx is written (dx = dy·w), not added into: a buffer made for
// it needs no zeros first, and the product never reads it. dx must not be null.
template <class T>
void linear_backward_writing_dx(const T* dy, const T* x, const T* w, T* dx, T* dw, T* db, int64_t n,
                                int64_t in, int64_t out, bool bf16 = false);

// y = max(x, 0), elementwise over n values
template <class T>
void relu_forward(const T* x, T* y, int64_t n);
// dx += dy where the forward's input was positive (PyTorch's choice at exactly 0: no gradient)
template <class T>
void relu_backward(const T* dy, const T* x, T* dx, int64_t n);
// d *= [x > 0] in place: relu's backward where d is the output's gradient and nothing else adds
// into the input's (a feed-forward's hidden layer), without a second array
template <class T>
void relu_backward_in_place(T* d, const T* x, int64_t n);

}  // namespace attn::nn

namespace attn::nn {

// One row: x [in], w [out, in], b [out] (null: none) → y [out], a dot product per output, with
// no packing of w as the batched GEMM does (for one row that copy would cost as much as the
// product). Generation's one-row paths; a wide w's rows are shared among the threads.
void linear_row_forward(const float* x, const float* w, const float* b, float* y, int64_t in,
                        int64_t out);

}  // namespace attn::nn
