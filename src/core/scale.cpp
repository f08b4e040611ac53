#include "attn/scale.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "attn/error.hpp"

namespace attn {

double scale_spec::resolve(int64_t head_dim) const {
  switch (how) {
    case mode::none: return 1.0;
    case mode::value: return value;
    case mode::inv_sqrt_d: break;
  }
  return head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(head_dim)) : 1.0;
}

std::string scale_spec::to_string() const {
  switch (how) {
    case mode::none: return "none";
    case mode::value: return fmt::format("{}", value);
    case mode::inv_sqrt_d: break;
  }
  return "sqrt";
}

scale_spec scale_spec::parse(const std::string& text) {
  if (text == "sqrt") return {mode::inv_sqrt_d, 1.0};
  if (text == "none") return {mode::none, 1.0};
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    throw_usage("--scale must be sqrt, none or a finite number, got '" + text + "'");
  return {mode::value, v};
}

}  // namespace attn
