// sdpa_problem.hpp: attn::tensor → flash_problem.
#include "kernels/sdpa_problem.hpp"

namespace attn::kernels {

tensor rows_contiguous(const tensor& t) {
  return t.dim(-1) <= 1 || t.strides().back() == 1 ? t : t.contiguous();
}

flash_problem describe_problem(const tensor& qc, const tensor& kc, const tensor& vc,
                                const sdpa_options& options) {
  flash_problem p;
  p.B = qc.dim(0), p.H = qc.dim(1), p.L = qc.dim(2), p.D = qc.dim(3);
  p.Hkv = kc.dim(1), p.S = kc.dim(2), p.Dv = vc.dim(3);
  p.q = qc.data(), p.k = kc.data(), p.v = vc.data();
  for (int i = 0; i < 3; ++i) {
    p.qs[i] = qc.strides()[static_cast<size_t>(i)];
    p.ks[i] = kc.strides()[static_cast<size_t>(i)];
    p.vs[i] = vc.strides()[static_cast<size_t>(i)];
  }
  if (const tensor* m = options.attn_mask) {
    p.mask = m->data();
    // A broadcast dimension reads with stride 0, so one index formula serves every mask shape.
    for (int i = 1; i <= m->rank(); ++i)
      if (m->dim(-i) != 1) p.ms[4 - i] = m->strides()[static_cast<size_t>(m->rank() - i)];
  }
  p.causal = options.causal;
  p.scale = static_cast<float>(options.scale.resolve(p.D));
  return p;
}

}  // namespace attn::kernels
