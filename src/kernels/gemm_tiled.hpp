// The blocked sgemm behind kernels::gemm, written once over simd.hpp's vector types and compiled
// once per instruction set (gemm_avx512.cpp, gemm_avx2.cpp).
//
// Each thread owns a block of C. For each block of NC columns and kc steps of the inner
// dimension, it packs that block of op(B) into panels of NR columns, then for each MR rows of
// op(A) packs them and runs the micro-kernel (MR × NR sums held in registers) across the panels.
// Packing makes every load of the inner loop contiguous, whatever the transposes. A B used in
// many products (a layer's weights) can be packed once, whole (pack_whole_b), and passed in.
// The last panel is one vector wide (NR / 2) when that covers the columns left: a width of 100
// (GloVe's, hence the language model's) is then 3 panels of 32 and one of 16 rather than four of
// 32, an eighth fewer multiply-adds.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "kernels/gemm.hpp"
#include "kernels/flush_denormals.hpp"
#include "kernels/simd.hpp"

namespace attn::kernels {

// Packing buffers, kept per thread from call to call (small products are common: a fresh
// half-megabyte allocation each time cost more than the arithmetic). Per instruction set V, so
// that no code compiled for one set is shared with another's translation unit.
template <class V, class T>
T* packing_scratch(int slot, size_t n) {
  struct free_aligned {
    void operator()(T* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  thread_local std::unique_ptr<T[], free_aligned> buffers[2];
  thread_local size_t sizes[2] = {0, 0};
  if (sizes[slot] < n) {
    buffers[slot].reset(static_cast<T*>(::operator new[](n * sizeof(T), std::align_val_t(64))));
    sizes[slot] = n;
  }
  return buffers[slot].get();
}

// A micro-kernel's MR × 2W sums lo | hi into C[i0 .. i0+rows, j0 .. j0+cols): alpha · sums +
// beta · C (beta 0: C is not read), + bias[0 .. cols) when given.
template <class V>
[[gnu::always_inline]] inline void store_tile(const gemm_args& g, const typename V::vec* lo,
                                              const typename V::vec* hi, int64_t i0, int64_t j0, int rows,
                                              int cols, float beta, const float* bias) {
  using vec = typename V::vec;
  constexpr int W = V::W, NR = 2 * W;
  const vec alpha = V::set1(g.alpha), vbeta = V::set1(beta);
  const int n0 = std::min(cols, W), n1 = std::max(cols - W, 0);
  vec bias0 = V::zero(), bias1 = V::zero();
  if (bias != nullptr) {
    bias0 = cols == NR ? V::load(bias) : V::load_first(bias, n0);
    bias1 = cols == NR ? V::load(bias + W) : V::load_first(bias + W, n1);
  }
  for (int r = 0; r < rows; ++r) {
    float* row = g.c_at(i0 + r, j0);
    vec y0 = V::mul(lo[r], alpha), y1 = V::mul(hi[r], alpha);
    if (cols == NR) {
      if (beta != 0.0f) {
        y0 = V::fmadd(V::load(row), vbeta, y0);
        y1 = V::fmadd(V::load(row + W), vbeta, y1);
      }
      if (bias != nullptr) y0 = V::add(y0, bias0), y1 = V::add(y1, bias1);
      V::store(row, y0);
      V::store(row + W, y1);
    } else {
      if (beta != 0.0f) {
        y0 = V::fmadd(V::load_first(row, n0), vbeta, y0);
        if (n1 > 0) y1 = V::fmadd(V::load_first(row + W, n1), vbeta, y1);
      }
      if (bias != nullptr) y0 = V::add(y0, bias0), y1 = V::add(y1, bias1);
      V::store_first(row, y0, n0);
      if (n1 > 0) V::store_first(row + W, y1, n1);
    }
  }
}

// Runs block(i_begin, i_end, j_begin, j_end) on each of `threads` OpenMP threads: each takes a
// share of the panels of MR rows (or, for a short input, of the panels of NR columns) and packs
// what it needs itself: no barrier inside, which on a busy machine costs far more than packing
// B twice.
template <class Block>
void share_among_threads(const gemm_args& g, int mr, int nr, int threads, const Block& block) {
  const int64_t m_panels = (g.m + mr - 1) / mr, n_panels = (g.n + nr - 1) / nr;
  const bool split_rows = m_panels >= 4 * threads || m_panels >= n_panels;
#pragma omp parallel num_threads(threads)
  {
    const denormals_flushed flushed;
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t parts = split_rows ? m_panels : n_panels;
    const int64_t first = t * parts / nt, last = (t + 1) * parts / nt;
    const int64_t i_begin = split_rows ? first * mr : 0;
    const int64_t i_end = split_rows ? std::min(g.m, last * mr) : g.m;
    const int64_t j_begin = split_rows ? 0 : first * nr;
    const int64_t j_end = split_rows ? g.n : std::min(g.n, last * nr);
    if (i_begin < i_end && j_begin < j_end) block(i_begin, i_end, j_begin, j_end);
  }
}

template <class V, int MR>
class gemm_tiled {
 public:
  static constexpr int W = V::W;
  static constexpr int NR = 2 * W;     // two vectors of columns
  // The inner dimension goes in equal blocks of at most KC (k = 768: three of 256, k = 300: two
  // of 150). Every block beyond the first reloads and stores C, but the kc × NC block of B must
  // stay in L2 while each MR rows of A sweep it: blocks of 512 × 2048 (4 MiB) ran a 2048 × 2048
  // × 512 product at 36% of the peak, blocks of 256 × 1024 (1 MiB) at 65%. A function of k
  // alone: the bits do not depend on the threads, and B packed once is blocked as the products
  // read it.
  static constexpr int64_t KC = 256;
  static int64_t block_k(int64_t k) {
    const int64_t blocks = std::max<int64_t>(1, (k + KC - 1) / KC);
    return (k + blocks - 1) / blocks;
  }
  static constexpr int64_t NC = 1024;  // a multiple of NR; kc·NC of B (1 MiB at most) per thread
  static_assert(NC % NR == 0);
  // Rows of a transposed A packed together: MC·kc floats (512 KiB at most) beside B's block.
  // Each of A's rows is then read as a run of 2 KiB, which the prefetcher follows: the tied
  // output's dlogitsᵀ·hidden (4,096 × 100 × 4,096) ran at 125–130 GFLOP/s in runs of 128
  // rows and at 163–164 in runs of 512.
  static constexpr int64_t MC = 512 / MR * MR;

  gemm_tiled(const gemm_args& g, int threads, const b_panels& packed = {})
      : g_(g), threads_(std::max(1, threads)), packed_(packed) {}

  // Columns of a packed matrix: whole panels, the last one W wide when that covers the rest.
  static int64_t padded_n(int64_t n) {
    const int64_t whole = (n + NR - 1) / NR * NR;
    return whole - n >= W ? whole - W : whole;
  }

  // op(B) → dst in block()'s order: block pc (kc rows) at pc·padded_n, its panel of columns j
  // at j·kc within, laid out [kk·width + c] (width NR, or W for a narrow last panel). The bits
  // of packing per call, so the products are identical either way.
  void pack_whole_b(float* dst) const {
    const int64_t kb = block_k(g_.k);
    for (int64_t pc = 0; pc < g_.k; pc += kb) {
      const int64_t kc = std::min(kb, g_.k - pc);
      for (int64_t j = 0; j < g_.n; j += NR)
        pack_b(pc, kc, j, g_.n, panel_width(padded_n(g_.n) - j), dst + pc * padded_n(g_.n) + j * kc);
    }
  }

  void run() const {
    share_among_threads(g_, MR, NR, threads_, [this](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
      block(i0, i1, j0, j1);
    });
  }

 private:
  // C[i_begin .. i_end, j_begin .. j_end) on the calling thread.
  void block(int64_t i_begin, int64_t i_end, int64_t j_begin, int64_t j_end) const {
    const bool packed = packed_.data != nullptr;
    const int64_t kb = block_k(g_.k);
    // The width of B's panel layout from this product's column 0 on: only its last panel may be
    // narrow.
    const int64_t layout = packed ? packed_.width - packed_.first_column : padded_n(g_.n);
    // A stored [k, m] (a weight gradient dyᵀ·x, the tied table's dlogitsᵀ·hidden) is packed MC
    // rows at a time: each of A's kc rows is then read as one run of MC floats rather than 8 at
    // a time, 8 panels apart — with A's rows a vocabulary apart (16 KiB), every such read missed.
    const int64_t mc = g_.trans_a ? MC : MR;
    float* const b_scratch = packed ? nullptr : scratch(0, static_cast<size_t>(kb * NC));
    float* const a_block = scratch(1, static_cast<size_t>(mc * kb));
    for (int64_t jc = j_begin; jc < j_end; jc += NC) {
      const int64_t nc = std::min(NC, j_end - jc);
      for (int64_t pc = 0; pc < g_.k; pc += kb) {
        const int64_t kc = std::min(kb, g_.k - pc);
        const float* b_block = b_scratch;
        if (packed)
          b_block = packed_.data + pc * packed_.width + (packed_.first_column + jc) * kc;
        else
          pack_b_block(pc, kc, jc, jc + nc, layout, b_scratch);
        for (int64_t ic = i_begin; ic < i_end; ic += mc) {
          const int64_t ic_end = std::min(i_end, ic + mc);
          if (g_.trans_a) pack_a_transposed(ic, ic_end, pc, kc, a_block);
          for (int64_t i0 = ic; i0 < ic_end; i0 += MR) {
            const int rows = static_cast<int>(std::min<int64_t>(MR, i_end - i0));
            const float* a_panel = a_block + (i0 - ic) * kc;
            if (!g_.trans_a) pack_a(i0, i_end, pc, kc, a_block);
            for (int64_t j = jc; j < jc + nc; j += NR) {
              const int cols = static_cast<int>(std::min<int64_t>(NR, jc + nc - j));
              const float beta = pc == 0 ? g_.beta : 1.0f;
              const float* bias = pc == 0 && g_.bias != nullptr ? g_.bias + j : nullptr;
              if (panel_width(layout - j) == W)
                micro_kernel<1>(kc, a_panel, b_block + (j - jc) * kc, i0, j, rows, cols, beta, bias);
              else
                micro_kernel<2>(kc, a_panel, b_block + (j - jc) * kc, i0, j, rows, cols, beta, bias);
            }
          }
        }
      }
    }
  }

  // Packing buffers (slot 0: the block of B, slot 1: the panel of A or, transposed, its block of
  // MC rows).
  static float* scratch(int slot, size_t n) { return packing_scratch<V, float>(slot, n); }

  // The width of the panel at a column `left` columns before the layout's end: NR, or W for
  // a narrow last panel.
  static int panel_width(int64_t left) { return left == W ? W : NR; }

  // op(B)[pc .. pc+kc, jc .. j_end) → its panels, panel j at dst + (j − jc)·kc (pack_b's layout).
  // B [k, n] goes row by row across all the panels: each of its rows is then read as one run.
  // Panel by panel, each panel's reads were kc rows apart, 32 columns each: for a wide B (a
  // feed-forward's [rows, 1,024] input, read by its weight gradient) a row a page, and the copy
  // was 5% of a translator's training step.
  void pack_b_block(int64_t pc, int64_t kc, int64_t jc, int64_t j_end, int64_t layout, float* dst) const {
    if (g_.trans_b) {
      for (int64_t j = jc; j < j_end; j += NR) pack_b(pc, kc, j, j_end, panel_width(layout - j), dst + (j - jc) * kc);
      return;
    }
    for (int64_t kk = 0; kk < kc; ++kk) {
      const float* src = g_.b + (pc + kk) * g_.ldb;
      for (int64_t j = jc; j < j_end; j += NR) {
        const int width = panel_width(layout - j);
        const int cols = static_cast<int>(std::min<int64_t>(width, j_end - j));
        float* d = dst + (j - jc) * kc + kk * width;
        for (int c = 0; c < cols; ++c) d[c] = src[j + c];
        for (int c = cols; c < width; ++c) d[c] = 0.0f;
      }
    }
  }

  // op(B)[pc .. pc+kc, j0 .. j0+width) → dst[kk·width + c], zeros from column j_end on.
  void pack_b(int64_t pc, int64_t kc, int64_t j0, int64_t j_end, int width, float* dst) const {
    const int cols = static_cast<int>(std::min<int64_t>(width, j_end - j0));
    if (!g_.trans_b) {  // B [k, n]: rows of B are contiguous along the columns
      for (int64_t kk = 0; kk < kc; ++kk) {
        const float* src = g_.b + (pc + kk) * g_.ldb + j0;
        float* d = dst + kk * width;
        for (int c = 0; c < cols; ++c) d[c] = src[c];
        for (int c = cols; c < width; ++c) d[c] = 0.0f;
      }
    } else {  // B stored [n, k]: each column of op(B) is a contiguous row of B
      // 8 columns at a time as 8 × 8 tiles transposed (element by element, its strided stores
      // were 7% of the built-in context model's training step), then the rest one by one.
      int c = 0;
      for (; c + 8 <= cols; c += 8) {
        const float* src[8];
        for (int r = 0; r < 8; ++r) src[r] = g_.b + (j0 + c + r) * g_.ldb + pc;
        int64_t kk = 0;
        for (; kk + 8 <= kc; kk += 8) transpose_8x8(src, kk, dst + kk * width + c, width);
        for (; kk < kc; ++kk)
          for (int r = 0; r < 8; ++r) dst[kk * width + c + r] = src[r][kk];
      }
      for (; c < width; ++c) {
        const float* src = g_.b + (j0 + c) * g_.ldb + pc;
        if (c < cols)
          for (int64_t kk = 0; kk < kc; ++kk) dst[kk * width + c] = src[kk];
        else
          for (int64_t kk = 0; kk < kc; ++kk) dst[kk * width + c] = 0.0f;
      }
    }
  }

  // A [m, k]: op(A)[i0 .. i0+MR, pc .. pc+kc) → dst[kk·MR + r], zeros from row i_end on.
  void pack_a(int64_t i0, int64_t i_end, int64_t pc, int64_t kc, float* dst) const {
    const int rows = static_cast<int>(std::min<int64_t>(MR, i_end - i0));
    if constexpr (MR == 8) {
      if (rows == MR) {  // whole panels of 8 rows: 8 × 8 tiles transposed
        const float* src[8];
        for (int r = 0; r < 8; ++r) src[r] = g_.a + (i0 + r) * g_.lda + pc;
        int64_t kk = 0;
        for (; kk + 8 <= kc; kk += 8) transpose_8x8(src, kk, dst + kk * 8, 8);
        for (; kk < kc; ++kk)
          for (int r = 0; r < 8; ++r) dst[kk * 8 + r] = src[r][kk];
        return;
      }
    }
    for (int r = 0; r < MR; ++r) {  // A [m, k]
      const float* src = g_.a + (i0 + r) * g_.lda + pc;
      for (int64_t kk = 0; kk < kc; ++kk) dst[kk * MR + r] = r < rows ? src[kk] : 0.0f;
    }
  }

  // A stored [k, m]: op(A)[i_begin .. i_end, pc .. pc+kc) → panels of MR rows one after another,
  // each laid out as pack_a's (dst[panel·MR·kc + kk·MR + r]), zeros past i_end. Row kk of A is
  // read once, left to right.
  void pack_a_transposed(int64_t i_begin, int64_t i_end, int64_t pc, int64_t kc, float* dst) const {
    const int64_t rows = i_end - i_begin, whole = rows / MR * MR;
    for (int64_t kk = 0; kk < kc; ++kk) {
      const float* src = g_.a + (pc + kk) * g_.lda + i_begin;
      float* d = dst + kk * MR;
      for (int64_t p = 0; p < whole; p += MR)
        for (int r = 0; r < MR; ++r) d[p * kc + r] = src[p + r];
      if (whole < rows)
        for (int r = 0; r < MR; ++r) d[whole * kc + r] = whole + r < rows ? src[whole + r] : 0.0f;
    }
  }

  // dst[c·stride + r] = src[r][at + c] for r, c < 8: the packing of A's 8-row panels (stride 8)
  // and of a transposed B's columns, about three times fewer instructions than element by
  // element (the scalar loop showed as 5% of the layer's samples on 8,256,12,64).
  static void transpose_8x8(const float* const src[8], int64_t at, float* dst, int64_t stride) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {  // rows i, i+1 interleaved: [a0 b0 a1 b1 | a4 b4 a5 b5], ...
      const __m256 a = _mm256_loadu_ps(src[i] + at), b = _mm256_loadu_ps(src[i + 1] + at);
      t[i] = _mm256_unpacklo_ps(a, b);
      t[i + 1] = _mm256_unpackhi_ps(a, b);
    }
    for (int i = 0; i < 8; i += 4) {  // four rows per column, in each 128-bit half
      u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
      u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {  // rows 0–3 and 4–7 joined: columns c and c + 4
      _mm256_storeu_ps(dst + c * stride, _mm256_permute2f128_ps(u[c], u[c + 4], 0x20));
      _mm256_storeu_ps(dst + (c + 4) * stride, _mm256_permute2f128_ps(u[c], u[c + 4], 0x31));
    }
  }

  // C[i0 .. i0+rows, j0 .. j0+cols) = alpha · Ap·Bp + beta · C (beta 0: C is not read),
  // + bias[0 .. cols) when given (the first block of the inner dimension only). Bp is a panel
  // of VECTORS × W columns (2: NR, 1: a narrow last panel, cols ≤ W).
  template <int VECTORS>
  void micro_kernel(int64_t kc, const float* ap, const float* bp, int64_t i0, int64_t j0, int rows,
                    int cols, float beta, const float* bias) const {
    using vec = typename V::vec;
    constexpr int width = VECTORS * W;
    vec lo[MR], hi[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) lo[r] = hi[r] = V::zero();
    for (int64_t kk = 0; kk < kc; ++kk) {
      const vec b0 = V::load(bp + kk * width);
      const float* a = ap + kk * MR;
      if constexpr (VECTORS == 2) {
        const vec b1 = V::load(bp + kk * width + W);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
          const vec x = V::set1(a[r]);
          lo[r] = V::fmadd(x, b0, lo[r]);
          hi[r] = V::fmadd(x, b1, hi[r]);
        }
      } else {
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) lo[r] = V::fmadd(V::set1(a[r]), b0, lo[r]);
      }
    }
    store_tile<V>(g_, lo, hi, i0, j0, rows, cols, beta, bias);
  }

  const gemm_args& g_;
  int threads_;
  b_panels packed_;
};

}  // namespace attn::kernels
