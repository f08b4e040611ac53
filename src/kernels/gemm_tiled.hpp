// The blocked sgemm behind kernels::gemm, written once over simd.hpp's vector types and compiled
// once per instruction set (gemm_avx512.cpp, gemm_avx2.cpp).
//
// For each block of NC columns and KC steps of the inner dimension, the block of op(B) is packed
// once into panels of NR columns, shared by the threads; each task packs MR rows of op(A) and
// runs the micro-kernel (MR × NR sums held in registers) across a run of those panels. Packing
// makes every load of the inner loop contiguous, whatever the transposes.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "kernels/gemm.hpp"
#include "kernels/simd.hpp"

namespace attn::kernels {

template <class V, int MR>
class gemm_tiled {
 public:
  static constexpr int W = V::W;
  static constexpr int NR = 2 * W;     // two vectors of columns
  static constexpr int64_t KC = 256;   // MR×KC of A stays in L1, KC×NC of B in L2
  static constexpr int64_t NC = 512;   // a multiple of NR
  static_assert(NC % NR == 0);

  gemm_tiled(const gemm_args& g, int threads) : g_(g), threads_(std::max(1, threads)) {}

  void run() const {
    const int64_t m_panels = (g_.m + MR - 1) / MR;
    const int64_t widest = (std::min(NC, g_.n) + NR - 1) / NR * NR;
    float* const b_block = scratch(0, static_cast<size_t>(std::min(KC, g_.k) * widest));
#pragma omp parallel num_threads(threads_)
    {
      float* const a_panel = scratch(1, static_cast<size_t>(MR * KC));
      for (int64_t jc = 0; jc < g_.n; jc += NC) {
        const int64_t nc = std::min(NC, g_.n - jc);
        const int64_t n_panels = (nc + NR - 1) / NR;
        // Few row panels (a short sentence): split the columns too, so every thread has work.
        const int64_t n_chunks =
            std::clamp<int64_t>((2 * threads_ + m_panels - 1) / m_panels, 1, n_panels);
        for (int64_t pc = 0; pc < g_.k; pc += KC) {
          const int64_t kc = std::min(KC, g_.k - pc);
#pragma omp for schedule(static)
          for (int64_t p = 0; p < n_panels; ++p) pack_b(pc, kc, jc + p * NR, b_block + p * kc * NR);
          // (the implicit barrier: the block of B is whole before anyone reads it)
#pragma omp for schedule(static)
          for (int64_t t = 0; t < m_panels * n_chunks; ++t) {
            const int64_t i0 = (t / n_chunks) * MR, chunk = t % n_chunks;
            const int rows = static_cast<int>(std::min<int64_t>(MR, g_.m - i0));
            pack_a(i0, pc, kc, a_panel);
            const int64_t p0 = chunk * n_panels / n_chunks, p1 = (chunk + 1) * n_panels / n_chunks;
            for (int64_t p = p0; p < p1; ++p) {
              const int64_t j = jc + p * NR;
              const int cols = static_cast<int>(std::min<int64_t>(NR, g_.n - j));
              micro_kernel(kc, a_panel, b_block + p * kc * NR, g_.c + i0 * g_.ldc + j,
                           rows, cols, pc == 0 ? g_.beta : 1.0f);
            }
          }
        }
      }
    }
  }

 private:
  // Packing buffers, kept per thread from call to call (small products are common: a fresh
  // half-megabyte allocation each time cost more than the arithmetic). Slot 0: the shared block
  // of B, owned by the calling thread; slot 1: each thread's panel of A.
  static float* scratch(int slot, size_t n) {
    struct free_aligned {
      void operator()(float* p) const { ::operator delete[](p, std::align_val_t(64)); }
    };
    thread_local std::unique_ptr<float[], free_aligned> buffers[2];
    thread_local size_t sizes[2] = {0, 0};
    if (sizes[slot] < n) {
      buffers[slot].reset(static_cast<float*>(::operator new[](n * sizeof(float), std::align_val_t(64))));
      sizes[slot] = n;
    }
    return buffers[slot].get();
  }

  // op(B)[pc .. pc+kc, j0 .. j0+NR) → dst[kk·NR + c], zeros past the last column.
  void pack_b(int64_t pc, int64_t kc, int64_t j0, float* dst) const {
    const int cols = static_cast<int>(std::min<int64_t>(NR, g_.n - j0));
    if (!g_.trans_b) {  // B [k, n]: rows of B are contiguous along the columns
      for (int64_t kk = 0; kk < kc; ++kk) {
        const float* src = g_.b + (pc + kk) * g_.ldb + j0;
        float* d = dst + kk * NR;
        for (int c = 0; c < cols; ++c) d[c] = src[c];
        for (int c = cols; c < NR; ++c) d[c] = 0.0f;
      }
    } else {  // B stored [n, k]: each column of op(B) is a contiguous row of B
      for (int c = 0; c < NR; ++c) {
        const float* src = g_.b + (j0 + c) * g_.ldb + pc;
        for (int64_t kk = 0; kk < kc; ++kk) dst[kk * NR + c] = c < cols ? src[kk] : 0.0f;
      }
    }
  }

  // op(A)[i0 .. i0+MR, pc .. pc+kc) → dst[kk·MR + r], zeros past the last row.
  void pack_a(int64_t i0, int64_t pc, int64_t kc, float* dst) const {
    const int rows = static_cast<int>(std::min<int64_t>(MR, g_.m - i0));
    if (!g_.trans_a) {  // A [m, k]
      for (int r = 0; r < MR; ++r) {
        const float* src = g_.a + (i0 + r) * g_.lda + pc;
        for (int64_t kk = 0; kk < kc; ++kk) dst[kk * MR + r] = r < rows ? src[kk] : 0.0f;
      }
    } else {  // A stored [k, m]
      for (int64_t kk = 0; kk < kc; ++kk) {
        const float* src = g_.a + (pc + kk) * g_.lda + i0;
        float* d = dst + kk * MR;
        for (int r = 0; r < rows; ++r) d[r] = src[r];
        for (int r = rows; r < MR; ++r) d[r] = 0.0f;
      }
    }
  }

  // C[0 .. rows, 0 .. cols) = alpha · Ap·Bp + beta · C (beta 0: C is not read).
  void micro_kernel(int64_t kc, const float* ap, const float* bp, float* c, int rows, int cols,
                    float beta) const {
    using vec = typename V::vec;
    vec lo[MR], hi[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) lo[r] = hi[r] = V::zero();
    for (int64_t kk = 0; kk < kc; ++kk) {
      const vec b0 = V::load(bp + kk * NR), b1 = V::load(bp + kk * NR + W);
      const float* a = ap + kk * MR;
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const vec x = V::set1(a[r]);
        lo[r] = V::fmadd(x, b0, lo[r]);
        hi[r] = V::fmadd(x, b1, hi[r]);
      }
    }
    const vec alpha = V::set1(g_.alpha), vbeta = V::set1(beta);
    const int n0 = std::min(cols, W), n1 = std::max(cols - W, 0);
    for (int r = 0; r < rows; ++r) {
      float* row = c + r * g_.ldc;
      vec y0 = V::mul(lo[r], alpha), y1 = V::mul(hi[r], alpha);
      if (cols == NR) {
        if (beta != 0.0f) {
          y0 = V::fmadd(V::load(row), vbeta, y0);
          y1 = V::fmadd(V::load(row + W), vbeta, y1);
        }
        V::store(row, y0);
        V::store(row + W, y1);
      } else {
        if (beta != 0.0f) {
          y0 = V::fmadd(V::load_first(row, n0), vbeta, y0);
          if (n1 > 0) y1 = V::fmadd(V::load_first(row + W, n1), vbeta, y1);
        }
        V::store_first(row, y0, n0);
        if (n1 > 0) V::store_first(row + W, y1, n1);
      }
    }
  }

  const gemm_args& g_;
  int threads_;
};

}  // namespace attn::kernels
