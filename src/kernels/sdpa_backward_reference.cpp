// The reference sdpa forward-with-lse and backward: plain loops, double accumulation, one
// rounding to float at the end. The specification the fused backward is tested against.
//
// Forward (per batch b, head h, query i; hk = h / (H / Hkv)):
//   s_ij = scale · q_i·k_j + mask_ij        (−inf where causally hidden)
//   lse_i = log Σ_j exp(s_ij),  p_ij = exp(s_ij − lse_i),  o_i = Σ_j p_ij v_j
// Backward, each line reversing the forward line it names:
//   dv_j  += Σ_i p_ij do_i                   (o_i = Σ_j p_ij v_j)
//   dp_ij  = do_i · v_j                      (o_i = Σ_j p_ij v_j)
//   ds_ij  = p_ij (dp_ij − Σ_j' p_ij' dp_ij') (softmax; the sum equals do_i · o_i)
//   dq_i  += scale Σ_j ds_ij k_j             (s_ij = scale · q_i·k_j)
//   dk_j  += scale Σ_i ds_ij q_i             (s_ij = scale · q_i·k_j)
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attn/error.hpp"
#include "attn/mask.hpp"
#include "attn/sdpa_backward.hpp"
#include "kernels/sdpa_backward_checks.hpp"

namespace attn {
namespace ref {

namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();

// The scores of one query row and their softmax, in double; false for a fully masked row (then
// p is all 0 and lse is −inf).
struct row_softmax {
  const tensor &q, &k;
  const tensor* mask;
  bool causal;
  double scale;
  int64_t group;
  int64_t ms[4] = {0, 0, 0, 0};

  row_softmax(const tensor& q_, const tensor& k_, const sdpa_options& o)
      : q(q_), k(k_), mask(o.attn_mask), causal(o.causal), scale(o.scale.resolve(q_.dim(3))),
        group(k_.dim(1) == 0 ? 1 : q_.dim(1) / k_.dim(1)) {
    if (mask != nullptr)
      for (int i = 1; i <= mask->rank(); ++i)
        if (mask->dim(-i) != 1) ms[4 - i] = mask->strides()[static_cast<size_t>(mask->rank() - i)];
  }

  // p [S] ← softmax of row i of (b, h); returns lse_i.
  double operator()(int64_t b, int64_t h, int64_t i, std::vector<double>& p) const {
    const int64_t S = k.dim(2), D = q.dim(3), hk = h / group;
    const shape_t &qs = q.strides(), &ks = k.strides();
    const float* qi = q.data() + b * qs[0] + h * qs[1] + i * qs[2];
    const float* kh = k.data() + b * ks[0] + hk * ks[1];
    double row_max = neg_inf;
    for (int64_t j = 0; j < S; ++j) {
      double s = neg_inf;
      if (!causal || causal_allows(i, j)) {
        double dot = 0.0;
        for (int64_t d = 0; d < D; ++d)
          dot += static_cast<double>(qi[d * qs[3]]) * static_cast<double>(kh[j * ks[2] + d * ks[3]]);
        s = dot * scale;
        if (mask != nullptr) {
          // The lowest float hides a key as -inf does, as in ref::sdpa and the fused kernels.
          const float m = mask->data()[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]];
          s = m <= -std::numeric_limits<float>::max() ? neg_inf : s + static_cast<double>(m);
        }
      }
      p[static_cast<size_t>(j)] = s;
      if (std::isnan(s) || s > row_max) row_max = s;
    }
    if (row_max == neg_inf) {
      std::fill(p.begin(), p.end(), 0.0);
      return neg_inf;
    }
    double sum = 0.0;
    for (double& s : p) sum += (s = std::exp(s - row_max));
    for (double& s : p) s /= sum;
    return row_max + std::log(sum);
  }
};

sdpa_options as_float32(sdpa_options options) {
  options.dtype = sdpa_dtype::float32;
  return options;
}

}  // namespace

// q [B,H,L,D], k [B,Hkv,S,D], v [B,Hkv,S,Dv] → o [B,H,L,Dv], lse [B,H,L]
tensor sdpa_forward(const tensor& q, const tensor& k, const tensor& v, const sdpa_options& options,
                    tensor& lse) {
  if (options.dtype == sdpa_dtype::bf16) {  // exact arithmetic on the rounded operands
    check_sdpa_shapes(q, k, v, options.attn_mask);
    return ref::sdpa_forward(round_to_bf16(q), round_to_bf16(k), round_to_bf16(v), as_float32(options), lse);
  }
  tensor out = ref::sdpa(q, k, v, options);  // checks the shapes
  const int64_t B = q.dim(0), H = q.dim(1), L = q.dim(2), S = k.dim(2);
  const row_softmax softmax(q, k, options);
  tensor result({B, H, L});
  std::vector<double> p(static_cast<size_t>(S));
  float* ld = result.data();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) ld[(b * H + h) * L + i] = static_cast<float>(softmax(b, h, i, p));
  lse = result;
  return out;
}

// q [B,H,L,D], k [B,Hkv,S,D], v [B,Hkv,S,Dv], grad_o [B,H,L,Dv]
//   → dq [B,H,L,D], dk [B,Hkv,S,D], dv [B,Hkv,S,Dv]
sdpa_gradients sdpa_backward(const tensor& q, const tensor& k, const tensor& v,
                             const tensor& grad_o, const sdpa_options& options) {
  check_sdpa_shapes(q, k, v, options.attn_mask);
  if (options.dtype == sdpa_dtype::bf16)  // exact arithmetic on the rounded operands (grad_o too)
    return ref::sdpa_backward(round_to_bf16(q), round_to_bf16(k), round_to_bf16(v), round_to_bf16(grad_o),
                              as_float32(options));
  const int64_t B = q.dim(0), H = q.dim(1), L = q.dim(2), D = q.dim(3);
  const int64_t Hkv = k.dim(1), S = k.dim(2), Dv = v.dim(3);
  kernels::check_row_tensor(grad_o, {B, H, L, Dv}, "grad_o");
  const row_softmax softmax(q, k, options);
  const double scale = softmax.scale;
  const int64_t group = softmax.group;

  // dk and dv accumulate over every query (and every query head of a group) before rounding.
  std::vector<double> dq_acc(static_cast<size_t>(D)), dk_acc(static_cast<size_t>(B * Hkv * S * D)),
      dv_acc(static_cast<size_t>(B * Hkv * S * Dv));
  std::vector<double> p(static_cast<size_t>(S)), dp(static_cast<size_t>(S));
  sdpa_gradients g{tensor({B, H, L, D}), tensor({B, Hkv, S, D}), tensor({B, Hkv, S, Dv})};
  const shape_t &qs = q.strides(), &ks = k.strides(), &vs = v.strides(), &gs = grad_o.strides();
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h / group;
      const float* kh = k.data() + b * ks[0] + hk * ks[1];
      const float* vh = v.data() + b * vs[0] + hk * vs[1];
      double* dkh = dk_acc.data() + (b * Hkv + hk) * S * D;
      double* dvh = dv_acc.data() + (b * Hkv + hk) * S * Dv;
      for (int64_t i = 0; i < L; ++i) {
        const float* qi = q.data() + b * qs[0] + h * qs[1] + i * qs[2];
        const float* doi = grad_o.data() + b * gs[0] + h * gs[1] + i * gs[2];
        float* dqi = g.dq.data() + ((b * H + h) * L + i) * D;
        // A fully masked row: p = 0 everywhere, so every term below is 0.
        if (softmax(b, h, i, p) == neg_inf) {
          std::fill(dqi, dqi + D, 0.0f);
          continue;
        }
        double row_dot = 0.0;  // Σ_j p_ij dp_ij
        for (int64_t j = 0; j < S; ++j) {
          double x = 0.0;
          for (int64_t e = 0; e < Dv; ++e)
            x += static_cast<double>(doi[e * gs[3]]) * static_cast<double>(vh[j * vs[2] + e * vs[3]]);
          dp[static_cast<size_t>(j)] = x;
          row_dot += p[static_cast<size_t>(j)] * x;
        }
        std::fill(dq_acc.begin(), dq_acc.end(), 0.0);
        for (int64_t j = 0; j < S; ++j) {
          const double pj = p[static_cast<size_t>(j)];
          if (pj == 0.0) continue;  // masked or causally hidden: nothing flows back
          for (int64_t e = 0; e < Dv; ++e) dvh[j * Dv + e] += pj * static_cast<double>(doi[e * gs[3]]);
          const double ds = pj * (dp[static_cast<size_t>(j)] - row_dot) * scale;
          for (int64_t d = 0; d < D; ++d) {
            dq_acc[static_cast<size_t>(d)] += ds * static_cast<double>(kh[j * ks[2] + d * ks[3]]);
            dkh[j * D + d] += ds * static_cast<double>(qi[d * qs[3]]);
          }
        }
        for (int64_t d = 0; d < D; ++d) dqi[d] = static_cast<float>(dq_acc[static_cast<size_t>(d)]);
      }
    }
  }
  std::transform(dk_acc.begin(), dk_acc.end(), g.dk.data(), [](double x) { return static_cast<float>(x); });
  std::transform(dv_acc.begin(), dv_acc.end(), g.dv.data(), [](double x) { return static_cast<float>(x); });
  return g;
}

}  // namespace ref
}  // namespace attn
