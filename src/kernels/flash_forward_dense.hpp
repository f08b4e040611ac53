// The float32 attention forward on K and V rows that lie next to each other in memory.
//
// Q, K and V usually arrive as views of [B, N, H, D] storage (a fused QKV projection, attn
// bench): a head's consecutive keys are then H·D floats apart (2 KiB at H = 8, D = 64), so a key
// tile's rows fall into a few cache sets and evict each other, and every query tile of the head
// reads them again from L2. Copying each K/V head into rows of exactly D (and Dv) floats once per
// call, in parallel, costs a pass over K and V; at 1,4096,8,64 the kernel then ran 18% faster
// (one run, 2 threads: 431 against 365 GFLOP/s; the copy costs 1–4% of the call, more at
// shorter sequences: it is linear in N, the attention quadratic).
//
// Only the layout changes: every product is computed from the same values in the same order, so
// the output has the bits of the strided call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/flash_forward.hpp"
#include "kernels/flash_problem.hpp"

namespace attn::kernels {
namespace {

template <class V, int QV, int JB, int NR, int NV>
void flash_forward_dense_run(flash_problem p) {
  const bool strided = p.ks[2] != p.D || p.vs[2] != p.Dv;
  // A head read by one work item only reads each key tile once either way: no copy.
  if (!strided || heads_read_once(p, QV * V::W)) return flash_forward<V, QV, JB, NR, NV>(p).run();

  const int64_t heads = p.B * p.Hkv;
  // Kept from call to call (per calling thread), as flash_forward_bf16_run keeps its packs: a
  // fresh copy each call costs page faults. Every element is written, so nothing is cleared.
  thread_local std::vector<float> k_buffer, v_buffer;
  k_buffer.resize(std::max(k_buffer.size(), static_cast<size_t>(heads * p.S * p.D)));
  v_buffer.resize(std::max(v_buffer.size(), static_cast<size_t>(heads * p.S * p.Dv)));
  float* const kd = k_buffer.data();
  float* const vd = v_buffer.data();
#pragma omp parallel for schedule(static) if (heads * p.S * (p.D + p.Dv) > 32768)
  for (int64_t row = 0; row < heads * p.S; ++row) {
    const int64_t b = row / (p.Hkv * p.S), hk = row / p.S % p.Hkv, j = row % p.S;
    std::memcpy(kd + row * p.D, p.k + b * p.ks[0] + hk * p.ks[1] + j * p.ks[2],
                static_cast<size_t>(p.D) * sizeof(float));
    std::memcpy(vd + row * p.Dv, p.v + b * p.vs[0] + hk * p.vs[1] + j * p.vs[2],
                static_cast<size_t>(p.Dv) * sizeof(float));
  }
  p.k = kd, p.ks[0] = p.Hkv * p.S * p.D, p.ks[1] = p.S * p.D, p.ks[2] = p.D;
  p.v = vd, p.vs[0] = p.Hkv * p.S * p.Dv, p.vs[1] = p.S * p.Dv, p.vs[2] = p.Dv;
  flash_forward<V, QV, JB, NR, NV>(p).run();
}

}  // namespace
}  // namespace attn::kernels
