// The reference scaled dot-product attention: the specification every faster sdpa is tested
// against. Plain loops over the tensors' strides, double accumulation, one rounding to float.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attn/error.hpp"
#include "attn/mask.hpp"
#include "attn/sdpa.hpp"

namespace attn {

void check_sdpa_shapes(const tensor& q, const tensor& k, const tensor& v, const tensor* mask) {
  const auto fail = [](const tensor& t, const char* name, const std::string& problem) {
    throw_usage(fmt::format("{}: {}", t.describe(name), problem));
  };
  if (q.rank() != 4) fail(q, "q", "expected rank 4 [B, H, L, D]");
  if (k.rank() != 4) fail(k, "k", "expected rank 4 [B, Hkv, S, D]");
  if (v.rank() != 4) fail(v, "v", "expected rank 4 [B, Hkv, S, Dv]");
  const int64_t B = q.dim(0), H = q.dim(1), L = q.dim(2), D = q.dim(3);
  const int64_t Hkv = k.dim(1), S = k.dim(2);
  if (k.dim(0) != B) fail(k, "k", fmt::format("batch {} does not match q's {}", k.dim(0), B));
  if (v.dim(0) != B) fail(v, "v", fmt::format("batch {} does not match q's {}", v.dim(0), B));
  if (k.dim(3) != D)
    fail(k, "k", fmt::format("head size {} does not match q's {}", k.dim(3), D));
  if (v.dim(1) != Hkv)
    fail(v, "v", fmt::format("{} heads do not match k's {}", v.dim(1), Hkv));
  if (v.dim(2) != S)
    fail(v, "v", fmt::format("{} keys do not match k's {}", v.dim(2), S));
  // Grouped-query attention needs every key/value head to serve the same number of query heads.
  if (Hkv == 0 ? H != 0 : H % Hkv != 0)
    fail(k, "k", fmt::format("{} key/value heads do not divide q's {} heads", Hkv, H));

  if (mask == nullptr) return;
  const shape_t target = {B, H, L, S};
  bool fits = !mask->empty() && mask->rank() <= 4;
  for (int i = 1; fits && i <= mask->rank(); ++i) {
    const int64_t m = mask->dim(-i), t = target[static_cast<size_t>(4 - i)];
    fits = m == 1 || m == t;
  }
  if (!fits)
    fail(*mask, "attn_mask",
         fmt::format("does not broadcast to [B, H, L, S] = {}", shape_to_string(target)));
}

namespace ref {

// q [B,H,L,D], k [B,Hkv,S,D], v [B,Hkv,S,Dv], attn_mask broadcast to [B,H,L,S] → o [B,H,L,Dv]
tensor sdpa(const tensor& q, const tensor& k, const tensor& v, const sdpa_options& options,
            tensor* weights_out) {
  if (options.dtype == sdpa_dtype::bf16) {  // exact arithmetic on the rounded operands
    sdpa_options exact = options;
    exact.dtype = sdpa_dtype::float32;
    check_sdpa_shapes(q, k, v, options.attn_mask);
    return ref::sdpa(round_to_bf16(q), round_to_bf16(k), round_to_bf16(v), exact, weights_out);
  }
  const tensor* mask = options.attn_mask;
  check_sdpa_shapes(q, k, v, mask);
  const int64_t B = q.dim(0), H = q.dim(1), L = q.dim(2), D = q.dim(3);
  const int64_t Hkv = k.dim(1), S = k.dim(2), Dv = v.dim(3);
  const int64_t group = Hkv == 0 ? 1 : H / Hkv;
  const double scale = options.scale.resolve(D);
  constexpr double neg_inf = -std::numeric_limits<double>::infinity();

  // A broadcast dimension gets stride 0, so one index formula serves every mask shape.
  int64_t ms[4] = {0, 0, 0, 0};
  if (mask != nullptr) {
    for (int i = 1; i <= mask->rank(); ++i)
      if (mask->dim(-i) != 1) ms[4 - i] = mask->strides()[static_cast<size_t>(mask->rank() - i)];
  }

  tensor out({B, H, L, Dv});
  tensor weights;
  if (weights_out != nullptr) weights = tensor({B, H, L, S});
  const shape_t &qs = q.strides(), &ks = k.strides(), &vs = v.strides();
  const float *qd = q.data(), *kd = k.data(), *vd = v.data();
  float* od = out.data();
  float* wd = weights.data();

  std::vector<double> score(static_cast<size_t>(S)), acc(static_cast<size_t>(Dv));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h / group;
      const float* kh = kd + b * ks[0] + hk * ks[1];
      const float* vh = vd + b * vs[0] + hk * vs[1];
      for (int64_t i = 0; i < L; ++i) {
        const float* qi = qd + b * qs[0] + h * qs[1] + i * qs[2];
        double row_max = neg_inf;
        for (int64_t j = 0; j < S; ++j) {
          double s = neg_inf;
          if (!options.causal || causal_allows(i, j)) {
            const float* kj = kh + j * ks[2];
            double dot = 0.0;
            for (int64_t d = 0; d < D; ++d)
              dot += static_cast<double>(qi[d * qs[3]]) * static_cast<double>(kj[d * ks[3]]);
            s = dot * scale;
            if (mask != nullptr) {
              // The lowest float is how masks spell "hidden" where they avoid infinities; it
              // hides the key as -inf does (the fused kernel's base-2 mask overflows it to -inf),
              // so a row hidden that way is all zeros too, not a uniform average.
              const float m = mask->data()[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]];
              s = m <= -std::numeric_limits<float>::max() ? neg_inf : s + static_cast<double>(m);
            }
          }
          score[static_cast<size_t>(j)] = s;
          // A NaN score (from NaN inputs) must reach the output, not be skipped by the max.
          if (std::isnan(s) || s > row_max) row_max = s;
        }

        float* oi = od + ((b * H + h) * L + i) * Dv;
        float* wi = wd == nullptr ? nullptr : wd + ((b * H + h) * L + i) * S;
        // Nothing to attend to: contribute nothing, rather than the NaN of 0/0.
        if (row_max == neg_inf) {
          std::fill(oi, oi + Dv, 0.0f);
          if (wi != nullptr) std::fill(wi, wi + S, 0.0f);
          continue;
        }
        // Subtracting the row maximum keeps exp() ≤ 1, so large scores cannot overflow.
        double sum = 0.0;
        for (double& s : score) {
          s = std::exp(s - row_max);
          sum += s;
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < S; ++j) {
          const double p = score[static_cast<size_t>(j)] / sum;
          if (wi != nullptr) wi[j] = static_cast<float>(p);
          const float* vj = vh + j * vs[2];
          for (int64_t d = 0; d < Dv; ++d)
            acc[static_cast<size_t>(d)] += p * static_cast<double>(vj[d * vs[3]]);
        }
        for (int64_t d = 0; d < Dv; ++d) oi[d] = static_cast<float>(acc[static_cast<size_t>(d)]);
      }
    }
  }
  if (weights_out != nullptr) *weights_out = weights;
  return out;
}

}  // namespace ref
}  // namespace attn
