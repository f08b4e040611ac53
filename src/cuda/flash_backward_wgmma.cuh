// The fused backward on Hopper's warpgroup products (wgmma, sm_90a), for head sizes 64 and 128:
// the mma.sync backward's algorithm (flash_backward_mma.cuh: P recomputed from lse, no atomics,
// the same bits on every run) with the wgmma forward's operands (flash_forward_wgmma.cuh).
//   dK, dV: a block of WGS warpgroups owns 64·WGS keys (64 a warpgroup) and walks 64-query tiles
//           of every query head that reads them: Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ from shared memory,
//           dSᵀ = Pᵀ∘(dPᵀ − δ) in registers, then dV += Pᵀ·dO and dK += dSᵀ·Q with Pᵀ and dSᵀ as
//           register operands and dO, Q read transposed.
//   dQ:     a block of WGS warpgroups owns 64·WGS queries and walks 64-key tiles: S, dP, dS as
//           above, dQ += dS·K with K read transposed.
// Tiles pass through shared memory two deep in the 128-byte swizzled layout; one barrier a step.
#pragma once

#include <cmath>

#include "cuda/cuda_problem.hpp"
#include "cuda/device_math.cuh"
#include "cuda/flash_backward_mma.cuh"
#include "cuda/flash_forward_wgmma.cuh"
#include "cuda/wgmma.cuh"

namespace attn::cuda_kernels {

constexpr int wgmma_backward_tile = 64;  // rows of the walked operand a step

template <int D, int WGS>
constexpr int dkdv_wgmma_shared_bytes() {  // K, V; two Q and two dO tiles; lse and δ twice; alignment
  return (2 * 64 * WGS * D + 4 * wgmma_backward_tile * D) * 2 + 4 * wgmma_backward_tile * 4 + 1024;
}
template <int D, int WGS>
constexpr int dq_wgmma_shared_bytes() {  // Q, dO; two K and two V tiles; alignment
  return (2 * 64 * WGS * D + 4 * wgmma_backward_tile * D) * 2 + 1024;
}

// Accumulator-layout floats (a warp's 16 rows × N columns) as wgmma's register A operand, 16
// columns an operand, rounded to T.
template <typename T, int N>
__device__ __forceinline__ void pack_register_operand(uint32_t (&a)[N / 16][4], const float (&x)[N / 2]) {
#pragma unroll
  for (int kc = 0; kc < N / 16; ++kc) {
    a[kc][0] = pack_pair<T>(x[8 * kc], x[8 * kc + 1]);
    a[kc][1] = pack_pair<T>(x[8 * kc + 2], x[8 * kc + 3]);
    a[kc][2] = pack_pair<T>(x[8 * kc + 4], x[8 * kc + 5]);
    a[kc][3] = pack_pair<T>(x[8 * kc + 6], x[8 * kc + 7]);
  }
}

// d = A·Bᵀ for this warpgroup: A the 64 rows of a swizzled tile of RA rows starting at row0,
// B the N rows of a swizzled tile, both D wide (Q·Kᵀ's shape; N = 64 here).
template <typename T, int D, int RA, int N>
__device__ __forceinline__ void issue_rows_rows(float (&d)[N / 2], const T* a_tile, int row0, const T* b_tile) {
#pragma unroll
  for (int kc = 0; kc < D / 16; ++kc)
    wgmma_ss<T, N>(d, swizzled_descriptor(a_tile + (kc / 4) * RA * 64 + row0 * 64 + (kc % 4) * 16, 16, 1024),
                   swizzled_descriptor(b_tile + (kc / 4) * N * 64 + (kc % 4) * 16, 16, 1024), kc > 0 ? 1 : 0);
}

// d += A·B: A in registers (K columns), B the K rows of a swizzled tile of RB rows, D wide, read
// transposed (P·V's shape).
template <typename T, int D, int RB, int K>
__device__ __forceinline__ void issue_registers_rows(float (&d)[D / 2], const uint32_t (&a)[K / 16][4], const T* b_tile) {
#pragma unroll
  for (int kc = 0; kc < K / 16; ++kc)
    wgmma_rs<T, D>(d, a[kc], swizzled_descriptor(b_tile + kc * 16 * 64, RB * 128, 1024), 1);
}

template <typename T, int D, int WGS>
__global__ void __launch_bounds__(128 * WGS, 1)
flash_backward_dkdv_wgmma_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                 const T* __restrict__ grad_o, const float* __restrict__ lse,
                                 const float* __restrict__ delta, T* __restrict__ dk, T* __restrict__ dv,
                                 mma_backward_args a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int BC = 64 * WGS, BR = wgmma_backward_tile, THREADS = 128 * WGS;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (shared_address(smem_raw) & 1023)) & 1023);
  T* k_s = reinterpret_cast<T*>(smem);  // BC × D
  T* v_s = k_s + BC * D;                // BC × D
  T* q_s = v_s + BC * D;                // [2] BR × D
  T* go_s = q_s + 2 * BR * D;           // [2] BR × D
  float* lse_s = reinterpret_cast<float*>(go_s + 2 * BR * D);  // [2][BR], base 2
  float* delta_s = lse_s + 2 * BR;                             // [2][BR]

  const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  const int group = lane / 4, quad = lane % 4;
  const int bk = blockIdx.y, b = bk / a.Hkv, hk = bk % a.Hkv, heads = a.H / a.Hkv;
  const int key0 = blockIdx.x * BC;  // causal: the first key blocks have the longest walks, and go first
  const int warp_key0 = key0 + wg * 64 + warp * 16, key_lo = warp_key0 + group, key_hi = key_lo + 8;
  const T* k_head = k + static_cast<int64_t>(bk) * a.S * D;
  const T* v_head = v + static_cast<int64_t>(bk) * a.S * D;
  copy_rows_swizzled<T, BC, D, THREADS>(k_s, k_head, key0, a.S, tid);
  copy_rows_swizzled<T, BC, D, THREADS>(v_s, v_head, key0, a.S, tid);

  // The walk: (query head, query tile) pairs; causal: tiles before the block's first key see none of it.
  const int first_tile = a.causal ? key0 / BR : 0;
  const int tiles_per_head = (a.L + BR - 1) / BR - first_tile;
  const int steps = tiles_per_head > 0 ? tiles_per_head * heads : 0;
  auto load_step = [&](int step, int buf) {
    const int h = hk * heads + step / tiles_per_head, i0 = (first_tile + step % tiles_per_head) * BR;
    const int64_t bh = static_cast<int64_t>(b) * a.H + h;
    copy_rows_swizzled<T, BR, D, THREADS>(q_s + buf * BR * D, q + bh * a.L * D, i0, a.L, tid);
    copy_rows_swizzled<T, BR, D, THREADS>(go_s + buf * BR * D, grad_o + bh * a.L * D, i0, a.L, tid);
    for (int r = tid; r < BR; r += THREADS) {
      const int i = i0 + r;
      lse_s[buf * BR + r] = i < a.L ? lse_base2(lse[bh * a.L + i]) : INFINITY;
      delta_s[buf * BR + r] = i < a.L ? delta[bh * a.L + i] : 0.f;
    }
  };
  if (steps > 0) load_step(0, 0);
  copy_async_commit();

  float dk_acc[D / 2], dv_acc[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) dk_acc[i] = dv_acc[i] = 0.f;

  for (int step = 0; step < steps; ++step) {
    const int buf = step & 1;
    copy_async_wait<0>();
    fence_proxy_async_shared();
    __syncthreads();  // this step's tiles are in; every warpgroup is past the last step's products
    if (step + 1 < steps) load_step(step + 1, buf ^ 1);
    copy_async_commit();
    const int h = hk * heads + step / tiles_per_head, i0 = (first_tile + step % tiles_per_head) * BR;
    const T* qt = q_s + buf * BR * D;
    const T* got = go_s + buf * BR * D;
    const float* lse_t = lse_s + buf * BR;
    const float* delta_t = delta_s + buf * BR;

    float st[BR / 2], dpt[BR / 2];  // Sᵀ and dPᵀ: this warp's 16 keys × the tile's BR queries
    wgmma_fence();
    issue_rows_rows<T, D, BC, BR>(st, k_s, wg * 64, qt);
    issue_rows_rows<T, D, BC, BR>(dpt, v_s, wg * 64, got);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operand(st);
    wgmma_fence_operand(dpt);
    // Pair by pair only where the tile meets the mask, the causal diagonal or the end of the keys.
    const bool edge = !a.fold_interior || a.mask != nullptr || warp_key0 + 16 > a.S || (a.causal && warp_key0 + 15 > i0);
#pragma unroll
    for (int n = 0; n < BR / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = n * 8 + 2 * quad + (e & 1);
        float p;
        if (!edge) {
          p = exp2_approx(fmaf(st[4 * n + e], a.scale_log2, -lse_t[r]));
        } else {
          const int key = e < 2 ? key_lo : key_hi, i = i0 + r;
          float x = st[4 * n + e] * a.scale_log2;
          if ((a.causal && key > i) || key >= a.S) {
            x = -INFINITY;
          } else if (a.mask != nullptr && i < a.L) {
            x += mask_term(a.mask[b * a.ms0 + h * a.ms1 + i * a.ms2 + key * a.ms3]) * log2_e;
          }
          p = exp2_approx(x - lse_t[r]);
        }
        st[4 * n + e] = p;
        dpt[4 * n + e] = p * (dpt[4 * n + e] - delta_t[r]);
      }
    uint32_t p_op[BR / 16][4], ds_op[BR / 16][4];
    pack_register_operand<T, BR>(p_op, st);
    pack_register_operand<T, BR>(ds_op, dpt);
    wgmma_fence();
    issue_registers_rows<T, D, BR, BR>(dv_acc, p_op, got);
    issue_registers_rows<T, D, BR, BR>(dk_acc, ds_op, qt);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operand(dv_acc);
    wgmma_fence_operand(dk_acc);
  }
  copy_async_wait<0>();

  T* dk_head = dk + static_cast<int64_t>(bk) * a.S * D;
  T* dv_head = dv + static_cast<int64_t>(bk) * a.S * D;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    const int col = n * 8 + 2 * quad;
    if (key_lo < a.S) {
      *reinterpret_cast<uint32_t*>(dk_head + static_cast<int64_t>(key_lo) * D + col) =
          pack_pair<T>(dk_acc[4 * n] * a.scale, dk_acc[4 * n + 1] * a.scale);
      *reinterpret_cast<uint32_t*>(dv_head + static_cast<int64_t>(key_lo) * D + col) =
          pack_pair<T>(dv_acc[4 * n], dv_acc[4 * n + 1]);
    }
    if (key_hi < a.S) {
      *reinterpret_cast<uint32_t*>(dk_head + static_cast<int64_t>(key_hi) * D + col) =
          pack_pair<T>(dk_acc[4 * n + 2] * a.scale, dk_acc[4 * n + 3] * a.scale);
      *reinterpret_cast<uint32_t*>(dv_head + static_cast<int64_t>(key_hi) * D + col) =
          pack_pair<T>(dv_acc[4 * n + 2], dv_acc[4 * n + 3]);
    }
  }
#else
  __trap();  // built without sm_90a: the launch never chooses this kernel
#endif
}

template <typename T, int D, int WGS>
__global__ void __launch_bounds__(128 * WGS, 1)
flash_backward_dq_wgmma_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                               const T* __restrict__ grad_o, const float* __restrict__ lse,
                               const float* __restrict__ delta, T* __restrict__ dq, mma_backward_args a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int BR = 64 * WGS, BC = wgmma_backward_tile, THREADS = 128 * WGS;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (shared_address(smem_raw) & 1023)) & 1023);
  T* q_s = reinterpret_cast<T*>(smem);  // BR × D
  T* go_s = q_s + BR * D;               // BR × D
  T* k_s = go_s + BR * D;               // [2] BC × D
  T* v_s = k_s + 2 * BC * D;            // [2] BC × D

  const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  const int group = lane / 4, quad = lane % 4;
  const int bh = blockIdx.y, b = bh / a.H, h = bh % a.H, hk = h / (a.H / a.Hkv);
  const int q0 = (a.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * BR;  // causal: the longest first
  const int warp_row0 = q0 + wg * 64 + warp * 16, row_lo = warp_row0 + group, row_hi = row_lo + 8;
  const T* k_head = k + (static_cast<int64_t>(b) * a.Hkv + hk) * a.S * D;
  const T* v_head = v + (static_cast<int64_t>(b) * a.Hkv + hk) * a.S * D;
  copy_rows_swizzled<T, BR, D, THREADS>(q_s, q + static_cast<int64_t>(bh) * a.L * D, q0, a.L, tid);
  copy_rows_swizzled<T, BR, D, THREADS>(go_s, grad_o + static_cast<int64_t>(bh) * a.L * D, q0, a.L, tid);
  const int visible = a.causal ? min(a.S, q0 + BR) : a.S;
  const int tiles = (visible + BC - 1) / BC;
  if (tiles > 0) {
    copy_rows_swizzled<T, BC, D, THREADS>(k_s, k_head, 0, a.S, tid);
    copy_rows_swizzled<T, BC, D, THREADS>(v_s, v_head, 0, a.S, tid);
  }
  copy_async_commit();
  const float lse_lo = row_lo < a.L ? lse_base2(lse[static_cast<int64_t>(bh) * a.L + row_lo]) : INFINITY;
  const float lse_hi = row_hi < a.L ? lse_base2(lse[static_cast<int64_t>(bh) * a.L + row_hi]) : INFINITY;
  const float delta_lo = row_lo < a.L ? delta[static_cast<int64_t>(bh) * a.L + row_lo] : 0.f;
  const float delta_hi = row_hi < a.L ? delta[static_cast<int64_t>(bh) * a.L + row_hi] : 0.f;

  float dq_acc[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) dq_acc[i] = 0.f;

  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1;
    copy_async_wait<0>();
    fence_proxy_async_shared();
    __syncthreads();  // this tile is in; every warpgroup is past the last tile's products
    if (t + 1 < tiles) {
      copy_rows_swizzled<T, BC, D, THREADS>(k_s + (buf ^ 1) * BC * D, k_head, (t + 1) * BC, a.S, tid);
      copy_rows_swizzled<T, BC, D, THREADS>(v_s + (buf ^ 1) * BC * D, v_head, (t + 1) * BC, a.S, tid);
    }
    copy_async_commit();
    const T* kt = k_s + buf * BC * D;
    const T* vt = v_s + buf * BC * D;

    float s[BC / 2], dp[BC / 2];
    wgmma_fence();
    issue_rows_rows<T, D, BR, BC>(s, q_s, wg * 64, kt);
    issue_rows_rows<T, D, BR, BC>(dp, go_s, wg * 64, vt);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operand(s);
    wgmma_fence_operand(dp);
    const int key0 = t * BC;
    const bool edge = !a.fold_interior || a.mask != nullptr || key0 + BC > a.S || (a.causal && key0 + BC - 1 > warp_row0);
#pragma unroll
    for (int n = 0; n < BC / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float row_lse = e < 2 ? lse_lo : lse_hi;
        float p;
        if (!edge) {
          p = exp2_approx(fmaf(s[4 * n + e], a.scale_log2, -row_lse));
        } else {
          const int row = e < 2 ? row_lo : row_hi, key = key0 + n * 8 + 2 * quad + (e & 1);
          float x = s[4 * n + e] * a.scale_log2;
          if (key >= a.S || (a.causal && key > row)) {
            x = -INFINITY;
          } else if (a.mask != nullptr && row < a.L) {
            x += mask_term(a.mask[b * a.ms0 + h * a.ms1 + row * a.ms2 + key * a.ms3]) * log2_e;
          }
          p = exp2_approx(x - row_lse);
        }
        s[4 * n + e] = p * (dp[4 * n + e] - (e < 2 ? delta_lo : delta_hi));  // dS
      }
    uint32_t ds_op[BC / 16][4];
    pack_register_operand<T, BC>(ds_op, s);
    wgmma_fence();
    issue_registers_rows<T, D, BC, BC>(dq_acc, ds_op, kt);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operand(dq_acc);
  }
  copy_async_wait<0>();

  T* dq_head = dq + static_cast<int64_t>(bh) * a.L * D;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    const int col = n * 8 + 2 * quad;
    if (row_lo < a.L)
      *reinterpret_cast<uint32_t*>(dq_head + static_cast<int64_t>(row_lo) * D + col) =
          pack_pair<T>(dq_acc[4 * n] * a.scale, dq_acc[4 * n + 1] * a.scale);
    if (row_hi < a.L)
      *reinterpret_cast<uint32_t*>(dq_head + static_cast<int64_t>(row_hi) * D + col) =
          pack_pair<T>(dq_acc[4 * n + 2] * a.scale, dq_acc[4 * n + 3] * a.scale);
  }
#else
  __trap();  // built without sm_90a: the launch never chooses this kernel
#endif
}

}  // namespace attn::cuda_kernels
