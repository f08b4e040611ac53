// The bf16 attention forward, written once over simd_bf16.hpp's vector types and compiled per
// instruction set: K and V rounded to bf16 and packed into the pairs vdpbf16ps multiplies, once
// per call (every query tile of a head reads the same packs, so none repacks), then the fused
// kernel of flash_forward.hpp with BF16 = true. An odd D's last pair and an odd S's last pair of
// keys take a zero for the missing half.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/flash_forward.hpp"
#include "kernels/flash_problem.hpp"
#include "kernels/simd_bf16.hpp"

namespace attn::kernels {
namespace {

template <class V, int QV, int JB, int NR, int NV>
void flash_forward_bf16_run(flash_problem p) {
  constexpr int W = V::W;
  const int64_t heads = p.B * p.Hkv, pairs = (p.S + 1) / 2;
  p.kw_row = (p.D + 1) / 2;
  p.vw_cols = std::max<int64_t>((p.Dv + W - 1) / W, 1) * W;
  // Kept from call to call (per calling thread): a fresh half-size copy of K and V each time
  // cost more in page faults than the packing itself (about a tenth of the run at
  // 2,1024,16,128). Every word is written below, the padding as zeros, so no clearing is needed.
  // (The OpenMP threads below see their own thread_local copies: they use these pointers.)
  thread_local std::vector<uint32_t> kw_buffer, vw_buffer;
  kw_buffer.resize(std::max(kw_buffer.size(), static_cast<size_t>(heads * p.S * p.kw_row)));
  vw_buffer.resize(std::max(vw_buffer.size(), static_cast<size_t>(heads * pairs * p.vw_cols)));
  uint32_t* const kw = kw_buffer.data();
  uint32_t* const vw = vw_buffer.data();
#pragma omp parallel for schedule(static) if (heads * p.S * (p.D + p.Dv) > 32768)
  for (int64_t item = 0; item < heads * pairs; ++item) {
    const int64_t bh = item / pairs, j2 = item % pairs, b = bh / p.Hkv, hk = bh % p.Hkv;
    // K: pairs along D, a row at a time.
    for (int64_t j = 2 * j2; j < std::min(2 * j2 + 2, p.S); ++j) {
      const float* k = p.k + b * p.ks[0] + hk * p.ks[1] + j * p.ks[2];
      simd::pack_along<V>(k, p.D, 1.0f, kw + (bh * p.S + j) * p.kw_row);
    }
    // V: rows 2·j2 and 2·j2 + 1 interleaved, a vector of columns at a time (an odd S's last
    // pair takes zeros for its missing row).
    const float* v0 = p.v + b * p.vs[0] + hk * p.vs[1] + 2 * j2 * p.vs[2];
    const float* v1 = 2 * j2 + 1 < p.S ? v0 + p.vs[2] : nullptr;
    uint32_t* vr = vw + (bh * pairs + j2) * p.vw_cols;
    simd::pack_two_rows<V>(v0, v1, p.Dv, vr);
    std::fill(vr + p.Dv, vr + p.vw_cols, 0u);  // the columns past Dv multiply as 0
  }
  p.kw = kw;
  p.vw = vw;
  flash_forward<V, QV, JB, NR, NV, true>(p).run();
}

}  // namespace
}  // namespace attn::kernels
