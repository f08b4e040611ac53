// attn::sdpa_forward and attn::sdpa_backward, the training entry points: check the shapes, then
// run the fused kernels for this CPU's instruction set, or the float64 reference when asked
// (or when the CPU has no AVX2).
#include "attn/sdpa_backward.hpp"

#include "kernels/sdpa_backward_checks.hpp"

namespace attn {

// q [B,H,L,D], k [B,Hkv,S,D], v [B,Hkv,S,Dv] → o [B,H,L,Dv], lse [B,H,L]
tensor sdpa_forward(const tensor& q, const tensor& k, const tensor& v, const sdpa_options& options,
                    tensor& lse) {
  return ref::sdpa_forward(q, k, v, options, lse);
}

// → dq [B,H,L,D], dk [B,Hkv,S,D], dv [B,Hkv,S,Dv]
sdpa_gradients sdpa_backward(const tensor& q, const tensor& k, const tensor& v, const tensor& o,
                             const tensor& lse, const tensor& grad_o, const sdpa_options& options) {
  check_sdpa_shapes(q, k, v, options.attn_mask);
  const int64_t B = q.dim(0), H = q.dim(1), L = q.dim(2), Dv = v.dim(3);
  kernels::check_row_tensor(o, {B, H, L, Dv}, "o");
  kernels::check_row_tensor(lse, {B, H, L}, "lse");
  kernels::check_row_tensor(grad_o, {B, H, L, Dv}, "grad_o");
  return ref::sdpa_backward(q, k, v, grad_o, options);
}

}  // namespace attn
