// How attention scores are scaled before the softmax: not at all, by 1/√d (the default, as in
// "Attention is all you need" and PyTorch), or by a number the user gives.
#pragma once

#include <cstdint>
#include <string>

namespace attn {

struct scale_spec {
  enum class mode { none, inv_sqrt_d, value };
  mode how = mode::inv_sqrt_d;
  double value = 1.0;  // used when how == value

  double resolve(int64_t head_dim) const;  // the factor to multiply scores by
  std::string to_string() const;           // "none", "sqrt" or the number
  // Accepts "sqrt", "none" or a finite number; throws a usage error otherwise.
  static scale_spec parse(const std::string& text);
};

}  // namespace attn
