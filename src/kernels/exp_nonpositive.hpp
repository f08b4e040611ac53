// e^x for x ≤ 0 (a value minus the maximum of its row), written as plain scalar code that
// `omp simd` loops vectorise: the softmax rows of the cross-entropy and of the decoder's
// one-row attention. Relative error near 1e-7 (the attention kernels' polynomial).
#pragma once

#include <bit>
#include <cstdint>

#include "kernels/simd.hpp"

namespace attn::kernels {

// 2^u = 2^i · 2^f with i the integer part of u = x·log2(e) and f in [0, 1) by the degree-6
// polynomial of kernels/simd.hpp. x may be a rounding error above 0 (z − lse): 2^f covers it.
inline float exp_nonpositive(float x) {
  const float u = x * 1.44269504088896341f;
  // Below 2^-126 the result is flushed to 0 (the exponent bits clamp at 0). The clamp is on the
  // integer, since a float max is not if-converted without -ffast-math and the loop would not
  // vectorise; u + 127 > 0 then truncates as the floor does.
  const auto raw = static_cast<int32_t>(u + 127.0f);
  const int32_t biased = raw > 0 ? raw : 0;
  const float f = u - static_cast<float>(biased - 127);  // [0, 1), exact
  constexpr const float* c = simd::exp2_poly;  // Horner's scheme written out
  const float p = c[0] + f * (c[1] + f * (c[2] + f * (c[3] + f * (c[4] + f * (c[5] + f * c[6])))));
  return p * std::bit_cast<float>(biased << 23);
}

}  // namespace attn::kernels
