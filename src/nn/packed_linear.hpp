// A linear layer whose weights stay fixed from call to call (an inference layer): W is packed
// for the gemm kernel once, when the layer is built, instead of in every product.
#pragma once

#include <cstdint>

#include "attn/tensor.hpp"
#include "kernels/gemm_packed_b.hpp"

namespace attn::nn {

class packed_linear {
 public:
  packed_linear() = default;
  // weight [out, in], bias [out] or empty (no bias).
  packed_linear(const tensor& weight, const tensor& bias);

  bool empty() const { return weight_.empty(); }
  int64_t in() const { return weight_.dim(1); }
  int64_t out() const { return weight_.dim(0); }

  // y[r, 0 .. count) = x[r]·W[first .. first+count)ᵀ + b[first .. first+count) for r < rows:
  // x dense [rows, in], y rows ldy apart. The bits of attn::linear with those rows of W.
  void apply(const float* x, int64_t rows, float* y, int64_t ldy, int64_t first, int64_t count) const;
  void apply(const float* x, int64_t rows, float* y) const { apply(x, rows, y, out(), 0, out()); }

  // The same for x [B·L, in] with the outputs as heads: y [B, out / head_size, L, head_size],
  // each head's [L, head_size] dense. head_size: a multiple of 32 (see kernels::gemm_args).
  void apply_as_heads(const float* x, int64_t B, int64_t L, float* y, int64_t head_size) const;

 private:
  tensor weight_, bias_;  // dense
  kernels::packed_b packed_;
};

}  // namespace attn::nn
