// A word window: a one-dimensional convolution over the sequence (Kim 2014's sentence CNN), so
// that each token's vector sees its neighbours before the attention does. Token t becomes
// relu(W·[x_{t+o1}; …; x_{t+ow}] + b) over `width` neighbouring tokens, zeros past a sequence's
// ends: centred where attention reads both ways (width 3: t−1, t, t+1), the current and earlier
// tokens only where it is causal (t−width+1 … t), so no prefix sees the word it predicts.
// Positions past a sequence's length are 0 and get no gradient.
#pragma once

#include <cstdint>
#include <vector>

namespace attn::nn {

struct word_window_shape {
  int64_t batch = 0, length = 0;  // B, L
  int64_t in = 0, out = 0;        // widths of x and y
  int64_t width = 3;              // tokens per window
  bool causal = false;
};

template <class T>
struct word_window_cache {
  std::vector<T> windows;  // [B·L, width·in]: each token's neighbours side by side
  std::vector<T> pre;      // [B·L, out], before the ReLU
};

// x [B, L, in], w [out, width·in], b [out] → y [B, L, out]
template <class T>
void word_window_forward(const T* x, const int64_t* lengths, const T* w, const T* b, T* y,
                         word_window_cache<T>& cache, const word_window_shape& s);

// dy [B, L, out] → dx [B, L, in] += (skipped when null), dw += , db +=
template <class T>
void word_window_backward(const T* dy, const int64_t* lengths, const T* w,
                          const word_window_cache<T>& cache, T* dx, T* dw, T* db,
                          const word_window_shape& s);

}  // namespace attn::nn
