// One sdpa call as the fused kernels see it: raw pointers and element strides, shapes already
// checked by attn::check_sdpa_shapes. Kept free of attn::tensor so the per-instruction-set
// translation units depend on nothing but this and simd.hpp.
#pragma once

#include <cstdint>

namespace attn::kernels {

struct flash_problem {
  int64_t B = 0, H = 0, Hkv = 0, L = 0, S = 0, D = 0, Dv = 0;
  // q [B, H, L, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv]; strides of the first three dimensions
  // (the last dimension is contiguous: the caller makes it so).
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  int64_t qs[3] = {0, 0, 0}, ks[3] = {0, 0, 0}, vs[3] = {0, 0, 0};
  float* out = nullptr;      // [B, H, L, Dv], contiguous
  float* weights = nullptr;  // [B, H, L, S], contiguous; null when not wanted
  float* lse = nullptr;      // [B, H, L] row log-sum-exp (natural log) for the backward; or null
  // Additive mask broadcast to [B, H, L, S]: a broadcast dimension has stride 0.
  const float* mask = nullptr;
  int64_t ms[4] = {0, 0, 0, 0};
  bool causal = false;  // top-left: query i sees keys j ≤ i
  float scale = 1.0f;   // multiplies Q·Kᵀ

  // bf16 operands (flash_forward_bf16.hpp fills these; the float32 kernels ignore them). A 32-bit word
  // holds a pair of bf16 values, the lower one in the low half, as vdpbf16ps reads them.
  //   kw [B·Hkv][S][kw_row]          K's rows, pairs along D (D rounded up to even, zero-padded)
  //   vw [B·Hkv][(S+1)/2][vw_cols]   V's rows two at a time: word (j, c) = (V[2j][c], V[2j+1][c]),
  //                                  columns zero-padded to vw_cols (a multiple of the lanes)
  const uint32_t* kw = nullptr;
  const uint32_t* vw = nullptr;
  int64_t kw_row = 0, vw_cols = 0;
};

// True when each (batch, K/V head) is read by one work item only (one tile of br queries, no
// grouped heads): copying or packing that head's K and V first would save no reads.
inline bool heads_read_once(const flash_problem& p, int64_t br) {
  const int64_t group = p.Hkv == 0 ? 1 : p.H / p.Hkv;
  return (p.L + br - 1) / br * group == 1;
}

// Implemented once per instruction set; each runs the whole problem on the OpenMP threads.
void flash_forward_avx512(const flash_problem& p);
void flash_forward_avx2(const flash_problem& p);

// Q·Kᵀ and P·V on bf16 pairs with float32 accumulation (they pack K and V themselves): with
// vdpbf16ps, or with its exact float32 emulation where the CPU lacks it (same bits; simd_bf16.hpp).
void flash_forward_bf16_avx512(const flash_problem& p);
void flash_forward_bf16_emulated_avx512(const flash_problem& p);
void flash_forward_bf16_emulated_avx2(const flash_problem& p);

// The kernel of selected_bf16_path() (flash_bf16.cpp); the caller leaves the bf16 fields empty.
void flash_forward_bf16(const flash_problem& p);

}  // namespace attn::kernels
