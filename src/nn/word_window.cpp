// The word window as an unfolding (each token's neighbours copied side by side) and one linear
// layer over it; the backward folds the unfolded gradient back onto the tokens it came from.
#include "nn/word_window.hpp"

#include <algorithm>

#include "nn/linear_layer.hpp"

namespace attn::nn {

namespace {

// The offset of the window's first token from t.
int64_t first_offset(const word_window_shape& s) { return s.causal ? -(s.width - 1) : -(s.width / 2); }

}  // namespace

template <class T>
void word_window_forward(const T* x, const int64_t* lengths, const T* w, const T* b, T* y,
                         word_window_cache<T>& c, const word_window_shape& s) {
  const int64_t tokens = s.batch * s.length, row = s.width * s.in, first = first_offset(s);
  c.windows.assign(static_cast<size_t>(tokens * row), T(0));
  for (int64_t i = 0; i < s.batch; ++i)
    for (int64_t t = 0; t < lengths[i]; ++t)
      for (int64_t j = 0; j < s.width; ++j) {
        const int64_t from = t + first + j;
        if (from < 0 || from >= lengths[i]) continue;
        std::copy_n(x + (i * s.length + from) * s.in, s.in,
                    c.windows.data() + (i * s.length + t) * row + j * s.in);
      }
  c.pre.resize(static_cast<size_t>(tokens * s.out));
  linear_forward(c.windows.data(), w, b, c.pre.data(), tokens, row, s.out);
  relu_forward(c.pre.data(), y, tokens * s.out);
  for (int64_t i = 0; i < s.batch; ++i)  // past the end: nothing
    std::fill(y + (i * s.length + lengths[i]) * s.out, y + (i + 1) * s.length * s.out, T(0));
}

template <class T>
void word_window_backward(const T* dy, const int64_t* lengths, const T* w,
                          const word_window_cache<T>& c, T* dx, T* dw, T* db,
                          const word_window_shape& s) {
  const int64_t tokens = s.batch * s.length, row = s.width * s.in, first = first_offset(s);
  std::vector<T> dpre(static_cast<size_t>(tokens * s.out), T(0));
  for (int64_t i = 0; i < s.batch; ++i) {
    const int64_t at = i * s.length * s.out, n = lengths[i] * s.out;
    relu_backward(dy + at, c.pre.data() + at, dpre.data() + at, n);
  }
  std::vector<T> dwindows(dx != nullptr ? static_cast<size_t>(tokens * row) : 0, T(0));
  linear_backward(dpre.data(), c.windows.data(), w, dx != nullptr ? dwindows.data() : nullptr, dw,
                  db, tokens, row, s.out);
  if (dx == nullptr) return;
  for (int64_t i = 0; i < s.batch; ++i)
    for (int64_t t = 0; t < lengths[i]; ++t)
      for (int64_t j = 0; j < s.width; ++j) {
        const int64_t from = t + first + j;
        if (from < 0 || from >= lengths[i]) continue;
        const T* g = dwindows.data() + (i * s.length + t) * row + j * s.in;
        T* to = dx + (i * s.length + from) * s.in;
        for (int64_t k = 0; k < s.in; ++k) to[k] += g[k];
      }
}

template void word_window_forward<float>(const float*, const int64_t*, const float*, const float*,
                                         float*, word_window_cache<float>&, const word_window_shape&);
template void word_window_forward<double>(const double*, const int64_t*, const double*,
                                          const double*, double*, word_window_cache<double>&,
                                          const word_window_shape&);
template void word_window_backward<float>(const float*, const int64_t*, const float*,
                                          const word_window_cache<float>&, float*, float*, float*,
                                          const word_window_shape&);
template void word_window_backward<double>(const double*, const int64_t*, const double*,
                                           const word_window_cache<double>&, double*, double*,
                                           double*, const word_window_shape&);

}  // namespace attn::nn
