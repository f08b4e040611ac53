// Self-attention's one-row path with its key/value cache (self_attention_layer.hpp).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/error.hpp"
#include "kernels/exp_nonpositive.hpp"
#include "kernels/isa_clones.hpp"
#include "nn/linear_layer.hpp"
#include "nn/rows_linear.hpp"
#include "nn/self_attention_layer.hpp"

namespace attn::nn {

void keys_values::reset(int64_t e, int64_t positions) {
  width = e;
  length = 0;
  keys.clear();
  values.clear();
  keys.reserve(static_cast<size_t>((positions + block - 1) / block * block * e));
  values.reserve(static_cast<size_t>(positions * e));
}

void keys_values::keep(int64_t n) {
  if (n < 0 || n > length) throw_usage(fmt::format("{} cached positions kept of {}", n, length));
  length = n;
  keys.resize(static_cast<size_t>((n + block - 1) / block * block * width));
  values.resize(static_cast<size_t>(n * width));
}

void keys_values::append(const float* k, const float* v) {
  const int64_t lane = length % block;
  if (lane == 0) keys.resize(keys.size() + static_cast<size_t>(block * width), 0.0f);
  float* tile = keys.data() + (length / block) * block * width + lane;
  for (int64_t c = 0; c < width; ++c) tile[c * block] = k[c];
  values.insert(values.end(), v, v + width);
  ++length;
}

namespace {

constexpr int64_t lanes = keys_values::block;

// A block's 16 scores: Σ_c q[c]·scale·k[c][lane] with four running sums (c mod 4), so that
// consecutive multiply-adds do not wait on each other.
inline void block_scores(const float* q, const float* k, int64_t d, float scale, float* out) {
  float s0[lanes] = {}, s1[lanes] = {}, s2[lanes] = {}, s3[lanes] = {};
  int64_t c = 0;
  for (; c + 4 <= d; c += 4) {
    const float q0 = q[c] * scale, q1 = q[c + 1] * scale, q2 = q[c + 2] * scale, q3 = q[c + 3] * scale;
    const float* k0 = k + c * lanes;
#pragma omp simd
    for (int64_t l = 0; l < lanes; ++l) {
      s0[l] += q0 * k0[l];
      s1[l] += q1 * k0[lanes + l];
      s2[l] += q2 * k0[2 * lanes + l];
      s3[l] += q3 * k0[3 * lanes + l];
    }
  }
  for (; c < d; ++c) {
    const float qc = q[c] * scale;
#pragma omp simd
    for (int64_t l = 0; l < lanes; ++l) s0[l] += qc * k[c * lanes + l];
  }
#pragma omp simd
  for (int64_t l = 0; l < lanes; ++l) out[l] = (s0[l] + s1[l]) + (s2[l] + s3[l]);
}

}  // namespace

// Every loop runs 16 lanes wide over whole blocks (the last block's unused lanes weigh 0), so
// no loop falls to a scalar remainder when a sentence is short, and the weighted sum adds value
// rows d wide: a row's cost is n/16 vector operations per dimension for the scores and n per 16
// dimensions for the sum.
ATTN_ISA_CLONES(void, attend_cached,
                (const float* q, const keys_values& kv, int64_t h, int64_t d, float scale, float* out,
                 float* scores),
                (q, kv, h, d, scale, out, scores)) {
  const int64_t n = kv.length, e = kv.width, blocks = (n + lanes - 1) / lanes, padded = blocks * lanes;
  const float* keys = kv.keys.data() + h * d * lanes;
  for (int64_t b = 0; b < blocks; ++b) block_scores(q, keys + b * e * lanes, d, scale, scores + b * lanes);
  float top = -INFINITY;
  for (int64_t j = 0; j < n; ++j) top = std::max(top, scores[j]);
  for (int64_t j = n; j < padded; ++j) scores[j] = top;  // the unused lanes: e^0, then 0
#pragma omp simd
  for (int64_t j = 0; j < padded; ++j) scores[j] = kernels::exp_nonpositive(scores[j] - top);
  for (int64_t j = n; j < padded; ++j) scores[j] = 0;
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < padded; ++j) sum += scores[j];
  const float inverse = 1.0f / sum;
  const float* values = kv.values.data() + h * d;
  // Dimensions c … c + 15 of the weighted sum, in registers across the positions: four running
  // sums (j mod 4), so that a long cache's multiply-adds do not wait on each other.
  const auto sum_16 = [&](int64_t c) {
    float a0[lanes] = {}, a1[lanes] = {}, a2[lanes] = {}, a3[lanes] = {};
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const float p0 = scores[j], p1 = scores[j + 1], p2 = scores[j + 2], p3 = scores[j + 3];
      const float* v = values + j * e + c;
#pragma omp simd
      for (int64_t l = 0; l < lanes; ++l) {
        a0[l] += p0 * v[l];
        a1[l] += p1 * v[e + l];
        a2[l] += p2 * v[2 * e + l];
        a3[l] += p3 * v[3 * e + l];
      }
    }
    for (; j < n; ++j) {
      const float p = scores[j];
      const float* v = values + j * e + c;
#pragma omp simd
      for (int64_t l = 0; l < lanes; ++l) a0[l] += p * v[l];
    }
#pragma omp simd
    for (int64_t l = 0; l < lanes; ++l) out[c + l] = ((a0[l] + a1[l]) + (a2[l] + a3[l])) * inverse;
  };
  int64_t c = 0;
  for (; c + lanes <= d; c += lanes) sum_16(c);
  // The last d mod 16 dimensions (a head of 25: 9) as the last 16, overlapping the chunk before:
  // the overlap is written again with the same bits, and no dimension runs alone along n.
  if (c < d && d >= lanes) {
    sum_16(d - lanes);
    return;
  }
  for (; c < d; ++c) {
    float acc = 0;
    for (int64_t j = 0; j < n; ++j) acc += scores[j] * values[j * e + c];
    out[c] = acc * inverse;
  }
}

void self_attention_row_forward(const float* x, const self_attention_weights<float>& w, float* y,
                                self_attention_kv& kv, int64_t t, const self_attention_shape& s,
                                self_attention_row_scratch& r) {
  const int64_t e = s.width, in = s.input, d = s.width / s.heads;
  for (auto* v : {&r.q, &r.k, &r.v, &r.merged}) v->resize(static_cast<size_t>(e));
  linear_row_forward(x, w.wq, w.bq, r.q.data(), in, e);
  // The new key and value join the cache as position t.
  linear_row_forward(x, w.wk, w.bk, r.k.data(), in, e);
  linear_row_forward(x, w.wv, w.bv, r.v.data(), in, e);
  if (kv.width != e) kv.reset(e, t + 1);
  kv.keep(t);
  kv.append(r.k.data(), r.v.data());
  r.scores.resize(static_cast<size_t>((t + lanes) / lanes * lanes));
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  for (int64_t h = 0; h < s.heads; ++h)
    attend_cached(r.q.data() + h * d, kv, h, d, scale, r.merged.data() + h * d, r.scores.data());
  linear_row_forward(r.merged.data(), w.wo, w.bo, y, e, e);
}

void self_attention_rows_forward(const float* x, const rows_linear& qkv, const rows_linear& out, float* y,
                                 std::span<self_attention_kv* const> kv, int64_t t, const self_attention_shape& s,
                                 self_attention_row_scratch& r) {
  const auto rows = static_cast<int64_t>(kv.size());
  const int64_t e = s.width, d = s.width / s.heads;
  r.q.resize(static_cast<size_t>(rows * 3 * e));  // each row's q | k | v
  r.merged.resize(static_cast<size_t>(rows * e));
  r.scores.resize(static_cast<size_t>((t + lanes) / lanes * lanes));
  qkv.apply(x, rows, r.q.data());
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  for (int64_t row = 0; row < rows; ++row) {
    self_attention_kv& c = *kv[static_cast<size_t>(row)];
    const float* q = r.q.data() + row * 3 * e;
    if (c.width != e) c.reset(e, t + 1);
    c.keep(t);
    c.append(q + e, q + 2 * e);  // the new key and value join the cache as position t
    for (int64_t h = 0; h < s.heads; ++h)
      attend_cached(q + h * d, c, h, d, scale, r.merged.data() + row * e + h * d, r.scores.data());
  }
  out.apply(r.merged.data(), rows, y);
}

}  // namespace attn::nn
