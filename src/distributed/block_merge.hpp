// Softmax over keys split in blocks: each block's attention output o_b is normalised over that
// block alone and comes with its rows' log-sum-exp lse_b. The whole row is then
//   o = Σ_b e^{lse_b − m} o_b / Σ_b e^{lse_b − m},  lse = m + log Σ_b e^{lse_b − m},  m = max_b
//   lse_b
// folded in one block at a time. A block whose row is fully masked has lse_b = −inf and adds
// nothing; a row no block sees stays 0 with lse −inf, as the one-process kernel gives it.
#pragma once

#include <cstdint>
#include <vector>

#include "attn/tensor.hpp"

namespace attn::dist {

// The running result for `rows` rows of one rank: [B, H, rows, Dv] and [B, H, rows], in double so
// the merging adds no float32 rounding of its own.
class block_merge {
 public:
  block_merge(int64_t B, int64_t H, int64_t rows, int64_t Dv);

  // Folds in o_b [B, H, n, Dv] and lse_b [B, H, n] for the rows [first, first + n).
  void add(const tensor& o_b, const tensor& lse_b, int64_t first);

  tensor output() const;  // [B, H, rows, Dv], float32

 private:
  int64_t B_, H_, rows_, Dv_;
  std::vector<double> o_, lse_;
};

}  // namespace attn::dist
