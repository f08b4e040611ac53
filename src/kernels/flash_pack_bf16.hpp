// K and V packed into the pairs vdpbf16ps multiplies, for the bf16 forward (flash_problem.hpp
// describes the layout): K's rows as pairs along D, V's rows two at a time, interleaved. An odd
// D's last pair and an odd S's last pair of keys take a zero for the missing half.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/flash_problem.hpp"
#include "kernels/simd_bf16.hpp"

namespace attn::kernels {

// Key pairs [j2_begin, j2_end) of K/V head (b, hk) into kw and vw, that head's own packs.
template <class V>
void pack_key_value_pairs(const flash_problem& p, int64_t b, int64_t hk, int64_t j2_begin, int64_t j2_end,
                          uint32_t* kw, uint32_t* vw) {
  const float* kh = p.k + b * p.ks[0] + hk * p.ks[1];
  const float* vh = p.v + b * p.vs[0] + hk * p.vs[1];
  for (int64_t j2 = j2_begin; j2 < j2_end; ++j2) {
    for (int64_t j = 2 * j2; j < std::min(2 * j2 + 2, p.S); ++j)
      simd::pack_along<V>(kh + j * p.ks[2], p.D, 1.0f, kw + j * p.kw_row);
    const float* v0 = vh + 2 * j2 * p.vs[2];
    uint32_t* vr = vw + j2 * p.vw_cols;
    simd::pack_two_rows<V>(v0, 2 * j2 + 1 < p.S ? v0 + p.vs[2] : nullptr, p.Dv, vr);
    std::fill(vr + p.Dv, vr + p.vw_cols, 0u);  // the columns past Dv multiply as 0
  }
}

}  // namespace attn::kernels
