// attn::sdpa, the entry point the rest of the library calls: checks the shapes, then runs the
// fused kernel for this CPU's instruction set (or the reference, when asked or when the CPU has
// no AVX2).
#include "attn/sdpa.hpp"

#include <string>

#include "kernels/flash_problem.hpp"
#include "kernels/isa.hpp"

namespace attn {

using kernels::isa;
using kernels::selected_isa;

std::string fused_kernel_isa() { return kernels::isa_name(selected_isa()); }

std::string bf16_kernel_path() { return kernels::bf16_path_name(kernels::selected_bf16_path()); }

// q [B,H,L,D], k [B,Hkv,S,D], v [B,Hkv,S,Dv] → o [B,H,L,Dv]
tensor sdpa(const tensor& q, const tensor& k, const tensor& v, const sdpa_options& options,
            tensor* weights_out) {
  const isa chosen = selected_isa();
  if (options.kernel == sdpa_kernel::reference || chosen == isa::reference)
    return ref::sdpa(q, k, v, options, weights_out);
  check_sdpa_shapes(q, k, v, options.attn_mask);

  // The kernels read rows of Q, K and V in place; only a non-unit last stride needs a copy.
  const auto rows_contiguous = [](const tensor& t) {
    return t.dim(3) <= 1 || t.strides()[3] == 1 ? t : t.contiguous();
  };
  const tensor qc = rows_contiguous(q), kc = rows_contiguous(k), vc = rows_contiguous(v);
  kernels::flash_problem p;
  p.B = q.dim(0), p.H = q.dim(1), p.L = q.dim(2), p.D = q.dim(3);
  p.Hkv = k.dim(1), p.S = k.dim(2), p.Dv = v.dim(3);
  p.q = qc.data(), p.k = kc.data(), p.v = vc.data();
  for (int i = 0; i < 3; ++i) {
    p.qs[i] = qc.strides()[i];
    p.ks[i] = kc.strides()[i];
    p.vs[i] = vc.strides()[i];
  }
  tensor out({p.B, p.H, p.L, p.Dv});
  tensor weights;
  if (weights_out != nullptr) weights = tensor({p.B, p.H, p.L, p.S});
  p.out = out.data();
  p.weights = weights_out != nullptr ? weights.data() : nullptr;
  if (const tensor* m = options.attn_mask) {
    p.mask = m->data();
    // A broadcast dimension reads with stride 0, so one index formula serves every mask shape.
    for (int i = 1; i <= m->rank(); ++i)
      if (m->dim(-i) != 1) p.ms[4 - i] = m->strides()[static_cast<size_t>(m->rank() - i)];
  }
  p.causal = options.causal;
  p.scale = static_cast<float>(options.scale.resolve(p.D));

#if defined(__x86_64__) || defined(__i386__)
  if (options.dtype == sdpa_dtype::bf16) kernels::flash_forward_bf16(p);
  else if (chosen == isa::avx512) kernels::flash_forward_avx512(p);
  else kernels::flash_forward_avx2(p);
#endif
  if (weights_out != nullptr) *weights_out = weights;
  return out;
}

}  // namespace attn
