// The blocked product behind kernels::gemm_bf16: gemm_tiled's blocking (gemm_tiled.hpp) with
// its operands rounded to bf16 as they are packed, and the micro-kernel multiplying pairs of
// them with vdpbf16ps (or its float32 emulation, simd_bf16.hpp) into float32 sums.
//
// Packed operands are 32-bit words, each a pair of bf16 values along the inner dimension
// (element 2p in the low half, 2p + 1 in the high half), the layout the instruction reads: A's
// panel as words[p·MR + r], B's as words[p·NR + c]. A block of the inner dimension with an odd
// length ends in a pair whose high half is zero. One vdpbf16ps does the work of two FMAs, so
// the micro-kernel's loop runs over half as many steps as the float32 one.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "core/half.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_tiled.hpp"
#include "kernels/simd_bf16.hpp"

namespace attn::kernels {

template <class V, int MR>
class gemm_bf16_tiled {
 public:
  static constexpr int W = V::W;
  static constexpr int NR = 2 * W;  // two vectors of columns
  // The inner dimension in equal blocks of at most KC elements, a function of k alone (the
  // bits do not depend on the threads). Pairs are half the bytes of floats: twice the
  // float32 kernel's block fits the same cache.
  static constexpr int64_t KC = 1024;
  static int64_t block_k(int64_t k) {
    const int64_t blocks = std::max<int64_t>(1, (k + KC - 1) / KC);
    const int64_t kb = (k + blocks - 1) / blocks;
    return (kb + 1) / 2 * 2;  // even: only the last block can end in a half-empty pair
  }
  static constexpr int64_t NC = 2048;
  static_assert(NC % NR == 0);
  static constexpr int64_t MC = 128 / MR * MR;  // rows of a transposed A packed together

  gemm_bf16_tiled(const gemm_args& g, int threads) : g_(g), threads_(std::max(1, threads)) {}

  void run() const {
    share_among_threads(g_, MR, NR, threads_, [this](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
      block(i0, i1, j0, j1);
    });
  }

 private:
  static int64_t pairs(int64_t kc) { return (kc + 1) / 2; }

  void block(int64_t i_begin, int64_t i_end, int64_t j_begin, int64_t j_end) const {
    const int64_t kb = block_k(g_.k);
    const int64_t mc = g_.trans_a ? MC : MR;
    uint32_t* const b_block = scratch(0, static_cast<size_t>(pairs(kb) * NC));
    uint32_t* const a_block = scratch(1, static_cast<size_t>(mc * pairs(kb)));
    for (int64_t jc = j_begin; jc < j_end; jc += NC) {
      const int64_t nc = std::min(NC, j_end - jc);
      for (int64_t pc = 0; pc < g_.k; pc += kb) {
        const int64_t kc = std::min(kb, g_.k - pc), kp = pairs(kc);
        for (int64_t j = jc; j < jc + nc; j += NR)
          pack_b(pc, kc, j, std::min(j_end, jc + nc), b_block + (j - jc) * kp);
        for (int64_t ic = i_begin; ic < i_end; ic += mc) {
          const int64_t ic_end = std::min(i_end, ic + mc);
          if (g_.trans_a) pack_a_transposed(ic, ic_end, pc, kc, a_block);
          for (int64_t i0 = ic; i0 < ic_end; i0 += MR) {
            const int rows = static_cast<int>(std::min<int64_t>(MR, i_end - i0));
            const uint32_t* a_panel = a_block + (i0 - ic) * kp;
            if (!g_.trans_a) pack_a(i0, i_end, pc, kc, a_block);
            for (int64_t j = jc; j < jc + nc; j += NR) {
              const int cols = static_cast<int>(std::min<int64_t>(NR, jc + nc - j));
              micro_kernel(kp, a_panel, b_block + (j - jc) * kp, i0, j, rows, cols,
                           pc == 0 ? g_.beta : 1.0f,
                           pc == 0 && g_.bias != nullptr ? g_.bias + j : nullptr);
            }
          }
        }
      }
    }
  }

  // Packing buffers (gemm_tiled.hpp's, of words; slot 0: B's block, slot 1: A's).
  static uint32_t* scratch(int slot, size_t n) { return packing_scratch<V, uint32_t>(slot, n); }

  static uint32_t pair_of(float lo, float hi) {
    return float_to_bf16(lo) | static_cast<uint32_t>(float_to_bf16(hi)) << 16;
  }

  // op(B)[pc .. pc+kc, j0 .. j0+NR) → dst[p·NR + c] as pairs, zeros from column j_end on.
  void pack_b(int64_t pc, int64_t kc, int64_t j0, int64_t j_end, uint32_t* dst) const {
    const int cols = static_cast<int>(std::min<int64_t>(NR, j_end - j0));
    const int64_t kp = pairs(kc);
    if (!g_.trans_b) {  // B [k, n]: rows 2p and 2p + 1 interleaved along the columns
      for (int64_t p = 0; p < kp; ++p) {
        const float* r0 = g_.b + (pc + 2 * p) * g_.ldb + j0;
        const float* r1 = 2 * p + 1 < kc ? r0 + g_.ldb : nullptr;
        uint32_t* d = dst + p * NR;
        if (cols == NR) {
          simd::pack_two_rows<V>(r0, r1, NR, d);
        } else {
          for (int c = 0; c < cols; ++c) d[c] = pair_of(r0[c], r1 != nullptr ? r1[c] : 0.0f);
          for (int c = cols; c < NR; ++c) d[c] = 0;
        }
      }
    } else {  // B stored [n, k]: column c of op(B) is row c of B, its pairs consecutive
      uint32_t run[KC / 2];
      for (int c = 0; c < NR; ++c) {
        if (c < cols) {
          simd::pack_along<V>(g_.b + (j0 + c) * g_.ldb + pc, kc, 1.0f, run);
          for (int64_t p = 0; p < kp; ++p) dst[p * NR + c] = run[p];
        } else {
          for (int64_t p = 0; p < kp; ++p) dst[p * NR + c] = 0;
        }
      }
    }
  }

  // A [m, k]: op(A)[i0 .. i0+MR, pc .. pc+kc) → dst[p·MR + r] as pairs, zeros from row i_end on.
  void pack_a(int64_t i0, int64_t i_end, int64_t pc, int64_t kc, uint32_t* dst) const {
    const int rows = static_cast<int>(std::min<int64_t>(MR, i_end - i0));
    const int64_t kp = pairs(kc);
    uint32_t run[KC / 2];
    for (int r = 0; r < MR; ++r) {
      if (r < rows) {
        simd::pack_along<V>(g_.a + (i0 + r) * g_.lda + pc, kc, 1.0f, run);
        for (int64_t p = 0; p < kp; ++p) dst[p * MR + r] = run[p];
      } else {
        for (int64_t p = 0; p < kp; ++p) dst[p * MR + r] = 0;
      }
    }
  }

  // A stored [k, m]: op(A)[i_begin .. i_end, pc .. pc+kc) → panels of MR rows one after
  // another, each laid out as pack_a's, zeros past i_end. Rows 2p and 2p + 1 of A are read
  // once each, left to right, and interleaved.
  void pack_a_transposed(int64_t i_begin, int64_t i_end, int64_t pc, int64_t kc, uint32_t* dst) const {
    const int64_t rows = i_end - i_begin, kp = pairs(kc);
    uint32_t run[MC];
    for (int64_t p = 0; p < kp; ++p) {
      const float* r0 = g_.a + (pc + 2 * p) * g_.lda + i_begin;
      const float* r1 = 2 * p + 1 < kc ? r0 + g_.lda : nullptr;
      simd::pack_two_rows<V>(r0, r1, rows, run);
      for (int64_t at = 0; at < rows; at += MR) {
        uint32_t* d = dst + at * kp + p * MR;
        const int64_t n = std::min<int64_t>(MR, rows - at);
        for (int64_t r = 0; r < n; ++r) d[r] = run[at + r];
        for (int64_t r = n; r < MR; ++r) d[r] = 0;
      }
    }
  }

  // C[i0 .. i0+rows, j0 .. j0+cols) = alpha · Ap·Bp + beta · C (beta 0: C is not read),
  // + bias[0 .. cols) when given (the first block of the inner dimension only).
  void micro_kernel(int64_t kp, const uint32_t* ap, const uint32_t* bp, int64_t i0, int64_t j0, int rows,
                    int cols, float beta, const float* bias) const {
    using vec = typename V::vec;
    vec lo[MR], hi[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) lo[r] = hi[r] = V::zero();
    for (int64_t p = 0; p < kp; ++p) {
      const auto b0 = V::load_words(bp + p * NR), b1 = V::load_words(bp + p * NR + W);
      const uint32_t* a = ap + p * MR;
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const auto x = V::set1_word(a[r]);
        lo[r] = V::dot(lo[r], x, b0);
        hi[r] = V::dot(hi[r], x, b1);
      }
    }
    store_tile<V>(g_, lo, hi, i0, j0, rows, cols, beta, bias);
  }

  const gemm_args& g_;
  int threads_;
};

}  // namespace attn::kernels
