// Embedding lookup and positional embeddings, with their backward passes.
#include "nn/embedding.hpp"

#include <algorithm>

namespace attn::nn {

template <class T>
void embedding_forward(const int64_t* ids, const T* table, int64_t split, const T* extra, T* x,
                       int64_t n, int64_t e) {
  for (int64_t i = 0; i < n; ++i) {
    T* row = x + i * e;
    const int64_t id = ids[i];
    if (id < 0) std::fill(row, row + e, T(0));
    else if (id < split) std::copy(table + id * e, table + (id + 1) * e, row);  // x[i] = table[id]
    else std::copy(extra + (id - split) * e, extra + (id - split + 1) * e, row);
  }
}

template <class T>
void embedding_backward(const int64_t* ids, const T* dx, T* dtable, int64_t split, T* dextra,
                        int64_t n, int64_t e) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = ids[i];
    if (id < 0) continue;
    // x[i] = table[id] → dtable[id] += dx[i] (or the extra rows' gradient)
    T* row = id < split ? (dtable != nullptr ? dtable + id * e : nullptr)
                        : (dextra != nullptr ? dextra + (id - split) * e : nullptr);
    if (row == nullptr) continue;
    for (int64_t j = 0; j < e; ++j) row[j] += dx[i * e + j];
  }
}

template <class T>
void positional_forward(const T* positions, T* x, int64_t b, int64_t l, int64_t e) {
  for (int64_t s = 0; s < b; ++s)
    for (int64_t t = 0; t < l; ++t)
      for (int64_t j = 0; j < e; ++j) x[(s * l + t) * e + j] += positions[t * e + j];
}

template <class T>
void positional_backward(const T* dx, T* dpositions, int64_t b, int64_t l, int64_t e) {
  for (int64_t s = 0; s < b; ++s)
    for (int64_t t = 0; t < l; ++t)  // x[s, t] += positions[t] → dpositions[t] += dx[s, t]
      for (int64_t j = 0; j < e; ++j) dpositions[t * e + j] += dx[(s * l + t) * e + j];
}

#define ATTN_INSTANTIATE(T)                                                               \
  template void embedding_forward<T>(const int64_t*, const T*, int64_t, const T*, T*,     \
                                     int64_t, int64_t);                                   \
  template void embedding_backward<T>(const int64_t*, const T*, T*, int64_t, T*, int64_t, \
                                      int64_t);                                           \
  template void positional_forward<T>(const T*, T*, int64_t, int64_t, int64_t);          \
  template void positional_backward<T>(const T*, T*, int64_t, int64_t, int64_t);
ATTN_INSTANTIATE(float)
ATTN_INSTANTIATE(double)
#undef ATTN_INSTANTIATE

}  // namespace attn::nn
