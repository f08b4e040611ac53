// attn::sdpa_forward and attn::sdpa_backward, the training entry points: check the shapes, then
// run the fused kernels for this CPU's instruction set, or the float64 reference when asked
// (or when the CPU has no AVX2).
#include "attn/sdpa_backward.hpp"

#include "kernels/flash_backward_problem.hpp"
#include "kernels/isa.hpp"
#include "kernels/sdpa_backward_checks.hpp"
#include "kernels/sdpa_problem.hpp"

namespace attn {

namespace {

using kernels::describe_problem;
using kernels::isa;
using kernels::rows_contiguous;

bool use_reference(const sdpa_options& options) {
  if (options.kernel == sdpa_kernel::reference) return true;
  if (options.dtype == sdpa_dtype::bf16) return kernels::selected_bf16_path() == kernels::bf16_path::reference;
  return kernels::selected_isa() == isa::reference;
}

}  // namespace

// q [B,H,L,D], k [B,Hkv,S,D], v [B,Hkv,S,Dv] → o [B,H,L,Dv], lse [B,H,L]
tensor sdpa_forward(const tensor& q, const tensor& k, const tensor& v, const sdpa_options& options,
                    tensor& lse) {
  if (use_reference(options)) return ref::sdpa_forward(q, k, v, options, lse);
  check_sdpa_shapes(q, k, v, options.attn_mask);
  const tensor qc = rows_contiguous(q), kc = rows_contiguous(k), vc = rows_contiguous(v);
  kernels::flash_problem p = describe_problem(qc, kc, vc, options);
  // The kernel writes every element of both.
  tensor out = tensor::uninitialized({p.B, p.H, p.L, p.Dv}),
         row_lse = tensor::uninitialized({p.B, p.H, p.L});
  p.out = out.data();
  p.lse = row_lse.data();
#if defined(__x86_64__) || defined(__i386__)
  if (options.dtype == sdpa_dtype::bf16) kernels::flash_forward_bf16(p);
  else if (kernels::selected_isa() == isa::avx512) kernels::flash_forward_avx512(p);
  else kernels::flash_forward_avx2(p);
#endif
  lse = row_lse;
  return out;
}

// → dq [B,H,L,D], dk [B,Hkv,S,D], dv [B,Hkv,S,Dv]
sdpa_gradients sdpa_backward(const tensor& q, const tensor& k, const tensor& v, const tensor& o,
                             const tensor& lse, const tensor& grad_o, const sdpa_options& options) {
  check_sdpa_shapes(q, k, v, options.attn_mask);
  const int64_t B = q.dim(0), H = q.dim(1), L = q.dim(2), D = q.dim(3);
  const int64_t Hkv = k.dim(1), S = k.dim(2), Dv = v.dim(3);
  kernels::check_row_tensor(o, {B, H, L, Dv}, "o");
  kernels::check_row_tensor(lse, {B, H, L}, "lse");
  kernels::check_row_tensor(grad_o, {B, H, L, Dv}, "grad_o");
  if (use_reference(options)) return ref::sdpa_backward(q, k, v, grad_o, options);

  const tensor qc = rows_contiguous(q), kc = rows_contiguous(k), vc = rows_contiguous(v);
  const tensor oc = rows_contiguous(o), gc = rows_contiguous(grad_o), lc = lse.contiguous();
  kernels::flash_backward_problem p;
  p.f = describe_problem(qc, kc, vc, options);
  p.o = oc.data(), p.grad_o = gc.data(), p.lse = lc.data();
  for (int i = 0; i < 3; ++i) {
    p.os[i] = oc.strides()[static_cast<size_t>(i)];
    p.gs[i] = gc.strides()[static_cast<size_t>(i)];
  }
  // The kernel writes every element of the three (each key tile's dK and dV rows once, every
  // row of dQ once), so none is filled first.
  sdpa_gradients g{tensor::uninitialized({B, H, L, D}), tensor::uninitialized({B, Hkv, S, D}),
                   tensor::uninitialized({B, Hkv, S, Dv})};
  p.dq = g.dq.data(), p.dk = g.dk.data(), p.dv = g.dv.data();
#if defined(__x86_64__) || defined(__i386__)
  if (options.dtype == sdpa_dtype::bf16) kernels::flash_backward_bf16(p);
  else if (kernels::selected_isa() == isa::avx512) kernels::flash_backward_avx512(p);
  else kernels::flash_backward_avx2(p);
#endif
  return g;
}

}  // namespace attn
