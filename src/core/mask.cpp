#include "attn/mask.hpp"

#include <fmt/format.h>

#include <limits>

#include "attn/error.hpp"

namespace attn {

tensor additive_mask_from_bool(const tensor& flags, bool keep_when) {
  if (flags.empty()) throw_usage("the bool mask is empty");
  const tensor dense = flags.contiguous();
  tensor out(flags.shape());
  const float* in = dense.data();
  float* o = out.data();
  const int64_t n = dense.numel();
  for (int64_t i = 0; i < n; ++i) {
    // Anything but 0/1 means the caller handed over a float mask by mistake; converting it
    // silently would throw its values away.
    if (in[i] != 0.0f && in[i] != 1.0f)
      throw_usage(fmt::format("bool mask {} holds {} at element {}; expected 0 or 1",
                              shape_to_string(flags.shape()), in[i], i));
    const bool flag = in[i] == 1.0f;
    o[i] = flag == keep_when ? 0.0f : -std::numeric_limits<float>::infinity();
  }
  return out;
}

}  // namespace attn
