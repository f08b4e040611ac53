// Multi-head attention with its backward pass: the projections are linear layers, the heads go
// through the attention core (attn's fused sdpa kernels in float).
#include "nn/attention_layer.hpp"

#include <algorithm>
#include <tuple>

#include "nn/linear_layer.hpp"
#include "nn/parallel_elements.hpp"
#include "nn/scratch.hpp"

namespace attn::nn {

namespace {

// [B, N, H, D] ↔ [B, H, N, D] for a sequence of N rows: the projections give the first,
// attention works on the second.
template <class T>
void split_heads(const T* in, T* out, int64_t batch, int64_t rows, int64_t width, int64_t heads) {
  const int64_t d = width / heads;
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(batch * rows * width))
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t h = 0; h < heads; ++h)
        std::copy_n(in + ((b * rows + t) * heads + h) * d, d,
                    out + ((b * heads + h) * rows + t) * d);
}

template <class T>
void merge_heads(const T* in, T* out, int64_t batch, int64_t rows, int64_t width, int64_t heads) {
  const int64_t d = width / heads;
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(batch * rows * width))
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < rows; ++t)
        std::copy_n(in + ((b * heads + h) * rows + t) * d, d,
                    out + ((b * rows + t) * heads + h) * d);
}

attention_core_shape core_shape(const attention_shape& s) {
  return {.batch = s.batch,
          .heads = s.heads,
          .queries = s.queries,
          .keys = s.keys,
          .head_dim = s.width / s.heads};
}

// x [B, N, in] → heads [B, H, N, D] of x·Wᵀ + b
template <class T>
void project_heads(const T* x, const T* weight, const T* bias, std::vector<T>& heads,
                   std::vector<T>& projected, int64_t rows, int64_t in, const attention_shape& s) {
  const auto n = static_cast<size_t>(s.batch * rows * s.width);
  projected.resize(n);
  linear_forward(x, weight, bias, projected.data(), s.batch * rows, in, s.width);
  heads.resize(n);
  split_heads(projected.data(), heads.data(), s.batch, rows, s.width, s.heads);
}

}  // namespace

template <class T>
void attention_keys_values_forward(const T* x_kv, const attention_weights<T>& w,
                                   attention_cache<T>& cache, const attention_shape& s) {
  std::vector<T> projected;
  project_heads(x_kv, w.wk, w.bk, cache.k, projected, s.keys, s.key_input, s);
  project_heads(x_kv, w.wv, w.bv, cache.v, projected, s.keys, s.key_input, s);
}

template <class T>
void attention_queries_forward(const T* x_q, const attention_weights<T>& w, T* y,
                               attention_cache<T>& cache, const attention_shape& s,
                               const attention_mask_spec& mask) {
  const int64_t rows = s.batch * s.queries, n = rows * s.width;
  std::vector<T> projected;
  project_heads(x_q, w.wq, w.bq, cache.q, projected, s.queries, s.query_input, s);
  cache.o.resize(static_cast<size_t>(n));
  attention_core_forward(cache.q.data(), cache.k.data(), cache.v.data(), cache.o.data(), cache.core,
                         core_shape(s), mask);
  cache.merged.resize(static_cast<size_t>(n));
  merge_heads(cache.o.data(), cache.merged.data(), s.batch, s.queries, s.width, s.heads);
  linear_forward(cache.merged.data(), w.wo, w.bo, y, rows, s.width, s.width);
}

template <class T>
void attention_forward(const T* x_q, const T* x_kv, const attention_weights<T>& w, T* y,
                       attention_cache<T>& cache, const attention_shape& s,
                       const attention_mask_spec& mask) {
  attention_keys_values_forward(x_kv, w, cache, s);
  attention_queries_forward(x_q, w, y, cache, s, mask);
}

template <class T>
void attention_backward(const T* dy, const T* x_q, const T* x_kv, const attention_weights<T>& w,
                        const attention_cache<T>& cache, T* dx_q, T* dx_kv,
                        const attention_grads<T>& g, const attention_shape& s,
                        const attention_mask_spec& mask) {
  const int64_t query_rows = s.batch * s.queries, key_rows = s.batch * s.keys;
  const int64_t nq = query_rows * s.width, nk = key_rows * s.width;
  // y = merged·W_oᵀ + b_o
  scratch<T> dmerged = scratch_zeros<T>(nq);
  linear_backward(dy, cache.merged.data(), w.wo, dmerged.data(), g.dwo, g.dbo, query_rows, s.width,
                  s.width);
  // merged = concat of the heads' o (each of these written whole before it is read)
  scratch<T> d_o(static_cast<size_t>(nq)), dq(static_cast<size_t>(nq));
  scratch<T> dk(static_cast<size_t>(nk)), dv(static_cast<size_t>(nk));
  scratch<T> dprojected(static_cast<size_t>(std::max(nq, nk)));
  split_heads(dmerged.data(), d_o.data(), s.batch, s.queries, s.width, s.heads);
  // o = attention(q, k, v)
  attention_core_backward(cache.q.data(), cache.k.data(), cache.v.data(), cache.o.data(),
                          cache.core, d_o.data(), dq.data(), dk.data(), dv.data(), core_shape(s),
                          mask);
  // q = split(x_q·W_qᵀ + b_q); k, v the same from x_kv, which feeds both, so dx_kv sums them
  // (and for self-attention, where dx_q is dx_kv, dx sums all three in the order q, k, v)
  merge_heads(dq.data(), dprojected.data(), s.batch, s.queries, s.width, s.heads);
  linear_backward(dprojected.data(), x_q, w.wq, dx_q, g.dwq, g.dbq, query_rows, s.query_input,
                  s.width);
  for (auto [dheads, weight, dweight, dbias] :
       {std::tuple{&dk, w.wk, g.dwk, g.dbk}, std::tuple{&dv, w.wv, g.dwv, g.dbv}}) {
    merge_heads(dheads->data(), dprojected.data(), s.batch, s.keys, s.width, s.heads);
    linear_backward(dprojected.data(), x_kv, weight, dx_kv, dweight, dbias, key_rows, s.key_input,
                    s.width);
  }
}

#define ATTN_INSTANTIATE(T)                                                                     \
  template void attention_keys_values_forward<T>(const T*, const attention_weights<T>&,         \
                                                 attention_cache<T>&, const attention_shape&);  \
  template void attention_queries_forward<T>(const T*, const attention_weights<T>&, T*,         \
                                             attention_cache<T>&, const attention_shape&,       \
                                             const attention_mask_spec&);                       \
  template void attention_forward<T>(const T*, const T*, const attention_weights<T>&, T*,       \
                                     attention_cache<T>&, const attention_shape&,               \
                                     const attention_mask_spec&);                               \
  template void attention_backward<T>(                                                          \
      const T*, const T*, const T*, const attention_weights<T>&, const attention_cache<T>&, T*, \
      T*, const attention_grads<T>&, const attention_shape&, const attention_mask_spec&);
ATTN_INSTANTIATE(float)
ATTN_INSTANTIATE(double)
#undef ATTN_INSTANTIATE

}  // namespace attn::nn
