// Self-attention's one-row path with its key/value cache (self_attention_layer.hpp).
#include <algorithm>
#include <cmath>

#include "kernels/exp_nonpositive.hpp"
#include "nn/linear_layer.hpp"
#include "nn/rows_linear.hpp"
#include "nn/self_attention_layer.hpp"

namespace attn::nn {

// One head's query against its n cached keys and values, both stored dimension-major (row c of
// d holds that dimension for every position, `stride` apart): softmax(q·kⱼ·scale) weighting
// the values. Every loop runs along the positions, so it vectorises whatever d is and the
// row's cost grows as n/16 vector operations, not n short dot products.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void attend_cached(const float* q, const float* keys, const float* values, float* out, int64_t n, int64_t d,
            int64_t stride, float scale, float* scores) {
  for (int64_t j = 0; j < n; ++j) scores[j] = 0;
  for (int64_t c = 0; c < d; ++c) {
    const float qc = q[c] * scale;
    const float* k = keys + c * stride;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) scores[j] += qc * k[j];
  }
  float top = -INFINITY;
#pragma omp simd reduction(max : top)
  for (int64_t j = 0; j < n; ++j) top = std::max(top, scores[j]);
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += scores[j] = kernels::exp_nonpositive(scores[j] - top);
  const float inverse = 1.0f / sum;
  for (int64_t c = 0; c < d; ++c) {
    const float* v = values + c * stride;
    float dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j < n; ++j) dot += scores[j] * v[j];
    out[c] = dot * inverse;
  }
}

void self_attention_row_forward(const float* x, const self_attention_weights<float>& w, float* y,
                                self_attention_kv& kv, int64_t t, const self_attention_shape& s,
                                self_attention_row_scratch& r) {
  const int64_t e = s.width, in = s.input, d = s.width / s.heads, stride = kv.capacity;
  for (auto* v : {&r.q, &r.k, &r.v, &r.merged}) v->resize(static_cast<size_t>(e));
  r.scores.resize(static_cast<size_t>(kv.capacity));
  linear_row_forward(x, w.wq, w.bq, r.q.data(), in, e);
  // The new key and value join the cache as column t.
  linear_row_forward(x, w.wk, w.bk, r.k.data(), in, e);
  linear_row_forward(x, w.wv, w.bv, r.v.data(), in, e);
  float* keys = kv.keys.data();
  float* values = kv.values.data();
  for (int64_t j = 0; j < e; ++j) {
    keys[j * stride + t] = r.k[static_cast<size_t>(j)];
    values[j * stride + t] = r.v[static_cast<size_t>(j)];
  }
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  for (int64_t h = 0; h < s.heads; ++h)
    attend_cached(r.q.data() + h * d, keys + h * d * stride, values + h * d * stride, r.merged.data() + h * d,
           t + 1, d, stride, scale, r.scores.data());
  linear_row_forward(r.merged.data(), w.wo, w.bo, y, e, e);
}

void self_attention_rows_forward(const float* x, const rows_linear& qkv, const rows_linear& out, float* y,
                                 std::span<self_attention_kv* const> kv, int64_t t, const self_attention_shape& s,
                                 self_attention_row_scratch& r) {
  const auto rows = static_cast<int64_t>(kv.size());
  const int64_t e = s.width, d = s.width / s.heads;
  r.q.resize(static_cast<size_t>(rows * 3 * e));  // each row's q | k | v
  r.merged.resize(static_cast<size_t>(rows * e));
  qkv.apply(x, rows, r.q.data());
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  for (int64_t row = 0; row < rows; ++row) {
    self_attention_kv& c = *kv[static_cast<size_t>(row)];
    const int64_t stride = c.capacity;
    r.scores.resize(static_cast<size_t>(std::max<int64_t>(stride, 1)));
    const float* q = r.q.data() + row * 3 * e;
    float* keys = c.keys.data();
    float* values = c.values.data();
    for (int64_t j = 0; j < e; ++j) {  // the new key and value join the cache as column t
      keys[j * stride + t] = q[e + j];
      values[j * stride + t] = q[2 * e + j];
    }
    for (int64_t h = 0; h < s.heads; ++h)
      attend_cached(q + h * d, keys + h * d * stride, values + h * d * stride, r.merged.data() + row * e + h * d,
                    t + 1, d, stride, scale, r.scores.data());
  }
  out.apply(r.merged.data(), rows, y);
}

}  // namespace attn::nn
