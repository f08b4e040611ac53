// The bf16 attention forward, written once over simd_bf16.hpp's vector types and compiled per
// instruction set: K and V rounded to bf16 and packed into the pairs vdpbf16ps multiplies
// (flash_pack_bf16.hpp), once per call (every query tile of a head reads the same packs, so none
// repacks), then the fused kernel of flash_forward.hpp with BF16 = true.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/flash_forward.hpp"
#include "kernels/flash_pack_bf16.hpp"
#include "kernels/flash_problem.hpp"
#include "kernels/scratch_vectors.hpp"

namespace attn::kernels {
namespace {

template <class V, int QV, int JB, int JD>
void flash_forward_bf16_run(flash_problem p) {
  constexpr int W = V::W;
  const int64_t heads = p.B * p.Hkv, pairs = (p.S + 1) / 2;
  p.kw_row = (p.D + 1) / 2;
  p.vw_cols = std::max<int64_t>((p.Dv + W - 1) / W, 1) * W;
  // Where each K/V head is read by one work item only (one query tile, no grouped heads: short
  // sequences), the work item packs its own head (kw, vw left null): no pass over all heads
  // before the kernel, and no second parallel region.
  if (heads_read_once(p, QV * W)) return flash_forward<V, QV, JB, JD, true>(p).run();
  // Kept from call to call (per calling thread): a fresh half-size copy of K and V each time
  // cost more in page faults than the packing itself (about a tenth of the run at
  // 2,1024,16,128). Every word is written, the padding as zeros, so no clearing is needed.
  // (The OpenMP threads below see their own thread_local copies: they use these pointers.)
  thread_local std::vector<uint32_t> kw_buffer, vw_buffer;
  resize_scratch(kw_buffer, std::max(kw_buffer.size(), static_cast<size_t>(heads * p.S * p.kw_row)));
  resize_scratch(vw_buffer, std::max(vw_buffer.size(), static_cast<size_t>(heads * pairs * p.vw_cols)));
  uint32_t* const kw = kw_buffer.data();
  uint32_t* const vw = vw_buffer.data();
#pragma omp parallel for schedule(static) if (heads * p.S * (p.D + p.Dv) > 32768)
  for (int64_t item = 0; item < heads * pairs; ++item) {
    const int64_t bh = item / pairs, j2 = item % pairs;
    pack_key_value_pairs<V>(p, bh / p.Hkv, bh % p.Hkv, j2, j2 + 1, kw + bh * p.S * p.kw_row,
                            vw + bh * pairs * p.vw_cols);
  }
  p.kw = kw;
  p.vw = vw;
  flash_forward<V, QV, JB, JD, true>(p).run();
}

}  // namespace
}  // namespace attn::kernels
