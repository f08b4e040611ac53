// sdpa_problem.hpp: attn::tensor → flash_problem.
#include "kernels/sdpa_problem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "attn/error.hpp"

namespace attn::kernels {

namespace {

float largest_magnitude(const tensor& t) {
  float m = 0;
  for (float x : t.contiguous().values()) m = std::max(m, std::abs(x));
  return m;
}

// The fused kernels multiply Q by scale·log₂e in float32 before the products, so a scale whose
// scores pass FLT_MAX turns a row into inf − inf = NaN where the float64 reference stays
// finite. Scales past 1 are rare (the default is 1/√D), so only they pay for the bound
// |scale|·log₂e·max|q|·max|k|·D, checked against float32's range (a usage error instead of
// NaN with success).
void check_scores_fit_float32(const tensor& q, const tensor& k, double scale) {
  if (!std::isfinite(scale)) throw_usage(fmt::format("scale {} is not a finite number", scale));
  if (std::abs(scale) <= 1) return;
  const double bound = std::abs(scale) * 1.4426950408889634 * largest_magnitude(q) *
                       largest_magnitude(k) * static_cast<double>(q.dim(3));
  if (bound >= static_cast<double>(FLT_MAX))
    throw_usage(fmt::format("scale {} lets the scores overflow float32 (|scale·q·k| up to {:.3g}); "
                            "use a smaller scale, or the float64 reference kernel",
                            scale, bound / 1.4426950408889634));
}

}  // namespace

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
  const double scale = options.scale.resolve(p.D);
  check_scores_fit_float32(qc, kc, scale);
  p.scale = static_cast<float>(scale);
  return p;
}

}  // namespace attn::kernels
