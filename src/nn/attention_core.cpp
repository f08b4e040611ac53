// The attention core of the trainable layer: float through attn::sdpa_forward/sdpa_backward,
// double through the textbook formula (the gradient checks' specification).
#include "nn/attention_core.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/sdpa_backward.hpp"
#include "nn/serial_when_small.hpp"

namespace attn::nn {

namespace {

bool key_allowed(const attention_mask_spec& mask, int64_t batch, int64_t query, int64_t key) {
  if (mask.causal && key > query) return false;
  return mask.lengths.empty() || key < mask.lengths[static_cast<size_t>(batch)];
}

// An additive key-padding mask [B, 1, 1, S] (0 for real keys, -inf for padding) for sdpa.
tensor padding_mask(const attention_mask_spec& mask, int64_t b, int64_t s) {
  tensor m({b, 1, 1, s});
  float* p = m.data();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < s; ++j)
      p[i * s + j] = j < mask.lengths[static_cast<size_t>(i)]
                         ? 0.0f
                         : -std::numeric_limits<float>::infinity();
  return m;
}

// Runs f with the sdpa options for this mask (the padding mask lives only during the call),
// on one thread when the problem is small (see serial_when_small.hpp).
template <class F>
void with_options(const attention_mask_spec& mask, int64_t b, int64_t h, int64_t s, int64_t d,
                  F f) {
  const serial_when_small serial(b * h * s * s * d);
  sdpa_options options;
  options.causal = mask.causal;
  tensor padding;
  if (!mask.lengths.empty()) {
    padding = padding_mask(mask, b, s);
    options.attn_mask = &padding;
  }
  f(options);
}

// Scores of query row i of one (batch, head): s_j = scale·q_i·k_j, −inf for hidden keys.
void double_scores(const double* qi, const double* k, std::vector<double>& s, int64_t l, int64_t d,
                   double scale, const attention_mask_spec& mask, int64_t batch, int64_t i) {
  for (int64_t j = 0; j < l; ++j) {
    if (!key_allowed(mask, batch, i, j)) {
      s[static_cast<size_t>(j)] = -std::numeric_limits<double>::infinity();
      continue;
    }
    double dot = 0;
    for (int64_t c = 0; c < d; ++c) dot += qi[c] * k[j * d + c];
    s[static_cast<size_t>(j)] = dot * scale;
  }
}

}  // namespace

template <>
void attention_core_forward<float>(const float* q, const float* k, const float* v, float* o,
                                   std::vector<float>& lse, int64_t b, int64_t h, int64_t l,
                                   int64_t d, const attention_mask_spec& mask) {
  const shape_t shape{b, h, l, d};
  with_options(mask, b, h, l, d, [&](const sdpa_options& options) {
    tensor lse_t;
    tensor out = sdpa_forward(tensor::view(q, shape), tensor::view(k, shape),
                              tensor::view(v, shape), options, lse_t);
    std::copy(out.values().begin(), out.values().end(), o);
    lse.assign(lse_t.values().begin(), lse_t.values().end());
  });
}

template <>
void attention_core_backward<float>(const float* q, const float* k, const float* v,
                                    const float* o, const std::vector<float>& lse,
                                    const float* d_o, float* dq, float* dk, float* dv, int64_t b,
                                    int64_t h, int64_t l, int64_t d,
                                    const attention_mask_spec& mask) {
  const shape_t shape{b, h, l, d};
  with_options(mask, b, h, l, d, [&](const sdpa_options& options) {
    sdpa_gradients g = sdpa_backward(tensor::view(q, shape), tensor::view(k, shape),
                                     tensor::view(v, shape), tensor::view(o, shape),
                                     tensor::view(lse.data(), {b, h, l}),
                                     tensor::view(d_o, shape), options);
    const tensor dqc = g.dq.contiguous(), dkc = g.dk.contiguous(), dvc = g.dv.contiguous();
    std::copy(dqc.values().begin(), dqc.values().end(), dq);
    std::copy(dkc.values().begin(), dkc.values().end(), dk);
    std::copy(dvc.values().begin(), dvc.values().end(), dv);
  });
}

template <>
void attention_core_forward<double>(const double* q, const double* k, const double* v, double* o,
                                    std::vector<double>& lse, int64_t b, int64_t h, int64_t l,
                                    int64_t d, const attention_mask_spec& mask) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  lse.assign(static_cast<size_t>(b * h * l), 0.0);
  std::vector<double> s(static_cast<size_t>(l));
  for (int64_t bh = 0; bh < b * h; ++bh) {
    const int64_t base = bh * l * d, batch = bh / h;
    for (int64_t i = 0; i < l; ++i) {
      double_scores(q + base + i * d, k + base, s, l, d, scale, mask, batch, i);
      const double top = *std::max_element(s.begin(), s.end());
      double* oi = o + base + i * d;
      std::fill(oi, oi + d, 0.0);
      if (std::isinf(top)) {  // every key hidden: output 0, as attn::sdpa gives
        lse[static_cast<size_t>(bh * l + i)] = top;
        continue;
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - top));
      for (int64_t j = 0; j < l; ++j)
        for (int64_t c = 0; c < d; ++c) oi[c] += s[static_cast<size_t>(j)] / sum * v[base + j * d + c];
      lse[static_cast<size_t>(bh * l + i)] = top + std::log(sum);
    }
  }
}

template <>
void attention_core_backward<double>(const double* q, const double* k, const double* v,
                                     const double* o, const std::vector<double>& lse,
                                     const double* d_o, double* dq, double* dk, double* dv,
                                     int64_t b, int64_t h, int64_t l, int64_t d,
                                     const attention_mask_spec& mask) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const int64_t n = b * h * l * d;
  std::fill(dq, dq + n, 0.0);
  std::fill(dk, dk + n, 0.0);
  std::fill(dv, dv + n, 0.0);
  std::vector<double> p(static_cast<size_t>(l));
  for (int64_t bh = 0; bh < b * h; ++bh) {
    const int64_t base = bh * l * d, batch = bh / h;
    for (int64_t i = 0; i < l; ++i) {
      const double row_lse = lse[static_cast<size_t>(bh * l + i)];
      if (std::isinf(row_lse)) continue;  // a fully hidden row has no gradient
      double_scores(q + base + i * d, k + base, p, l, d, scale, mask, batch, i);
      for (double& x : p) x = std::exp(x - row_lse);  // P_ij, recomputed from the lse
      const double* doi = d_o + base + i * d;
      // Σ_j P_ij·dP_ij = do_i·o_i, since o_i = Σ_j P_ij v_j
      double row_dot = 0;
      for (int64_t c = 0; c < d; ++c) row_dot += doi[c] * o[base + i * d + c];
      for (int64_t j = 0; j < l; ++j) {
        const double pij = p[static_cast<size_t>(j)];
        if (pij == 0.0) continue;
        double dp = 0;  // o_i = Σ_j P_ij v_j → dP_ij = do_i·v_j, dv_j += P_ij do_i
        for (int64_t c = 0; c < d; ++c) {
          dp += doi[c] * v[base + j * d + c];
          dv[base + j * d + c] += pij * doi[c];
        }
        const double ds = pij * (dp - row_dot) * scale;  // softmax, then s = scale·q·k
        for (int64_t c = 0; c < d; ++c) {
          dq[base + i * d + c] += ds * k[base + j * d + c];
          dk[base + j * d + c] += ds * q[base + i * d + c];
        }
      }
    }
  }
}

}  // namespace attn::nn
