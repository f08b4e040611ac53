// The attention core of the trainable layer: float straight into attn's fused sdpa kernels
// (the problem described from raw buffers, no tensors, no copies), double through the textbook
// formula (the specification).
#include "nn/attention_core.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "attn/scale.hpp"
#include "attn/sdpa_backward.hpp"
#include "attn/tensor.hpp"
#include "kernels/flash_backward_problem.hpp"
#include "kernels/flash_problem.hpp"
#include "kernels/isa.hpp"
#include "nn/serial_when_small.hpp"

namespace attn::nn {

namespace {

using kernels::isa;

bool key_allowed(const attention_mask_spec& mask, int64_t batch, int64_t query, int64_t key) {
  if (mask.causal && key > query) return false;
  return mask.lengths.empty() || key < mask.lengths[static_cast<size_t>(batch)];
}

// Key padding as the kernels take it: an additive per-key mask, 0 for real keys and −inf for
// padding (the kernels skip a tile whose keys are all −inf and add the rest, so this costs them
// nothing). Built once per forward and kept for the backward.
void fill_key_bias(const attention_mask_spec& mask, const attention_core_shape& s,
                   std::vector<float>& bias) {
  if (mask.lengths.empty()) {
    bias.clear();
    return;
  }
  bias.resize(static_cast<size_t>(s.batch * s.keys));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t j = 0; j < s.keys; ++j)
      bias[static_cast<size_t>(b * s.keys + j)] =
          j < mask.lengths[static_cast<size_t>(b)] ? 0.0f : -std::numeric_limits<float>::infinity();
}

// One call as the fused kernels see it: q [B,H,L,D], k, v [B,H,S,D] contiguous; the key bias
// read as a [B,1,1,S] mask (a dimension of size 1 has stride 0, as attn::sdpa describes it);
// scale 1/√D computed as attn::sdpa computes it, so the bits are sdpa's.
kernels::flash_problem describe(const float* q, const float* k, const float* v,
                                const attention_core_shape& s, const attention_mask_spec& mask,
                                const std::vector<float>& key_bias) {
  kernels::flash_problem p;
  p.B = s.batch, p.H = p.Hkv = s.heads, p.L = s.queries, p.S = s.keys, p.D = p.Dv = s.head_dim;
  p.q = q, p.k = k, p.v = v;
  const int64_t qstrides[3] = {s.heads * s.queries * s.head_dim, s.queries * s.head_dim,
                               s.head_dim};
  const int64_t kstrides[3] = {s.heads * s.keys * s.head_dim, s.keys * s.head_dim, s.head_dim};
  std::copy_n(qstrides, 3, p.qs);
  std::copy_n(kstrides, 3, p.ks);
  std::copy_n(kstrides, 3, p.vs);
  if (!mask.lengths.empty()) {
    p.mask = key_bias.data();
    p.ms[0] = s.batch != 1 ? s.keys : 0;
    p.ms[3] = s.keys != 1 ? 1 : 0;
  }
  p.causal = mask.causal;
  p.scale = static_cast<float>(scale_spec{}.resolve(s.head_dim));
  return p;
}

// The float64 reference kernel, for a CPU without AVX2 (or ATTN_ISA=reference): it reads tensors,
// so the buffers are viewed as such there, and only there.
bool reference_kernel() { return kernels::selected_isa() == isa::reference; }

shape_t query_shape(const attention_core_shape& s) {
  return {s.batch, s.heads, s.queries, s.head_dim};
}
shape_t key_shape(const attention_core_shape& s) { return {s.batch, s.heads, s.keys, s.head_dim}; }

sdpa_options reference_options(const attention_core_shape& s, const attention_mask_spec& mask,
                               const std::vector<float>& key_bias, tensor& bias_view) {
  sdpa_options options;
  options.causal = mask.causal;
  if (!mask.lengths.empty()) {
    bias_view = tensor::view(key_bias.data(), {s.batch, 1, 1, s.keys});
    options.attn_mask = &bias_view;
  }
  return options;
}

// Multiply-adds of one pass, for serial_when_small.
int64_t work(const attention_core_shape& s) {
  return s.batch * s.heads * s.queries * s.keys * s.head_dim;
}

// Scores of query row i of one (batch, head): s_j = scale·q_i·k_j, −inf for hidden keys.
void double_scores(const double* qi, const double* k, std::vector<double>& scores,
                   const attention_core_shape& s, double scale, const attention_mask_spec& mask,
                   int64_t batch, int64_t i) {
  for (int64_t j = 0; j < s.keys; ++j) {
    if (!key_allowed(mask, batch, i, j)) {
      scores[static_cast<size_t>(j)] = -std::numeric_limits<double>::infinity();
      continue;
    }
    double dot = 0;
    for (int64_t c = 0; c < s.head_dim; ++c) dot += qi[c] * k[j * s.head_dim + c];
    scores[static_cast<size_t>(j)] = dot * scale;
  }
}

}  // namespace

template <>
void attention_core_forward<float>(const float* q, const float* k, const float* v, float* o,
                                   attention_core_cache<float>& cache,
                                   const attention_core_shape& s, const attention_mask_spec& mask) {
  const serial_when_small serial(work(s));
  fill_key_bias(mask, s, cache.key_bias);
  cache.lse.resize(static_cast<size_t>(s.batch * s.heads * s.queries));
  if (reference_kernel()) {
    tensor bias_view, lse;
    const tensor out = ref::sdpa_forward(
        tensor::view(q, query_shape(s)), tensor::view(k, key_shape(s)),
        tensor::view(v, key_shape(s)), reference_options(s, mask, cache.key_bias, bias_view), lse);
    std::copy(out.values().begin(), out.values().end(), o);
    std::copy(lse.values().begin(), lse.values().end(), cache.lse.begin());
    return;
  }
  kernels::flash_problem p = describe(q, k, v, s, mask, cache.key_bias);
  p.out = o;  // the kernel writes every element of out and lse
  p.lse = cache.lse.data();
#if defined(__x86_64__) || defined(__i386__)
  if (kernels::selected_isa() == isa::avx512)
    kernels::flash_forward_avx512(p);
  else
    kernels::flash_forward_avx2(p);
#endif
}

template <>
void attention_core_backward<float>(const float* q, const float* k, const float* v, const float* o,
                                    const attention_core_cache<float>& cache, const float* d_o,
                                    float* dq, float* dk, float* dv, const attention_core_shape& s,
                                    const attention_mask_spec& mask) {
  const serial_when_small serial(work(s));
  if (reference_kernel()) {
    tensor bias_view;
    const sdpa_gradients g =
        ref::sdpa_backward(tensor::view(q, query_shape(s)), tensor::view(k, key_shape(s)),
                           tensor::view(v, key_shape(s)), tensor::view(d_o, query_shape(s)),
                           reference_options(s, mask, cache.key_bias, bias_view));
    for (auto [from, to] : {std::pair{&g.dq, dq}, std::pair{&g.dk, dk}, std::pair{&g.dv, dv}}) {
      const tensor c = from->contiguous();
      std::copy(c.values().begin(), c.values().end(), to);
    }
    return;
  }
  kernels::flash_backward_problem p;
  p.f = describe(q, k, v, s, mask, cache.key_bias);
  p.o = o, p.grad_o = d_o, p.lse = cache.lse.data();
  std::copy_n(p.f.qs, 3, p.os);
  std::copy_n(p.f.qs, 3, p.gs);
  p.dq = dq, p.dk = dk, p.dv = dv;  // each element written once by the kernel
#if defined(__x86_64__) || defined(__i386__)
  if (kernels::selected_isa() == isa::avx512)
    kernels::flash_backward_avx512(p);
  else
    kernels::flash_backward_avx2(p);
#endif
}

template <>
void attention_core_forward<double>(const double* q, const double* k, const double* v, double* o,
                                    attention_core_cache<double>& cache,
                                    const attention_core_shape& s,
                                    const attention_mask_spec& mask) {
  const int64_t L = s.queries, S = s.keys, D = s.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  cache.lse.assign(static_cast<size_t>(s.batch * s.heads * L), 0.0);
  std::vector<double> p(static_cast<size_t>(S));
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    const int64_t qbase = bh * L * D, kbase = bh * S * D, batch = bh / s.heads;
    for (int64_t i = 0; i < L; ++i) {
      double_scores(q + qbase + i * D, k + kbase, p, s, scale, mask, batch, i);
      double* oi = o + qbase + i * D;
      std::fill(oi, oi + D, 0.0);
      const double top =
          S == 0 ? -std::numeric_limits<double>::infinity() : *std::max_element(p.begin(), p.end());
      double& lse = cache.lse[static_cast<size_t>(bh * L + i)];
      if (std::isinf(top)) {  // every key hidden: output 0, as attn::sdpa gives
        lse = top;
        continue;
      }
      double sum = 0;
      for (double& x : p) sum += (x = std::exp(x - top));
      for (int64_t j = 0; j < S; ++j)
        for (int64_t c = 0; c < D; ++c)
          oi[c] += p[static_cast<size_t>(j)] / sum * v[kbase + j * D + c];
      lse = top + std::log(sum);
    }
  }
}

template <>
void attention_core_backward<double>(const double* q, const double* k, const double* v,
                                     const double* o, const attention_core_cache<double>& cache,
                                     const double* d_o, double* dq, double* dk, double* dv,
                                     const attention_core_shape& s,
                                     const attention_mask_spec& mask) {
  const int64_t L = s.queries, S = s.keys, D = s.head_dim, BH = s.batch * s.heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::fill(dq, dq + BH * L * D, 0.0);
  std::fill(dk, dk + BH * S * D, 0.0);
  std::fill(dv, dv + BH * S * D, 0.0);
  std::vector<double> p(static_cast<size_t>(S));
  for (int64_t bh = 0; bh < BH; ++bh) {
    const int64_t qbase = bh * L * D, kbase = bh * S * D, batch = bh / s.heads;
    for (int64_t i = 0; i < L; ++i) {
      const double row_lse = cache.lse[static_cast<size_t>(bh * L + i)];
      if (std::isinf(row_lse)) continue;  // a fully hidden row has no gradient
      double_scores(q + qbase + i * D, k + kbase, p, s, scale, mask, batch, i);
      for (double& x : p) x = std::exp(x - row_lse);  // P_ij, recomputed from the lse
      const double* doi = d_o + qbase + i * D;
      // Σ_j P_ij·dP_ij = do_i·o_i, since o_i = Σ_j P_ij v_j
      double row_dot = 0;
      for (int64_t c = 0; c < D; ++c) row_dot += doi[c] * o[qbase + i * D + c];
      for (int64_t j = 0; j < S; ++j) {
        const double pij = p[static_cast<size_t>(j)];
        if (pij == 0.0) continue;
        double dp = 0;  // o_i = Σ_j P_ij v_j → dP_ij = do_i·v_j, dv_j += P_ij do_i
        for (int64_t c = 0; c < D; ++c) {
          dp += doi[c] * v[kbase + j * D + c];
          dv[kbase + j * D + c] += pij * doi[c];
        }
        const double ds = pij * (dp - row_dot) * scale;  // softmax, then s = scale·q·k
        for (int64_t c = 0; c < D; ++c) {
          dq[qbase + i * D + c] += ds * k[kbase + j * D + c];
          dk[kbase + j * D + c] += ds * q[qbase + i * D + c];
        }
      }
    }
  }
}

}  // namespace attn::nn
