#include "block_merge.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn::dist {

block_merge::block_merge(int64_t B, int64_t H, int64_t rows, int64_t Dv)
    : B_(B),
      H_(H),
      rows_(rows),
      Dv_(Dv),
      o_(static_cast<size_t>(B * H * rows * Dv), 0.0),
      lse_(static_cast<size_t>(B * H * rows), -std::numeric_limits<double>::infinity()) {}

void block_merge::add(const tensor& o_b, const tensor& lse_b, int64_t first) {
  const tensor oc = o_b.contiguous(), lc = lse_b.contiguous();
  const int64_t n = oc.dim(2);
  const float* ob = oc.data();
  const float* lb = lc.data();
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < B_ * H_; ++bh)
    for (int64_t i = 0; i < n; ++i) {
      const double block = lb[bh * n + i];
      double& acc = lse_[static_cast<size_t>(bh * rows_ + first + i)];
      const double m = std::max(acc, block);
      if (m == -std::numeric_limits<double>::infinity()) continue;  // neither sees a key yet
      const double w_acc = std::exp(acc - m), w_block = std::exp(block - m);
      const double total = w_acc + w_block;
      double* o = &o_[static_cast<size_t>((bh * rows_ + first + i) * Dv_)];
      const float* src = ob + (bh * n + i) * Dv_;
      for (int64_t d = 0; d < Dv_; ++d) o[d] = (o[d] * w_acc + src[d] * w_block) / total;
      acc = m + std::log(total);
    }
}

tensor block_merge::output() const {
  tensor out({B_, H_, rows_, Dv_});
  float* dst = out.data();
  for (size_t i = 0; i < o_.size(); ++i) dst[i] = static_cast<float>(o_[i]);
  return out;
}

}  // namespace attn::dist
