// The fused forward on Hopper's warpgroup products (wgmma, sm_90a), for head sizes 64 and 128:
// FlashAttention-2's algorithm with FlashAttention-3's operands. A block of WGS warpgroups owns
// 64·WGS query rows (64 a warpgroup, 16 a warp); K and V tiles of BC keys pass through shared
// memory two deep in wgmma's 128-byte swizzled layout, the next pair copied (cp.async) while
// this one is used. S = Q·Kᵀ reads both operands from shared memory; the online softmax runs in
// registers exactly as in the mma.sync kernel (flash_forward_mma.cuh: base 2, the scale folded
// into the exponent on interior tiles, lazy rescaling); P stays in registers as the A operand
// of O += P·V, V read transposed from shared memory. No L×S matrix is stored.
// OVERLAP issues S(t + 1) before tile t's softmax so that the tensor cores work during it (one
// more S in registers; measured slower on an H200, kept for timing). Where it differs from
// FlashAttention-3: no producer warpgroup, no bulk tensor copies (TMA), no ping-pong between
// warpgroups; one barrier a key tile. flash_forward_launch.cu chooses WGS and BC.
#pragma once

#include <cmath>

#include "cuda/cuda_problem.hpp"
#include "cuda/device_math.cuh"
#include "cuda/flash_forward_mma.cuh"
#include "cuda/wgmma.cuh"

namespace attn::cuda_kernels {

// R rows of a [rows, D] tensor from row `first` into a swizzled tile (rows at or past `limit`
// zero-filled), by every thread of the block, 16 bytes a copy.
template <typename T, int R, int D, int THREADS>
__device__ __forceinline__ void copy_rows_swizzled(T* tile, const T* src, int first, int limit, int tid) {
  constexpr int CHUNKS = D / 8;
#pragma unroll
  for (int c = tid; c < R * CHUNKS; c += THREADS) {
    const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
    const bool valid = first + r < limit;
    copy_16_async(tile + swizzled_offset<R>(r, col), valid ? src + static_cast<int64_t>(first + r) * D + col : src,
                  valid);
  }
}

template <int D, int BC, int WGS>
constexpr int flash_forward_wgmma_shared_bytes() {
  return (64 * WGS * D + 4 * BC * D) * 2 + 1024;  // Q, two K and two V tiles; 1024 to align the start
}

template <typename T, int D, int BC, bool OVERLAP, int WGS>
__global__ void __launch_bounds__(128 * WGS, WGS == 1 ? 2 : 1)
flash_forward_wgmma_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                           T* __restrict__ o, float* __restrict__ lse, const float* __restrict__ mask,
                           int64_t ms0, int64_t ms1, int64_t ms2, int64_t ms3, int H, int Hkv, int L, int S,
                           float scale_log2, bool causal) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(D == 64 || D == 128, "wgmma forward: head sizes 64 and 128");
  static_assert(BC == 64 || BC == 128, "wgmma forward: key tiles of 64 or 128");
  constexpr int BR = 64 * WGS, THREADS = 128 * WGS;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // The swizzle's pattern repeats every 1024 bytes and the descriptors assume tiles start on it.
  unsigned char* smem = smem_raw + ((1024 - (shared_address(smem_raw) & 1023)) & 1023);
  T* q_s = reinterpret_cast<T*>(smem);  // BR × D
  T* k_s = q_s + BR * D;                // [2] BC × D
  T* v_s = k_s + 2 * BC * D;            // [2] BC × D

  const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  const int group = lane / 4, quad = lane % 4;
  const int bh = blockIdx.y, b = bh / H, h = bh % H, hk = h / (H / Hkv);
  // Causal: the longest query tiles first, as in the mma.sync kernel.
  const int q0 = (causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * BR;
  const T* q_head = q + (static_cast<int64_t>(bh) * L) * D;
  const T* k_head = k + (static_cast<int64_t>(b) * Hkv + hk) * S * D;
  const T* v_head = v + (static_cast<int64_t>(b) * Hkv + hk) * S * D;
  const int visible = causal ? min(S, q0 + BR) : S;
  const int tiles = (visible + BC - 1) / BC;

  // S = Q·Kᵀ for key tile `tile` into `scores`, issued, not waited for: this warpgroup's 64 rows
  // against the tile's BC keys, 16 of D at a time (four steps of 32 bytes through a 128-byte
  // column block, then the next block).
  auto issue_scores = [&](float (&scores)[BC / 2], int tile) {
    const T* kt = k_s + (tile & 1) * BC * D;
    wgmma_fence();
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) {
      const T* a = q_s + (kc / 4) * BR * 64 + wg * 64 * 64 + (kc % 4) * 16;
      const T* bk = kt + (kc / 4) * BC * 64 + (kc % 4) * 16;
      wgmma_ss<T, BC>(scores, swizzled_descriptor(a, 16, 1024), swizzled_descriptor(bk, 16, 1024), kc > 0 ? 1 : 0);
    }
    wgmma_commit();
  };
  auto copy_keys = [&](int tile) {
    copy_rows_swizzled<T, BC, D, THREADS>(k_s + (tile & 1) * BC * D, k_head, tile * BC, S, tid);
  };
  auto copy_values = [&](int tile) {
    copy_rows_swizzled<T, BC, D, THREADS>(v_s + (tile & 1) * BC * D, v_head, tile * BC, S, tid);
  };

  // Copy groups: [Q, K0 (, V0)]; with OVERLAP [Q, K0] [V0] [K1], then V(t + 1) and K(t + 2) in
  // tile t, since S(t + 1) is computed during tile t.
  copy_rows_swizzled<T, BR, D, THREADS>(q_s, q_head, q0, L, tid);
  if (tiles > 0) copy_keys(0);
  if (OVERLAP) copy_async_commit();
  if (tiles > 0) copy_values(0);
  copy_async_commit();

  float o_acc[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o_acc[i] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};  // rows group and group + 8
  const int warp_row0 = q0 + wg * 64 + warp * 16;
  const bool can_fold = scale_log2 > 0.f;  // max(s)·c = max(s·c) only for c > 0
  float s[BC / 2];                          // S(t), then P(t) before it is packed
  float s_next[OVERLAP ? BC / 2 : 1];       // S(t + 1), computed while tile t's softmax runs

  if constexpr (OVERLAP) {
    if (tiles > 1) copy_keys(1);
    copy_async_commit();
    copy_async_wait<2>();  // Q and K0
    fence_proxy_async_shared();
    __syncthreads();
    if (tiles > 0) issue_scores(s, 0);
    wgmma_wait<0>();
    wgmma_fence_operand(s);
  }

  for (int t = 0; t < tiles; ++t) {
    copy_async_wait<0>();  // this thread's copies have landed: K(t) and V(t) (with OVERLAP V(t), K(t + 1))
    fence_proxy_async_shared();
    __syncthreads();  // ... and everyone's; every warpgroup is past tile t - 1's products
    if constexpr (OVERLAP) {
      if (t + 1 < tiles) copy_values(t + 1);  // into V(t - 1)'s buffer
      copy_async_commit();
      if (t + 2 < tiles) copy_keys(t + 2);    // into K(t)'s
      copy_async_commit();
      if (t + 1 < tiles) issue_scores(s_next, t + 1);  // the tensor cores work on while the softmax runs
    } else {
      if (t + 1 < tiles) {  // the next pair into the buffers tile t - 1 used, while this one works
        copy_keys(t + 1);
        copy_values(t + 1);
      }
      copy_async_commit();
      issue_scores(s, t);
      wgmma_wait<0>();
      wgmma_fence_operand(s);
    }
    const T* vt = v_s + (t & 1) * BC * D;

    // The mask, the causal rule and the keys past S, on the tiles that meet them (as in the
    // mma.sync kernel; this warp's rows are warp_row0 + group and + 8).
    const int key0 = t * BC;
    const bool edge = key0 + BC > S || (causal && key0 + BC - 1 > warp_row0) || mask != nullptr;
    const bool folded = can_fold && !edge;
    const float c = folded ? scale_log2 : 1.f;
    const int row_lo = warp_row0 + group, row_hi = row_lo + 8;
    if (!folded) {
#pragma unroll
      for (int n = 0; n < BC / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = s[4 * n + e] * scale_log2;
          if (edge) {
            const int row = e < 2 ? row_lo : row_hi, key = key0 + n * 8 + 2 * quad + (e & 1);
            if (key >= S || (causal && key > row)) {
              x = -INFINITY;
            } else if (mask != nullptr && row < L) {
              x += mask_term(mask[b * ms0 + h * ms1 + row * ms2 + key * ms3]) * log2_e;
            }
          }
          s[4 * n + e] = x;
        }
    }
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < BC / 8; ++n) {
      mx[0] = fmaxf(mx[0], fmaxf(s[4 * n], s[4 * n + 1]));
      mx[1] = fmaxf(mx[1], fmaxf(s[4 * n + 2], s[4 * n + 3]));
    }
    float alpha[2], base[2], m_new[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      m_new[r] = fmaxf(m_run[r], mx[r] * c);
    }
    // Lazy rescaling (flash_forward_mma.cuh): the warp keeps its maxes unless a row's has grown
    // past the margin.
    const bool move = __any_sync(0xffffffffu, m_new[0] > m_run[0] + lazy_rescale_margin ||
                                                  m_new[1] > m_run[1] + lazy_rescale_margin);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float m = move ? m_new[r] : m_run[r];
      base[r] = m == -INFINITY ? 0.f : m;  // no visible key yet: exp2(-inf - 0) = 0
      alpha[r] = exp2_approx(m_run[r] - base[r]);
      m_run[r] = m;
    }
    float sum[2] = {0.f, 0.f};
#pragma unroll
    for (int n = 0; n < BC / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[4 * n + e] = exp2_approx(fmaf(s[4 * n + e], c, -base[e >> 1]));
      sum[0] += s[4 * n] + s[4 * n + 1];
      sum[1] += s[4 * n + 2] + s[4 * n + 3];
    }
    if (move) {
      l_run[0] = l_run[0] * alpha[0] + sum[0];
      l_run[1] = l_run[1] * alpha[1] + sum[1];
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o_acc[4 * n] *= alpha[0];
        o_acc[4 * n + 1] *= alpha[0];
        o_acc[4 * n + 2] *= alpha[1];
        o_acc[4 * n + 3] *= alpha[1];
      }
    } else {
      l_run[0] += sum[0];
      l_run[1] += sum[1];
    }
    // S's accumulator layout is P's A fragment: two 8-key blocks per 16 keys.
    uint32_t p[BC / 16][4];
#pragma unroll
    for (int kc = 0; kc < BC / 16; ++kc) {
      p[kc][0] = pack_pair<T>(s[8 * kc], s[8 * kc + 1]);
      p[kc][1] = pack_pair<T>(s[8 * kc + 2], s[8 * kc + 3]);
      p[kc][2] = pack_pair<T>(s[8 * kc + 4], s[8 * kc + 5]);
      p[kc][3] = pack_pair<T>(s[8 * kc + 6], s[8 * kc + 7]);
    }

    // O += P·V, 16 keys at a time: V's rows are the reduction, so it is read MN-major (its
    // 64-column blocks BC·128 bytes apart, its 8-key groups 1024).
    wgmma_fence();
#pragma unroll
    for (int kc = 0; kc < BC / 16; ++kc)
      wgmma_rs<T, D>(o_acc, p[kc], swizzled_descriptor(vt + kc * 16 * 64, BC * 128, 1024), 1);
    wgmma_commit();
    wgmma_wait<0>();  // P·V(t), and with OVERLAP S(t + 1)
    wgmma_fence_operand(o_acc);
    if constexpr (OVERLAP) {
      wgmma_fence_operand(s_next);
#pragma unroll
      for (int i = 0; i < BC / 2; ++i) s[i] = s_next[i];
    }
  }
  copy_async_wait<0>();

  T* o_head = o + static_cast<int64_t>(bh) * L * D;
  float inv[2];
  int rows[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = l_run[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    l_run[r] = l;
    inv[r] = l > 0.f ? 1.f / l : 0.f;  // a row whose every key is masked: output 0
    rows[r] = warp_row0 + group + 8 * r;
  }
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    const int col = n * 8 + 2 * quad;
#pragma unroll
    for (int r = 0; r < 2; ++r)
      if (rows[r] < L)
        *reinterpret_cast<uint32_t*>(o_head + static_cast<int64_t>(rows[r]) * D + col) =
            pack_pair<T>(o_acc[4 * n + 2 * r] * inv[r], o_acc[4 * n + 2 * r + 1] * inv[r]);
  }
  if (lse != nullptr && quad == 0) {
#pragma unroll
    for (int r = 0; r < 2; ++r)
      if (rows[r] < L)
        lse[static_cast<int64_t>(bh) * L + rows[r]] =
            l_run[r] > 0.f ? (m_run[r] + log2f(l_run[r])) * ln_2 : -INFINITY;
  }
#else
  __trap();  // built without sm_90a: the launch never chooses this kernel (see its probe)
#endif
}

}  // namespace attn::cuda_kernels
