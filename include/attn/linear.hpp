// A linear layer as PyTorch defines it: y = x·Wᵀ + b, with W shaped [out, in].
//   x [..., in], weight [out, in], bias [out] (optional) → y [..., out]
#pragma once

#include "attn/tensor.hpp"

namespace attn {

tensor linear(const tensor& x, const tensor& weight, const tensor* bias = nullptr);

namespace ref {
tensor linear(const tensor& x, const tensor& weight, const tensor* bias = nullptr);
}  // namespace ref

}  // namespace attn
