// Gradients of scaled dot-product attention (training). The forward saves one number per query
// row, the log-sum-exp of its scores; the backward recomputes the weights from it tile by tile,
// so neither direction ever stores the L×S matrix.
//   q [B, H, L, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv], o, grad_o [B, H, L, Dv], lse [B, H, L]
//   → dq [B, H, L, D], dk [B, Hkv, S, D], dv [B, Hkv, S, Dv]
// With grouped-query heads, dk and dv sum over the H / Hkv query heads that share a K/V head.
// The additive attn_mask gets no gradient (it is a constant). A fully masked query row has
// output 0 and gives zero gradients (dq row 0, nothing added to dk or dv).
//
//   attn::tensor lse;
//   attn::tensor o = attn::sdpa_forward(q, k, v, {.causal = true}, lse);
//   attn::sdpa_gradients g = attn::sdpa_backward(q, k, v, o, lse, grad_o, {.causal = true});
#pragma once

#include "attn/sdpa.hpp"
#include "attn/tensor.hpp"

namespace attn {

struct sdpa_gradients {
  tensor dq;  // [B, H, L, D]
  tensor dk;  // [B, Hkv, S, D]
  tensor dv;  // [B, Hkv, S, Dv]
};

// attn::sdpa that also returns lse [B, H, L], the natural log of Σ_j exp(score_ij) where
// score = q·kᵀ·scale + mask (−inf for a row whose every key is masked).
tensor sdpa_forward(const tensor& q, const tensor& k, const tensor& v, const sdpa_options& options,
                    tensor& lse);

// The gradients for a loss whose gradient with respect to the output o is grad_o. o and lse
// must come from sdpa_forward with the same inputs and options. options.kernel chooses the fused
// kernel (default) or the float64 reference (which recomputes everything and ignores o, lse).
// Results are identical bit for bit from run to run and for any number of threads.
// options.dtype = bf16: the five products of the backward (S, dP = dO·Vᵀ, dV = Pᵀ·dO, dK = dSᵀ·Q,
// dQ = dS·K) multiply bf16 operands with float32 accumulation, q, k, v and grad_o rounded on the
// way in, P and dS rounded just before they multiply; the softmax and the gradients stay float32.
// o and lse must then come from sdpa_forward with bf16 too.
sdpa_gradients sdpa_backward(const tensor& q, const tensor& k, const tensor& v, const tensor& o,
                             const tensor& lse, const tensor& grad_o,
                             const sdpa_options& options = {});

namespace ref {
// The specification, double accumulation: the forward with its lse, and the backward from the
// inputs alone (it recomputes the weights, so it needs neither o nor lse).
tensor sdpa_forward(const tensor& q, const tensor& k, const tensor& v, const sdpa_options& options,
                    tensor& lse);
sdpa_gradients sdpa_backward(const tensor& q, const tensor& k, const tensor& v,
                             const tensor& grad_o, const sdpa_options& options = {});
}  // namespace ref

}  // namespace attn
