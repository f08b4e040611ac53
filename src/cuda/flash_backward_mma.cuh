// The fused backward on tensor cores (FlashAttention-2's, made deterministic): P is recomputed
// from the forward's lse, and no gradient is summed by atomics. Two kernels:
//   dK, dV: a block owns BC keys (16 a warp) and walks the query tiles of every query head that
//           reads them: Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ, dSᵀ = Pᵀ∘(dPᵀ − δ), dV += Pᵀ·dO, dK += dSᵀ·Q.
//   dQ:     a block owns BR queries (16 a warp) and walks the key tiles, recomputing S and dP:
//           dQ += dS·K. (Two products more than one kernel with atomic dQ sums; the same bits
//           from run to run.)
// δ = rowsum(dO∘O) comes first (row_delta_kernel). Operands bf16 or fp16, sums float32; P and
// dS are rounded to the operand type for their products, as in the forward.
#pragma once

#include <cmath>

#include "cuda/cuda_problem.hpp"
#include "cuda/device_math.cuh"
#include "cuda/flash_forward_mma.cuh"

namespace attn::cuda_kernels {

struct mma_backward_args {
  int H, Hkv, L, S;
  const float* mask;
  int64_t ms0, ms1, ms2, ms3;
  float scale, scale_log2;
  bool causal;
  bool fold_interior;  // tiles clear of masks and edges skip the per-pair checks (false: the first version's every-pair path, for timing)
};

constexpr int mma_backward_warps = 4;  // 64 rows a block, 16 a warp
constexpr int mma_backward_tile = 64;  // rows of the walked operand per step

// Row tiles through shared memory with cp.async: `rows` rows of D elements from `src` row
// `first` on; rows at or past `limit` are zero-filled.
template <typename T, int D>
__device__ __forceinline__ void load_tile_async(T* dst, const T* src, int first, int rows, int limit) {
  constexpr int ROW = mma_tile<D>::ROW, CHUNKS = D / 8;
  for (int c = threadIdx.x; c < rows * CHUNKS; c += blockDim.x) {
    const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
    const bool valid = first + r < limit;
    copy_16_async(dst + r * ROW + col, valid ? src + static_cast<int64_t>(first + r) * D + col : src, valid);
  }
}

// acc[16 × 8·N] += A[16 × D] · B, A's rows from shared memory (a_rows, row-major, 16 rows) and
// B[k][n] = b_rows[n][k] (the n-th row of b_rows, 8·N rows): the Q·Kᵀ shape.
template <typename T, int D, int N>
__device__ __forceinline__ void product_rows_rows(float (&acc)[N][4], const T* a_rows, const T* b_rows, int lane) {
  constexpr int ROW = mma_tile<D>::ROW;
#pragma unroll
  for (int kc = 0; kc < D / 16; ++kc) {
    uint32_t a[4];
    ldmatrix_x4(a, a_rows + ((lane & 7) + ((lane >> 3) & 1) * 8) * ROW + kc * 16 + (lane >> 4) * 8);
#pragma unroll
    for (int np = 0; np < N / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, b_rows + (np * 16 + (lane & 7) + (lane >> 4) * 8) * ROW + kc * 16 + ((lane >> 3) & 1) * 8);
      mma_16x8x16<T>(acc[2 * np], a, b[0], b[1]);
      mma_16x8x16<T>(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

// acc[16 × D] += P[16 × 16·KC] · B, P given as accumulator-layout floats p[2·KC][4] (rounded to
// T here), B[k][n] = b_rows[k][n] (KC·16 rows of D): the P·V shape.
template <typename T, int D, int KC>
__device__ __forceinline__ void product_acc_rows(float (&acc)[D / 8][4], const float (&p)[2 * KC][4], const T* b_rows,
                                                 int lane) {
  constexpr int ROW = mma_tile<D>::ROW;
#pragma unroll
  for (int kc = 0; kc < KC; ++kc) {
    const uint32_t a[4] = {pack_pair<T>(p[2 * kc][0], p[2 * kc][1]), pack_pair<T>(p[2 * kc][2], p[2 * kc][3]),
                           pack_pair<T>(p[2 * kc + 1][0], p[2 * kc + 1][1]),
                           pack_pair<T>(p[2 * kc + 1][2], p[2 * kc + 1][3])};
#pragma unroll
    for (int np = 0; np < D / 16; ++np) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, b_rows + (kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * ROW + np * 16 + (lane >> 4) * 8);
      mma_16x8x16<T>(acc[2 * np], a, b[0], b[1]);
      mma_16x8x16<T>(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

// lse in base 2 for exp2(score·log2e − lse·log2e); a row with no visible key (lse −inf) gets
// +inf, so that its P is exp2(−inf) = 0.
__device__ __forceinline__ float lse_base2(float lse) { return lse == -INFINITY ? INFINITY : lse * log2_e; }

template <typename T, int D>
__global__ void __launch_bounds__(mma_backward_warps * 32)
flash_backward_dkdv_mma_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                               const T* __restrict__ grad_o, const float* __restrict__ lse,
                               const float* __restrict__ delta, T* __restrict__ dk, T* __restrict__ dv,
                               mma_backward_args a) {
  constexpr int BC = 16 * mma_backward_warps, BR = mma_backward_tile, ROW = mma_tile<D>::ROW;
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  T* k_s = reinterpret_cast<T*>(smem_bytes);  // [BC][ROW]
  T* v_s = k_s + BC * ROW;                    // [BC][ROW]
  T* q_s = v_s + BC * ROW;                    // [2][BR][ROW]
  T* go_s = q_s + 2 * BR * ROW;               // [2][BR][ROW]
  float* lse_s = reinterpret_cast<float*>(go_s + 2 * BR * ROW);  // [2][BR], base 2
  float* delta_s = lse_s + 2 * BR;                               // [2][BR]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
  const int bk = blockIdx.y, b = bk / a.Hkv, hk = bk % a.Hkv, heads = a.H / a.Hkv;
  const int key0 = blockIdx.x * BC;  // causal: the first key blocks have the longest walks, and go first
  const int key_lo = key0 + warp * 16 + group, key_hi = key_lo + 8;
  const T* k_head = k + static_cast<int64_t>(bk) * a.S * D;
  const T* v_head = v + static_cast<int64_t>(bk) * a.S * D;
  load_tile_async<T, D>(k_s, k_head, key0, BC, a.S);
  load_tile_async<T, D>(v_s, v_head, key0, BC, a.S);

  // The walk: (query head, query tile) pairs; causal: tiles before the block's first key see none of it.
  const int first_tile = a.causal ? key0 / BR : 0;
  const int tiles_per_head = (a.L + BR - 1) / BR - first_tile;
  const int steps = tiles_per_head > 0 ? tiles_per_head * heads : 0;
  auto load_step = [&](int step, int buf) {
    const int h = hk * heads + step / tiles_per_head, i0 = (first_tile + step % tiles_per_head) * BR;
    const int64_t bh = static_cast<int64_t>(b) * a.H + h;
    load_tile_async<T, D>(q_s + buf * BR * ROW, q + bh * a.L * D, i0, BR, a.L);
    load_tile_async<T, D>(go_s + buf * BR * ROW, grad_o + bh * a.L * D, i0, BR, a.L);
    for (int r = threadIdx.x; r < BR; r += blockDim.x) {
      const int i = i0 + r;
      lse_s[buf * BR + r] = i < a.L ? lse_base2(lse[bh * a.L + i]) : INFINITY;
      delta_s[buf * BR + r] = i < a.L ? delta[bh * a.L + i] : 0.f;
    }
  };
  if (steps > 0) load_step(0, 0);
  copy_async_commit();

  float dk_acc[D / 8][4], dv_acc[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk_acc[n][e] = dv_acc[n][e] = 0.f;

  for (int step = 0; step < steps; ++step) {
    const int buf = step & 1;
    if (step + 1 < steps) load_step(step + 1, buf ^ 1);
    copy_async_commit();
    copy_async_wait<1>();
    __syncthreads();
    const int h = hk * heads + step / tiles_per_head, i0 = (first_tile + step % tiles_per_head) * BR;
    const T* qt = q_s + buf * BR * ROW;
    const T* got = go_s + buf * BR * ROW;
    const float* lse_t = lse_s + buf * BR;
    const float* delta_t = delta_s + buf * BR;

    float st[BR / 8][4], dpt[BR / 8][4];  // Sᵀ and dPᵀ: this warp's 16 keys × BR queries
#pragma unroll
    for (int n = 0; n < BR / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) st[n][e] = dpt[n][e] = 0.f;
    product_rows_rows<T, D, BR / 8>(st, k_s + warp * 16 * ROW, qt, lane);
    product_rows_rows<T, D, BR / 8>(dpt, v_s + warp * 16 * ROW, got, lane);
    // This warp's 16 keys against the tile's queries: only a tile that meets the mask, the
    // causal diagonal or the end of the keys looks at each (key, query) pair; the others fold
    // the scale into the exponent's FFMA.
    const int warp_key0 = key0 + warp * 16;
    const bool edge = !a.fold_interior || a.mask != nullptr || warp_key0 + 16 > a.S || (a.causal && warp_key0 + 15 > i0);
#pragma unroll
    for (int n = 0; n < BR / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = n * 8 + 2 * quad + (e & 1);
        float p;
        if (!edge) {
          p = exp2_approx(fmaf(st[n][e], a.scale_log2, -lse_t[r]));
        } else {
          const int key = e < 2 ? key_lo : key_hi, i = i0 + r;
          float x = st[n][e] * a.scale_log2;
          if ((a.causal && key > i) || key >= a.S) {
            x = -INFINITY;
          } else if (a.mask != nullptr && i < a.L) {
            x += mask_term(a.mask[b * a.ms0 + h * a.ms1 + i * a.ms2 + key * a.ms3]) * log2_e;
          }
          p = exp2_approx(x - lse_t[r]);
        }
        st[n][e] = p;
        dpt[n][e] = p * (dpt[n][e] - delta_t[r]);
      }
    product_acc_rows<T, D, BR / 16>(dv_acc, st, got, lane);
    product_acc_rows<T, D, BR / 16>(dk_acc, dpt, qt, lane);
    __syncthreads();  // the buffer is refilled by the next step's loads
  }
  copy_async_wait<0>();

  T* dk_head = dk + static_cast<int64_t>(bk) * a.S * D;
  T* dv_head = dv + static_cast<int64_t>(bk) * a.S * D;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    const int col = n * 8 + 2 * quad;
    if (key_lo < a.S) {
      *reinterpret_cast<uint32_t*>(dk_head + static_cast<int64_t>(key_lo) * D + col) =
          pack_pair<T>(dk_acc[n][0] * a.scale, dk_acc[n][1] * a.scale);
      *reinterpret_cast<uint32_t*>(dv_head + static_cast<int64_t>(key_lo) * D + col) = pack_pair<T>(dv_acc[n][0], dv_acc[n][1]);
    }
    if (key_hi < a.S) {
      *reinterpret_cast<uint32_t*>(dk_head + static_cast<int64_t>(key_hi) * D + col) =
          pack_pair<T>(dk_acc[n][2] * a.scale, dk_acc[n][3] * a.scale);
      *reinterpret_cast<uint32_t*>(dv_head + static_cast<int64_t>(key_hi) * D + col) = pack_pair<T>(dv_acc[n][2], dv_acc[n][3]);
    }
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(mma_backward_warps * 32)
flash_backward_dq_mma_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                             const T* __restrict__ grad_o, const float* __restrict__ lse,
                             const float* __restrict__ delta, T* __restrict__ dq, mma_backward_args a) {
  constexpr int BR = 16 * mma_backward_warps, BC = mma_backward_tile, ROW = mma_tile<D>::ROW;
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  T* q_s = reinterpret_cast<T*>(smem_bytes);  // [BR][ROW]
  T* go_s = q_s + BR * ROW;                   // [BR][ROW]
  T* k_s = go_s + BR * ROW;                   // [2][BC][ROW]
  T* v_s = k_s + 2 * BC * ROW;                // [2][BC][ROW]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
  const int bh = blockIdx.y, b = bh / a.H, h = bh % a.H, hk = h / (a.H / a.Hkv);
  const int q0 = (a.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * BR;  // causal: the longest first
  const int row_lo = q0 + warp * 16 + group, row_hi = row_lo + 8;
  const T* k_head = k + (static_cast<int64_t>(b) * a.Hkv + hk) * a.S * D;
  const T* v_head = v + (static_cast<int64_t>(b) * a.Hkv + hk) * a.S * D;
  load_tile_async<T, D>(q_s, q + static_cast<int64_t>(bh) * a.L * D, q0, BR, a.L);
  load_tile_async<T, D>(go_s, grad_o + static_cast<int64_t>(bh) * a.L * D, q0, BR, a.L);
  const int visible = a.causal ? min(a.S, q0 + BR) : a.S;
  const int tiles = (visible + BC - 1) / BC;
  if (tiles > 0) {
    load_tile_async<T, D>(k_s, k_head, 0, BC, a.S);
    load_tile_async<T, D>(v_s, v_head, 0, BC, a.S);
  }
  copy_async_commit();
  const float lse_lo = row_lo < a.L ? lse_base2(lse[static_cast<int64_t>(bh) * a.L + row_lo]) : INFINITY;
  const float lse_hi = row_hi < a.L ? lse_base2(lse[static_cast<int64_t>(bh) * a.L + row_hi]) : INFINITY;
  const float delta_lo = row_lo < a.L ? delta[static_cast<int64_t>(bh) * a.L + row_lo] : 0.f;
  const float delta_hi = row_hi < a.L ? delta[static_cast<int64_t>(bh) * a.L + row_hi] : 0.f;

  float dq_acc[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) dq_acc[n][0] = dq_acc[n][1] = dq_acc[n][2] = dq_acc[n][3] = 0.f;

  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1;
    if (t + 1 < tiles) {
      load_tile_async<T, D>(k_s + (buf ^ 1) * BC * ROW, k_head, (t + 1) * BC, BC, a.S);
      load_tile_async<T, D>(v_s + (buf ^ 1) * BC * ROW, v_head, (t + 1) * BC, BC, a.S);
    }
    copy_async_commit();
    copy_async_wait<1>();
    __syncthreads();
    const T* kt = k_s + buf * BC * ROW;
    const T* vt = v_s + buf * BC * ROW;
    float s[BC / 8][4], dp[BC / 8][4];
#pragma unroll
    for (int n = 0; n < BC / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = dp[n][e] = 0.f;
    product_rows_rows<T, D, BC / 8>(s, q_s + warp * 16 * ROW, kt, lane);
    product_rows_rows<T, D, BC / 8>(dp, go_s + warp * 16 * ROW, vt, lane);
    const int key0 = t * BC;
    // As in dK, dV: pair by pair only where the tile meets the mask, the diagonal or the end.
    const bool edge = !a.fold_interior || a.mask != nullptr || key0 + BC > a.S || (a.causal && key0 + BC - 1 > q0 + warp * 16);
#pragma unroll
    for (int n = 0; n < BC / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float row_lse = e < 2 ? lse_lo : lse_hi;
        float p;
        if (!edge) {
          p = exp2_approx(fmaf(s[n][e], a.scale_log2, -row_lse));
        } else {
          const int row = e < 2 ? row_lo : row_hi, key = key0 + n * 8 + 2 * quad + (e & 1);
          float x = s[n][e] * a.scale_log2;
          if (key >= a.S || (a.causal && key > row)) {
            x = -INFINITY;
          } else if (a.mask != nullptr && row < a.L) {
            x += mask_term(a.mask[b * a.ms0 + h * a.ms1 + row * a.ms2 + key * a.ms3]) * log2_e;
          }
          p = exp2_approx(x - row_lse);
        }
        s[n][e] = p * (dp[n][e] - (e < 2 ? delta_lo : delta_hi));  // dS
      }
    product_acc_rows<T, D, BC / 16>(dq_acc, s, kt, lane);
    __syncthreads();
  }
  copy_async_wait<0>();

  T* dq_head = dq + static_cast<int64_t>(bh) * a.L * D;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    const int col = n * 8 + 2 * quad;
    if (row_lo < a.L)
      *reinterpret_cast<uint32_t*>(dq_head + static_cast<int64_t>(row_lo) * D + col) =
          pack_pair<T>(dq_acc[n][0] * a.scale, dq_acc[n][1] * a.scale);
    if (row_hi < a.L)
      *reinterpret_cast<uint32_t*>(dq_head + static_cast<int64_t>(row_hi) * D + col) =
          pack_pair<T>(dq_acc[n][2] * a.scale, dq_acc[n][3] * a.scale);
  }
}

template <typename T, int D>
constexpr int dkdv_mma_shared_bytes() {
  return (2 * 16 * mma_backward_warps + 4 * mma_backward_tile) * mma_tile<D>::ROW * static_cast<int>(sizeof(T)) +
         4 * mma_backward_tile * static_cast<int>(sizeof(float));
}
template <typename T, int D>
constexpr int dq_mma_shared_bytes() {
  return (2 * 16 * mma_backward_warps + 4 * mma_backward_tile) * mma_tile<D>::ROW * static_cast<int>(sizeof(T));
}

}  // namespace attn::cuda_kernels
