// The fused forward and backward on CUDA cores, for every shape and element type (float32 too):
// one thread per query row (forward, dQ) or key row (dK, dV), key or query tiles shared through
// shared memory, float32 arithmetic with float64 sums for float32 inputs (sum_t). Simple, and
// exact to float32 rounding; the tensor-core kernels are the fast path where their shapes
// apply. The backward recomputes P from the forward's lse and writes each gradient row from one
// thread: no atomics, the same bits from run to run.
#pragma once

#include <cmath>

#include "cuda/cuda_problem.hpp"
#include "cuda/device_math.cuh"

namespace attn::cuda_kernels {

constexpr int cores_rows = 64;  // threads (rows) per block
constexpr int cores_tile = 16;  // rows of the other operand per shared-memory tile

struct cores_args {
  int H, Hkv, L, S, D, Dv;
  int64_t ms0, ms1, ms2, ms3;
  const float* mask;
  float scale;
  bool causal;
};

// score·(natural log units) of query row i against key j, mask and causal rule applied.
__device__ __forceinline__ float masked_score(const cores_args& a, float dot, int b, int h, int i, int j) {
  if (a.causal && j > i) return -INFINITY;
  float x = dot * a.scale;
  if (a.mask != nullptr) x += mask_term(a.mask[b * a.ms0 + h * a.ms1 + i * a.ms2 + j * a.ms3]);
  return x;
}

// Forward: o = softmax(q·kᵀ·scale + mask)·v and lse, DMAX ≥ max(D, Dv).
template <typename T, int DMAX>
__global__ void __launch_bounds__(cores_rows)
flash_forward_cores_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                           T* __restrict__ o, float* __restrict__ lse, cores_args a) {
  __shared__ float k_s[cores_tile][DMAX], v_s[cores_tile][DMAX];
  const int bh = blockIdx.y, b = bh / a.H, h = bh % a.H, hk = h / (a.H / a.Hkv);
  const int i = blockIdx.x * cores_rows + threadIdx.x;
  const bool row = i < a.L;
  const T* k_head = k + (static_cast<int64_t>(b) * a.Hkv + hk) * a.S * a.D;
  const T* v_head = v + (static_cast<int64_t>(b) * a.Hkv + hk) * a.S * a.Dv;
  using A = sum_t<T>;
  float qi[DMAX];
  A acc[DMAX];
#pragma unroll
  for (int d = 0; d < DMAX; ++d) {
    qi[d] = row && d < a.D ? to_float(q[(static_cast<int64_t>(bh) * a.L + i) * a.D + d]) : 0.f;
    acc[d] = 0;
  }
  float m = -INFINITY;
  A l = 0;
  const int last = a.causal ? min(a.S, (blockIdx.x + 1) * cores_rows) : a.S;
  for (int j0 = 0; j0 < last; j0 += cores_tile) {
    __syncthreads();
    for (int e = threadIdx.x; e < cores_tile * DMAX; e += cores_rows) {
      const int r = e / DMAX, d = e % DMAX, j = j0 + r;
      k_s[r][d] = j < a.S && d < a.D ? to_float(k_head[static_cast<int64_t>(j) * a.D + d]) : 0.f;
      v_s[r][d] = j < a.S && d < a.Dv ? to_float(v_head[static_cast<int64_t>(j) * a.Dv + d]) : 0.f;
    }
    __syncthreads();
    if (!row) continue;
    for (int r = 0; r < cores_tile && j0 + r < a.S; ++r) {
      A dot = 0;
#pragma unroll
      for (int d = 0; d < DMAX; ++d) dot += static_cast<A>(qi[d]) * k_s[r][d];
      const float x = masked_score(a, static_cast<float>(dot), b, h, i, j0 + r);
      if (x == -INFINITY) continue;
      if (x > m) {  // a new max: rescale what is summed so far
        const A alpha = expf(m - x);
        l *= alpha;
#pragma unroll
        for (int d = 0; d < DMAX; ++d) acc[d] *= alpha;
        m = x;
      }
      const A p = expf(x - m);
      l += p;
#pragma unroll
      for (int d = 0; d < DMAX; ++d) acc[d] += p * v_s[r][d];
    }
  }
  if (!row) return;
  const A inv = l > 0 ? 1 / l : 0;
  for (int d = 0; d < a.Dv; ++d)
    o[(static_cast<int64_t>(bh) * a.L + i) * a.Dv + d] = from_float<T>(static_cast<float>(acc[d] * inv));
  if (lse != nullptr) lse[static_cast<int64_t>(bh) * a.L + i] = l > 0 ? m + static_cast<float>(log(l)) : -INFINITY;
}

// dK and dV: one thread per key row of a K/V head, over every query row of the query heads
// that read it (grouped heads included), in a fixed order.
template <typename T, int DMAX>
__global__ void __launch_bounds__(cores_rows)
flash_backward_dkdv_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                           const T* __restrict__ grad_o, const float* __restrict__ lse,
                           const float* __restrict__ delta, T* __restrict__ dk, T* __restrict__ dv, cores_args a) {
  __shared__ float q_s[cores_tile][DMAX], go_s[cores_tile][DMAX], lse_s[cores_tile], delta_s[cores_tile];
  const int bk = blockIdx.y, b = bk / a.Hkv, hk = bk % a.Hkv, group = a.H / a.Hkv;
  const int j = blockIdx.x * cores_rows + threadIdx.x;
  const bool row = j < a.S;
  using A = sum_t<T>;
  float kj[DMAX], vj[DMAX];
  A dkj[DMAX], dvj[DMAX];
#pragma unroll
  for (int d = 0; d < DMAX; ++d) {
    kj[d] = row && d < a.D ? to_float(k[(static_cast<int64_t>(bk) * a.S + j) * a.D + d]) : 0.f;
    vj[d] = row && d < a.Dv ? to_float(v[(static_cast<int64_t>(bk) * a.S + j) * a.Dv + d]) : 0.f;
    dkj[d] = dvj[d] = 0;
  }
  const int first = a.causal ? blockIdx.x * cores_rows : 0;  // causal: queries before the block's keys see none of them
  for (int h = hk * group; h < (hk + 1) * group; ++h) {
    const int64_t bh = static_cast<int64_t>(b) * a.H + h;
    for (int i0 = first; i0 < a.L; i0 += cores_tile) {
      __syncthreads();
      for (int e = threadIdx.x; e < cores_tile * DMAX; e += cores_rows) {
        const int r = e / DMAX, d = e % DMAX, i = i0 + r;
        q_s[r][d] = i < a.L && d < a.D ? to_float(q[(bh * a.L + i) * a.D + d]) : 0.f;
        go_s[r][d] = i < a.L && d < a.Dv ? to_float(grad_o[(bh * a.L + i) * a.Dv + d]) : 0.f;
      }
      if (threadIdx.x < cores_tile) {
        const int i = i0 + threadIdx.x;
        lse_s[threadIdx.x] = i < a.L ? lse[bh * a.L + i] : -INFINITY;
        delta_s[threadIdx.x] = i < a.L ? delta[bh * a.L + i] : 0.f;
      }
      __syncthreads();
      if (!row) continue;
      for (int r = 0; r < cores_tile && i0 + r < a.L; ++r) {
        if (lse_s[r] == -INFINITY) continue;  // a row with no visible key: P = 0
        A dot = 0, dp = 0;
#pragma unroll
        for (int d = 0; d < DMAX; ++d) {
          dot += static_cast<A>(q_s[r][d]) * kj[d];
          dp += static_cast<A>(go_s[r][d]) * vj[d];
        }
        const float x = masked_score(a, static_cast<float>(dot), b, h, i0 + r, j);
        if (x == -INFINITY) continue;
        const A p = expf(x - lse_s[r]);
        const A ds = p * (dp - delta_s[r]);
#pragma unroll
        for (int d = 0; d < DMAX; ++d) {
          dvj[d] += p * go_s[r][d];
          dkj[d] += ds * q_s[r][d];
        }
      }
    }
  }
  if (!row) return;
  for (int d = 0; d < a.D; ++d)
    dk[(static_cast<int64_t>(bk) * a.S + j) * a.D + d] = from_float<T>(static_cast<float>(dkj[d] * a.scale));
  for (int d = 0; d < a.Dv; ++d) dv[(static_cast<int64_t>(bk) * a.S + j) * a.Dv + d] = from_float<T>(static_cast<float>(dvj[d]));
}

// dQ: one thread per query row, over the keys it sees.
template <typename T, int DMAX>
__global__ void __launch_bounds__(cores_rows)
flash_backward_dq_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                         const T* __restrict__ grad_o, const float* __restrict__ lse,
                         const float* __restrict__ delta, T* __restrict__ dq, cores_args a) {
  __shared__ float k_s[cores_tile][DMAX], v_s[cores_tile][DMAX];
  const int bh = blockIdx.y, b = bh / a.H, h = bh % a.H, hk = h / (a.H / a.Hkv);
  const int i = blockIdx.x * cores_rows + threadIdx.x;
  const bool row = i < a.L;
  const T* k_head = k + (static_cast<int64_t>(b) * a.Hkv + hk) * a.S * a.D;
  const T* v_head = v + (static_cast<int64_t>(b) * a.Hkv + hk) * a.S * a.Dv;
  using A = sum_t<T>;
  float qi[DMAX], goi[DMAX];
  A dqi[DMAX];
#pragma unroll
  for (int d = 0; d < DMAX; ++d) {
    qi[d] = row && d < a.D ? to_float(q[(static_cast<int64_t>(bh) * a.L + i) * a.D + d]) : 0.f;
    goi[d] = row && d < a.Dv ? to_float(grad_o[(static_cast<int64_t>(bh) * a.L + i) * a.Dv + d]) : 0.f;
    dqi[d] = 0;
  }
  const float lse_i = row ? lse[static_cast<int64_t>(bh) * a.L + i] : -INFINITY;
  const float delta_i = row ? delta[static_cast<int64_t>(bh) * a.L + i] : 0.f;
  const int last = a.causal ? min(a.S, (blockIdx.x + 1) * cores_rows) : a.S;
  for (int j0 = 0; j0 < last; j0 += cores_tile) {
    __syncthreads();
    for (int e = threadIdx.x; e < cores_tile * DMAX; e += cores_rows) {
      const int r = e / DMAX, d = e % DMAX, j = j0 + r;
      k_s[r][d] = j < a.S && d < a.D ? to_float(k_head[static_cast<int64_t>(j) * a.D + d]) : 0.f;
      v_s[r][d] = j < a.S && d < a.Dv ? to_float(v_head[static_cast<int64_t>(j) * a.Dv + d]) : 0.f;
    }
    __syncthreads();
    if (!row || lse_i == -INFINITY) continue;
    for (int r = 0; r < cores_tile && j0 + r < a.S; ++r) {
      A dot = 0, dp = 0;
#pragma unroll
      for (int d = 0; d < DMAX; ++d) {
        dot += static_cast<A>(qi[d]) * k_s[r][d];
        dp += static_cast<A>(goi[d]) * v_s[r][d];
      }
      const float x = masked_score(a, static_cast<float>(dot), b, h, i, j0 + r);
      if (x == -INFINITY) continue;
      const A ds = static_cast<A>(expf(x - lse_i)) * (dp - delta_i);
#pragma unroll
      for (int d = 0; d < DMAX; ++d) dqi[d] += ds * k_s[r][d];
    }
  }
  if (!row) return;
  for (int d = 0; d < a.D; ++d)
    dq[(static_cast<int64_t>(bh) * a.L + i) * a.D + d] = from_float<T>(static_cast<float>(dqi[d] * a.scale));
}

}  // namespace attn::cuda_kernels
