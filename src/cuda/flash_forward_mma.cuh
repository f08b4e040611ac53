// The fused forward on tensor cores (FlashAttention-2's tiling): each block owns BR = 16·MT·WARPS
// query rows, each warp 16·MT of them; K and V tiles of BC keys pass through shared memory two
// deep (cp.async fills the next while the tensor cores work on this one); the softmax is
// online, in registers, in base 2; no L×S matrix is ever stored. bf16 or fp16 operands,
// float32 accumulation. Causal blocks stop at their last visible key tile.
#pragma once

#include <cmath>

#include "cuda/cuda_problem.hpp"
#include "cuda/device_math.cuh"

namespace attn::cuda_kernels {

template <int D> struct mma_tile {
  static constexpr int BC = 64;        // keys per tile
  static constexpr int ROW = D + 8;    // shared row in elements: 16 bytes of padding keep
                                       // ldmatrix's eight rows in eight different bank groups
};

// What the forward does beyond its first version (measured on an H100, docs/GPU.md), each a bit
// so that one build can time them against each other on the device:
//   fold_scale   the softmax's scale enters the exponent's FFMA (2^(s·c − m)) instead of a pass
//                of its own, on tiles with no mask or edge (c > 0 keeps max(s)·c = max(s·c));
//   split_waits  K and V tiles are separate copy groups: S = Q·Kᵀ starts when K has landed while
//                V is still on its way, and the next K loads while P·V runs;
//   q_registers  a warp of one row tile keeps its Q fragments in registers across the key tiles
//                instead of reading them from shared memory again for every tile;
//   lazy_rescale the running max moves (and O and the sums are rescaled) only when some row of
//                the warp's max has grown by more than 8 (log2 units): P = 2^(s·c − m) with m
//                up to 8 behind stays ≤ 256, exact in the end since O and the sum share one m.
//                Saves D/8·4 multiplies a row tile per key tile on most tiles.
// Which of them pay depends on the block shape and the head size: flash_forward_launch.cu
// chooses by measurement.
enum forward_variant : int { fold_scale = 1, split_waits = 2, q_registers = 4, lazy_rescale = 8 };
constexpr int forward_tuned = fold_scale | split_waits | q_registers | lazy_rescale;
constexpr int forward_lean = fold_scale | lazy_rescale;  // without the copy groups' split or Q in registers
constexpr float lazy_rescale_margin = 8.f;  // log2 units: P grows to at most 2^8 before a rescale

template <typename T, int D, int WARPS, int MT, int VARIANT = forward_tuned>
__global__ void __launch_bounds__(WARPS * 32)
flash_forward_mma_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                         T* __restrict__ o, float* __restrict__ lse, const float* __restrict__ mask,
                         int64_t ms0, int64_t ms1, int64_t ms2, int64_t ms3, int H, int Hkv, int L,
                         int S, float scale_log2, bool causal) {
  // MT tiles of 16 rows a warp: each K and V fragment read from shared memory serves MT of them.
  constexpr int WR = 16 * MT, BR = WR * WARPS, BC = mma_tile<D>::BC, ROW = mma_tile<D>::ROW;
  constexpr int THREADS = WARPS * 32, CHUNKS = D / 8;  // 16-byte chunks per row
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  T* q_s = reinterpret_cast<T*>(smem_bytes);  // [BR][ROW]
  T* k_s = q_s + BR * ROW;                    // [2][BC][ROW]
  T* v_s = k_s + 2 * BC * ROW;                // [2][BC][ROW]

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int group = lane / 4, quad = lane % 4;  // fragment row and column pair
  const int bh = blockIdx.y, b = bh / H, h = bh % H, hk = h / (H / Hkv);
  // Causal: the last query tiles see the most keys; they go first, so that the short ones fill
  // the tail of the grid rather than wait behind it.
  const int q0 = (causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * BR;
  const T* q_head = q + (static_cast<int64_t>(bh) * L) * D;
  const T* k_head = k + (static_cast<int64_t>(b) * Hkv + hk) * S * D;
  const T* v_head = v + (static_cast<int64_t>(b) * Hkv + hk) * S * D;

  auto load_rows = [&](T* dst, const T* src, int first, int rows, int limit) {
    for (int c = tid; c < rows * CHUNKS; c += THREADS) {
      const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
      const bool valid = first + r < limit;
      copy_16_async(dst + r * ROW + col, valid ? src + static_cast<int64_t>(first + r) * D + col : src, valid);
    }
  };
  // The key tiles this block needs: all, or (causal) those up to its last query row.
  const int visible = causal ? min(S, q0 + BR) : S;
  const int tiles = (visible + BC - 1) / BC;

  constexpr bool FOLD = (VARIANT & fold_scale) != 0, SPLIT = (VARIANT & split_waits) != 0;
  constexpr bool QREG = (VARIANT & q_registers) != 0 && MT == 1;
  constexpr bool LAZY = (VARIANT & lazy_rescale) != 0;
  auto k_buf = [&](int i) { return k_s + i * BC * ROW; };  // the two buffers of each
  auto v_buf = [&](int i) { return v_s + i * BC * ROW; };

  // Copy groups: [Q, K0] [V0] with split waits, [Q, K0, V0] without.
  load_rows(q_s, q_head, q0, BR, L);
  if (tiles > 0) load_rows(k_buf(0), k_head, 0, BC, S);
  if (SPLIT) copy_async_commit();
  if (tiles > 0) load_rows(v_buf(0), v_head, 0, BC, S);
  copy_async_commit();

  float o_acc[MT][D / 8][4];
  float m_run[MT][2], l_run[MT][2];  // per row tile: rows group and group + 8
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int n = 0; n < D / 8; ++n) o_acc[mt][n][0] = o_acc[mt][n][1] = o_acc[mt][n][2] = o_acc[mt][n][3] = 0.f;
    m_run[mt][0] = m_run[mt][1] = -INFINITY;
    l_run[mt][0] = l_run[mt][1] = 0.f;
  }
  const int warp_row0 = q0 + warp * WR;  // the warp's first query row
  const T* q_warp = q_s + warp * WR * ROW;
  auto load_q = [&](uint32_t f[4], int mt, int kc) {
    ldmatrix_x4(f, q_warp + (mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * ROW + kc * 16 + (lane >> 4) * 8);
  };
  uint32_t q_regs[QREG ? D / 16 : 1][4];
  if constexpr (QREG) {
    copy_async_wait<SPLIT ? 1 : 0>();
    __syncthreads();
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) load_q(q_regs[kc], 0, kc);
  }
  // The scale folds into the exponent only for c > 0 (max(s)·c = max(s·c)).
  const bool can_fold = FOLD && scale_log2 > 0.f;

  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1;
    if constexpr (SPLIT) {
      copy_async_wait<1>();  // K(t) has landed; V(t) may still be on its way
    } else {
      if (t + 1 < tiles) {  // the next tile into the other buffer while this one is used
        load_rows(k_buf(buf ^ 1), k_head, (t + 1) * BC, BC, S);
        load_rows(v_buf(buf ^ 1), v_head, (t + 1) * BC, BC, S);
      }
      copy_async_commit();
      copy_async_wait<1>();
    }
    __syncthreads();
    const T* kt = k_buf(buf);
    const T* vt = v_buf(buf);

    // S = Q·Kᵀ for this warp's rows and the tile's BC keys.
    float s[MT][BC / 8][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int n = 0; n < BC / 8; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.f;
#pragma unroll
    for (int kc = 0; kc < D / 16; ++kc) {
      uint32_t qf[QREG ? 1 : MT][4];
      if constexpr (!QREG) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) load_q(qf[mt], mt, kc);
      }
#pragma unroll
      for (int np = 0; np < BC / 16; ++np) {
        uint32_t kf[4];
        ldmatrix_x4(kf, kt + (np * 16 + (lane & 7) + (lane >> 4) * 8) * ROW + kc * 16 + ((lane >> 3) & 1) * 8);
        if constexpr (QREG) {
          mma_16x8x16<T>(s[0][2 * np], q_regs[kc], kf[0], kf[1]);
          mma_16x8x16<T>(s[0][2 * np + 1], q_regs[kc], kf[2], kf[3]);
        } else {
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma_16x8x16<T>(s[mt][2 * np], qf[mt], kf[0], kf[1]);
            mma_16x8x16<T>(s[mt][2 * np + 1], qf[mt], kf[2], kf[3]);
          }
        }
      }
    }
    if constexpr (SPLIT) {  // every warp is past S(t - 1): the other K buffer is free
      if (t + 1 < tiles) load_rows(k_buf(buf ^ 1), k_head, (t + 1) * BC, BC, S);
      copy_async_commit();
    }
    // The mask, the causal rule and the keys past S, on the tiles that meet them.
    const int key0 = t * BC;
    const bool edge = key0 + BC > S || (causal && key0 + BC - 1 > warp_row0) || mask != nullptr;
    // Scores enter the exponent as s·c − m: c = scale·log2(e) on a tile that needs nothing added
    // (folded), else 1 after a pass that scales them and adds the mask.
    const bool folded = can_fold && !edge;
    const float c = folded ? scale_log2 : 1.f;
    uint32_t p_frag[MT][BC / 16][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int row_lo = warp_row0 + mt * 16 + group, row_hi = row_lo + 8;
      if (!folded) {
#pragma unroll
        for (int n = 0; n < BC / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float x = s[mt][n][e] * scale_log2;
            if (edge) {
              const int row = e < 2 ? row_lo : row_hi, key = key0 + n * 8 + 2 * quad + (e & 1);
              if (key >= S || (causal && key > row)) {
                x = -INFINITY;
              } else if (mask != nullptr && row < L) {
                x += mask_term(mask[b * ms0 + h * ms1 + row * ms2 + key * ms3]) * log2_e;
              }
            }
            s[mt][n][e] = x;
          }
      }
      // Online softmax: each row's running max and sum; the four lanes of a quad share a row.
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < BC / 8; ++n) {
        mx[0] = fmaxf(mx[0], fmaxf(s[mt][n][0], s[mt][n][1]));
        mx[1] = fmaxf(mx[1], fmaxf(s[mt][n][2], s[mt][n][3]));
      }
      float alpha[2], base[2], m_new[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        m_new[r] = fmaxf(m_run[mt][r], mx[r] * c);
      }
      // Lazy: the whole warp keeps its maxes (and skips the rescale below) unless a row's has
      // grown past the margin; the first visible tile always moves them (from -inf).
      const bool move = !LAZY || __any_sync(0xffffffffu, m_new[0] > m_run[mt][0] + lazy_rescale_margin ||
                                                             m_new[1] > m_run[mt][1] + lazy_rescale_margin);
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float m = move ? m_new[r] : m_run[mt][r];
        // A row with no visible key yet keeps max -inf; subtracting 0 then gives exp2(-inf) = 0.
        base[r] = m == -INFINITY ? 0.f : m;
        alpha[r] = exp2_approx(m_run[mt][r] - base[r]);
        m_run[mt][r] = m;
      }
      float sum[2] = {0.f, 0.f};
#pragma unroll
      for (int n = 0; n < BC / 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][n][e] = exp2_approx(fmaf(s[mt][n][e], c, -base[e >> 1]));
        sum[0] += s[mt][n][0] + s[mt][n][1];
        sum[1] += s[mt][n][2] + s[mt][n][3];
      }
      // this lane's share of the row sums; the quad adds up at the end
      if (move) {
        l_run[mt][0] = l_run[mt][0] * alpha[0] + sum[0];
        l_run[mt][1] = l_run[mt][1] * alpha[1] + sum[1];
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          o_acc[mt][n][0] *= alpha[0];
          o_acc[mt][n][1] *= alpha[0];
          o_acc[mt][n][2] *= alpha[1];
          o_acc[mt][n][3] *= alpha[1];
        }
      } else {
        l_run[mt][0] += sum[0];
        l_run[mt][1] += sum[1];
      }
      // S's accumulator layout is P's A fragment, two key groups of 8 per 16.
#pragma unroll
      for (int kc = 0; kc < BC / 16; ++kc) {
        p_frag[mt][kc][0] = pack_pair<T>(s[mt][2 * kc][0], s[mt][2 * kc][1]);
        p_frag[mt][kc][1] = pack_pair<T>(s[mt][2 * kc][2], s[mt][2 * kc][3]);
        p_frag[mt][kc][2] = pack_pair<T>(s[mt][2 * kc + 1][0], s[mt][2 * kc + 1][1]);
        p_frag[mt][kc][3] = pack_pair<T>(s[mt][2 * kc + 1][2], s[mt][2 * kc + 1][3]);
      }
    }
    if constexpr (SPLIT) {
      copy_async_wait<1>();  // V(t) has landed; K(t + 1) may still be on its way
      __syncthreads();
    }
    // O += P·V
#pragma unroll
    for (int kc = 0; kc < BC / 16; ++kc) {
#pragma unroll
      for (int np = 0; np < D / 16; ++np) {
        uint32_t vf[4];
        ldmatrix_x4_trans(vf, vt + (kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * ROW + np * 16 + (lane >> 4) * 8);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma_16x8x16<T>(o_acc[mt][2 * np], p_frag[mt][kc], vf[0], vf[1]);
          mma_16x8x16<T>(o_acc[mt][2 * np + 1], p_frag[mt][kc], vf[2], vf[3]);
        }
      }
    }
    if constexpr (SPLIT) {  // every warp is past P·V(t - 1): the other V buffer is free
      if (t + 1 < tiles) load_rows(v_buf(buf ^ 1), v_head, (t + 1) * BC, BC, S);
      copy_async_commit();
    } else {
      __syncthreads();  // every warp is done with this buffer before the next tile's loads refill it
    }
  }
  copy_async_wait<0>();

  T* o_head = o + static_cast<int64_t>(bh) * L * D;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    float inv[2];
    int rows[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_run[mt][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      l_run[mt][r] = l;
      inv[r] = l > 0.f ? 1.f / l : 0.f;  // a row whose every key is masked: output 0, as on the CPU
      rows[r] = warp_row0 + mt * 16 + group + 8 * r;
    }
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const int col = n * 8 + 2 * quad;
#pragma unroll
      for (int r = 0; r < 2; ++r)
        if (rows[r] < L)
          *reinterpret_cast<uint32_t*>(o_head + static_cast<int64_t>(rows[r]) * D + col) =
              pack_pair<T>(o_acc[mt][n][2 * r] * inv[r], o_acc[mt][n][2 * r + 1] * inv[r]);
    }
    if (lse != nullptr && quad == 0) {
#pragma unroll
      for (int r = 0; r < 2; ++r)
        if (rows[r] < L)
          lse[static_cast<int64_t>(bh) * L + rows[r]] =
              l_run[mt][r] > 0.f ? (m_run[mt][r] + log2f(l_run[mt][r])) * ln_2 : -INFINITY;  // -inf: no key
    }
  }
}

template <typename T, int D, int WARPS, int MT>
constexpr int flash_forward_mma_shared_bytes() {
  return (16 * MT * WARPS + 4 * mma_tile<D>::BC) * mma_tile<D>::ROW * static_cast<int>(sizeof(T));
}

}  // namespace attn::cuda_kernels
