// Multi-head self-attention with its backward pass: projections are linear layers, the heads
// go through the attention core (attn's fused sdpa in float).
#include "nn/self_attention_layer.hpp"

#include <algorithm>
#include <tuple>

#include "nn/linear_layer.hpp"
#include "nn/parallel_elements.hpp"
#include "nn/scratch.hpp"

namespace attn::nn {

namespace {

// [B, L, H, D] ↔ [B, H, L, D]: the projections give the first, attention works on the second.
template <class T>
void split_heads(const T* in, T* out, const self_attention_shape& s) {
  const int64_t d = s.width / s.heads;
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(s.batch * s.length * s.width))
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t t = 0; t < s.length; ++t)
      for (int64_t h = 0; h < s.heads; ++h)
        std::copy_n(in + ((b * s.length + t) * s.heads + h) * d, d,
                    out + ((b * s.heads + h) * s.length + t) * d);
}

template <class T>
void merge_heads(const T* in, T* out, const self_attention_shape& s) {
  const int64_t d = s.width / s.heads;
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(s.batch * s.length * s.width))
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t t = 0; t < s.length; ++t)
        std::copy_n(in + ((b * s.heads + h) * s.length + t) * d, d,
                    out + ((b * s.length + t) * s.heads + h) * d);
}

}  // namespace

template <class T>
void self_attention_forward(const T* x, const self_attention_weights<T>& w, T* y,
                            self_attention_cache<T>& cache, const self_attention_shape& s,
                            const attention_mask_spec& mask) {
  const int64_t rows = s.batch * s.length, n = rows * s.width, d = s.width / s.heads;
  std::vector<T> projected(static_cast<size_t>(n));
  for (auto [weight, bias, heads] : {std::tuple{w.wq, w.bq, &cache.q}, std::tuple{w.wk, w.bk, &cache.k},
                                     std::tuple{w.wv, w.bv, &cache.v}}) {
    linear_forward(x, weight, bias, projected.data(), rows, s.input, s.width);
    heads->resize(static_cast<size_t>(n));
    split_heads(projected.data(), heads->data(), s);
  }
  cache.o.resize(static_cast<size_t>(n));
  attention_core_forward(cache.q.data(), cache.k.data(), cache.v.data(), cache.o.data(), cache.lse,
                         s.batch, s.heads, s.length, d, mask);
  cache.merged.resize(static_cast<size_t>(n));
  merge_heads(cache.o.data(), cache.merged.data(), s);
  linear_forward(cache.merged.data(), w.wo, w.bo, y, rows, s.width, s.width);
}

template <class T>
void self_attention_backward(const T* dy, const T* x, const self_attention_weights<T>& w,
                             const self_attention_cache<T>& cache, T* dx,
                             const self_attention_grads<T>& g, const self_attention_shape& s,
                             const attention_mask_spec& mask) {
  const int64_t rows = s.batch * s.length, n = rows * s.width, d = s.width / s.heads;
  const auto size = static_cast<size_t>(n);
  // y = merged·W_oᵀ + b_o
  scratch<T> dmerged = scratch_zeros<T>(n);
  linear_backward(dy, cache.merged.data(), w.wo, dmerged.data(), g.dwo, g.dbo, rows, s.width,
                  s.width);
  // merged = concat of the heads' o (each of these written whole before it is read)
  scratch<T> d_o(size), dq(size), dk(size), dv(size), dprojected(size);
  split_heads(dmerged.data(), d_o.data(), s);
  // o = attention(q, k, v)
  attention_core_backward(cache.q.data(), cache.k.data(), cache.v.data(), cache.o.data(),
                          cache.lse, d_o.data(), dq.data(), dk.data(), dv.data(), s.batch,
                          s.heads, s.length, d, mask);
  // q = split(x·W_qᵀ + b_q), and the same for k and v; x feeds all three, so dx sums them
  for (auto [dheads, weight, dweight, dbias] :
       {std::tuple{&dq, w.wq, g.dwq, g.dbq}, std::tuple{&dk, w.wk, g.dwk, g.dbk},
        std::tuple{&dv, w.wv, g.dwv, g.dbv}}) {
    merge_heads(dheads->data(), dprojected.data(), s);
    linear_backward(dprojected.data(), x, weight, dx, dweight, dbias, rows, s.input, s.width);
  }
}

#define ATTN_INSTANTIATE(T)                                                                    \
  template void self_attention_forward<T>(const T*, const self_attention_weights<T>&, T*,     \
                                          self_attention_cache<T>&, const self_attention_shape&, \
                                          const attention_mask_spec&);                        \
  template void self_attention_backward<T>(const T*, const T*, const self_attention_weights<T>&, \
                                           const self_attention_cache<T>&, T*,                \
                                           const self_attention_grads<T>&,                    \
                                           const self_attention_shape&,                       \
                                           const attention_mask_spec&);
ATTN_INSTANTIATE(float)
ATTN_INSTANTIATE(double)
#undef ATTN_INSTANTIATE

}  // namespace attn::nn
