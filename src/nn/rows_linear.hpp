// A linear layer for decoding: y = x·Wᵀ + b over a few rows at a time (beam search's
// hypotheses, one token each), with W packed once for kernels::few_rows_product when the layer
// is built. Several matrices with the same input can be stacked into one (a self-attention's
// query, key and value: one product, their outputs side by side).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace attn::nn {

// One stacked part: W [out, in] and its bias [out] (null: none).
struct rows_linear_part {
  const float* weight = nullptr;
  const float* bias = nullptr;
  int64_t out = 0;
};

class rows_linear {
 public:
  rows_linear() = default;
  // The parts' outputs one after another, all from the same `in` inputs.
  rows_linear(std::span<const rows_linear_part> parts, int64_t in);
  rows_linear(const float* weight, const float* bias, int64_t out, int64_t in);

  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  // x [rows, in] → y [rows, out].
  void apply(const float* x, int64_t rows, float* y) const;

 private:
  int64_t in_ = 0, out_ = 0;
  std::shared_ptr<float[]> panels_;  // 64-byte aligned; written once, so copies share them
  std::vector<float> bias_;                // [out] (empty: none)
};

}  // namespace attn::nn
