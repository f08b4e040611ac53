#include "nn/rows_linear.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "kernels/few_rows.hpp"

namespace attn::nn {

rows_linear::rows_linear(std::span<const rows_linear_part> parts, int64_t in) : in_(in) {
  bool any_bias = false;
  for (const rows_linear_part& p : parts) out_ += p.out, any_bias = any_bias || p.bias != nullptr;
  std::vector<float> stacked(static_cast<size_t>(out_ * in_));
  if (any_bias) bias_.assign(static_cast<size_t>(out_), 0.0f);
  int64_t row = 0;
  for (const rows_linear_part& p : parts) {
    std::copy(p.weight, p.weight + p.out * in_, stacked.begin() + row * in_);
    if (p.bias != nullptr) std::copy(p.bias, p.bias + p.out, bias_.begin() + row);
    row += p.out;
  }
  // Aligned so that each k's 32 weights are two whole cache lines.
  const auto size = static_cast<size_t>(kernels::few_rows_packed_size(out_, in_));
  const size_t bytes = (size * sizeof(float) + 63) / 64 * 64;
  auto* panels = static_cast<float*>(std::aligned_alloc(64, std::max<size_t>(bytes, 64)));
  if (panels == nullptr) throw std::bad_alloc();
  kernels::pack_few_rows(stacked.data(), out_, in_, panels);
  panels_ = std::shared_ptr<float[]>(panels, std::free);
}

rows_linear::rows_linear(const float* weight, const float* bias, int64_t out, int64_t in) {
  const rows_linear_part part{weight, bias, out};
  *this = rows_linear({&part, 1}, in);
}

void rows_linear::apply(const float* x, int64_t rows, float* y) const {
  kernels::few_rows_product(panels_.get(), bias_.empty() ? nullptr : bias_.data(), x, rows, in_, out_, y, out_);
}

}  // namespace attn::nn
