// A linear layer, y = x·Wᵀ + b, as PyTorch's nn.Linear defines it.
#include "attn/linear.hpp"

#include <fmt/format.h>

#include "attn/error.hpp"
#include "kernels/gemm.hpp"

namespace attn {

namespace {

struct linear_shape {
  int64_t rows;  // every leading index of x, flattened
  int64_t in, out;
  shape_t y;
};

linear_shape check_linear(const tensor& x, const tensor& weight, const tensor* bias) {
  if (weight.rank() != 2)
    throw_usage(fmt::format("{}: expected rank 2 [out, in]", weight.describe("weight")));
  const int64_t out = weight.dim(0), in = weight.dim(1);
  if (x.rank() < 1) throw_usage(fmt::format("{}: expected rank ≥ 1 [..., in]", x.describe("x")));
  if (x.dim(-1) != in)
    throw_usage(fmt::format("{}: input size {} does not match {}", x.describe("x"), x.dim(-1),
                            weight.describe("weight")));
  if (bias != nullptr && (bias->rank() != 1 || bias->dim(0) != out))
    throw_usage(fmt::format("{}: expected [{}] to match {}", bias->describe("bias"), out,
                            weight.describe("weight")));
  linear_shape s{1, in, out, x.shape()};
  // The leading sizes are multiplied out rather than divided from numel, which fails for in = 0.
  for (int i = 0; i + 1 < x.rank(); ++i) s.rows *= x.dim(i);
  s.y.back() = out;
  return s;
}

// y[r] = x[r]·Wᵀ + b for rows [begin, end), each element one double sum rounded once.
void linear_rows(const float* x, const float* w, const float* b, float* y, int64_t in,
                 int64_t out, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    const float* xr = x + r * in;
    for (int64_t o = 0; o < out; ++o) {
      const float* wo = w + o * in;
      double acc = b != nullptr ? static_cast<double>(b[o]) : 0.0;
      for (int64_t i = 0; i < in; ++i) acc += static_cast<double>(xr[i]) * static_cast<double>(wo[i]);
      y[r * out + o] = static_cast<float>(acc);
    }
  }
}

}  // namespace

// x [..., in], weight [out, in], bias [out] → y [..., out], through sgemm.
tensor linear(const tensor& x, const tensor& weight, const tensor* bias) {
  const linear_shape s = check_linear(x, weight, bias);
  const tensor xc = x.contiguous(), wc = weight.contiguous();
  const tensor bc = bias != nullptr ? bias->contiguous() : tensor();
  tensor y(s.y);
  kernels::gemm_xwt(xc.data(), s.rows, s.in, wc.data(), s.out, bias != nullptr ? bc.data() : nullptr,
                    y.data());
  return y;
}

namespace ref {

// x [..., in], weight [out, in], bias [out] → y [..., out]
tensor linear(const tensor& x, const tensor& weight, const tensor* bias) {
  const linear_shape s = check_linear(x, weight, bias);
  const tensor xc = x.contiguous(), wc = weight.contiguous();
  const tensor bc = bias != nullptr ? bias->contiguous() : tensor();
  tensor y(s.y);
  linear_rows(xc.data(), wc.data(), bc.data(), y.data(), s.in, s.out, 0, s.rows);
  return y;
}

}  // namespace ref
}  // namespace attn
