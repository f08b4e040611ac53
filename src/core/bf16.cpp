// The public bf16 helpers of sdpa: the dtype's names and rounding a float32 tensor to bf16.
#include <fmt/format.h>

#include "attn/error.hpp"
#include "attn/sdpa.hpp"
#include "core/half.hpp"

namespace attn {

tensor round_to_bf16(const tensor& t) {
  const tensor dense = t.contiguous();
  std::vector<float> values(dense.values().begin(), dense.values().end());
  for (float& x : values) x = bf16_to_float(float_to_bf16(x));
  return tensor(t.shape(), std::move(values));
}

sdpa_dtype parse_sdpa_dtype(const std::string& name) {
  if (name == "float32" || name == "fp32" || name == "f32") return sdpa_dtype::float32;
  if (name == "bf16" || name == "bfloat16") return sdpa_dtype::bf16;
  throw_usage(fmt::format("--dtype '{}': expected float32 or bf16", name));
}

const char* sdpa_dtype_name(sdpa_dtype d) { return d == sdpa_dtype::bf16 ? "bf16" : "float32"; }

}  // namespace attn
