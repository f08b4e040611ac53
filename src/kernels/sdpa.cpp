// attn::sdpa, the entry point the rest of the library calls: checks the shapes, then runs the
// fused kernel for this CPU's instruction set (or the reference, when asked or when the CPU has
// no AVX2).
#include "attn/sdpa.hpp"

#include <string>

#include "kernels/flash_problem.hpp"
#include "kernels/isa.hpp"
#include "kernels/sdpa_problem.hpp"

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

  const tensor qc = kernels::rows_contiguous(q), kc = kernels::rows_contiguous(k),
               vc = kernels::rows_contiguous(v);
  kernels::flash_problem p = kernels::describe_problem(qc, kc, vc, options);
  // The kernel writes every element of both (a row that sees no key as zeros).
  tensor out = tensor::uninitialized({p.B, p.H, p.L, p.Dv});
  tensor weights;
  if (weights_out != nullptr) weights = tensor::uninitialized({p.B, p.H, p.L, p.S});
  p.out = out.data();
  p.weights = weights_out != nullptr ? weights.data() : nullptr;

#if defined(__x86_64__) || defined(__i386__)
  if (options.dtype == sdpa_dtype::bf16) kernels::flash_forward_bf16(p);
  else if (chosen == isa::avx512) kernels::flash_forward_avx512(p);
  else kernels::flash_forward_avx2(p);
#endif
  if (weights_out != nullptr) *weights_out = weights;
  return out;
}

}  // namespace attn
