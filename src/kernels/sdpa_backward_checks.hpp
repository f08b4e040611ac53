// Shape checks of the sdpa backward's extra tensors (o, lse, grad_o), shared by the reference
// and the fused backward.
#pragma once

#include <fmt/format.h>

#include <string>

#include "attn/error.hpp"
#include "attn/tensor.hpp"

namespace attn::kernels {

// Throws a usage error naming the tensor when its shape is not exactly `want`.
inline void check_row_tensor(const tensor& t, const shape_t& want, const std::string& name) {
  if (t.empty() || t.shape() != want)
    throw_usage(fmt::format("{}: expected shape {}", t.describe(name), shape_to_string(want)));
}

}  // namespace attn::kernels
