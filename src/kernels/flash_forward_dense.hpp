// The float32 attention forward on rows of V that lie next to each other in memory.
//
// Q, K and V usually arrive as views of [B, N, H, D] storage (a fused QKV projection, attn
// bench): a head's consecutive keys are then H·D floats apart (2 KiB at H = 8, D = 64). P·V
// reads a few values of every row of a key tile of V per block (flash_forward.hpp), once per
// block of V's columns: rows that far apart fall into a few cache sets and evict each other, so
// each pass read the tile again from L2. Copying each V head into rows of exactly Dv floats once
// per call, in parallel, costs a pass over V and saves that (harness, 2 threads, 1,2048,8,64:
// 419–425 → 428–433 GFLOP/s; 1,4096,8,64: 434–437 → 439). K is read row by row, a key's
// values in turn, and gains nothing from a copy: copying it too cost 2–3%.
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
#include "kernels/scratch_vectors.hpp"

namespace attn::kernels {
namespace {

template <class V, int QV, int JB, int JD>
void flash_forward_dense_run(flash_problem p) {
  // A head read by one work item only reads each key tile once either way: no copy.
  if (p.vs[2] == p.Dv || heads_read_once(p, QV * V::W)) return flash_forward<V, QV, JB, JD>(p).run();

  const int64_t heads = p.B * p.Hkv;
  // Kept from call to call (per calling thread), as flash_forward_bf16_run keeps its packs: a
  // fresh copy each call costs page faults. Every element is written, so nothing is cleared.
  thread_local std::vector<float> v_buffer;
  resize_scratch(v_buffer, std::max(v_buffer.size(), static_cast<size_t>(heads * p.S * p.Dv)));
  float* const vd = v_buffer.data();
#pragma omp parallel for schedule(static) if (heads * p.S * p.Dv > 16384)
  for (int64_t row = 0; row < heads * p.S; ++row) {
    const int64_t b = row / (p.Hkv * p.S), hk = row / p.S % p.Hkv, j = row % p.S;
    std::memcpy(vd + row * p.Dv, p.v + b * p.vs[0] + hk * p.vs[1] + j * p.vs[2],
                static_cast<size_t>(p.Dv) * sizeof(float));
  }
  p.v = vd, p.vs[0] = p.Hkv * p.S * p.Dv, p.vs[1] = p.S * p.Dv, p.vs[2] = p.Dv;
  flash_forward<V, QV, JB, JD>(p).run();
}

}  // namespace
}  // namespace attn::kernels
