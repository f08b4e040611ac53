// few_rows_product over simd.hpp's vector types, compiled once per instruction set
// (few_rows_avx512.cpp, few_rows_avx2.cpp). Each panel of 32 outputs is swept once per group of
// up to R rows, their R × 32 sums held in registers.
#pragma once

#include <algorithm>

#include "kernels/few_rows.hpp"
#include "kernels/simd.hpp"

namespace attn::kernels {

template <class V, int MaxRows>
struct few_rows_tiled {
  static constexpr int W = V::W, VECS = static_cast<int>(few_rows_panel) / W;

  // Rows [0, R) of x against every panel.
  template <int R>
  static void group(const float* panels, const float* bias, const float* x, int64_t in, int64_t out, float* y,
                    int64_t ldy) {
    using vec = typename V::vec;
    for (int64_t o0 = 0; o0 < out; o0 += few_rows_panel) {
      const float* w = panels + o0 * in;
      vec sums[R][VECS];
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < VECS; ++v) sums[r][v] = V::zero();
      for (int64_t k = 0; k < in; ++k) {
        vec wk[VECS];
        for (int v = 0; v < VECS; ++v) wk[v] = V::load(w + k * few_rows_panel + v * W);
        for (int r = 0; r < R; ++r) {
          const vec xk = V::set1(x[r * in + k]);
          for (int v = 0; v < VECS; ++v) sums[r][v] = V::fmadd(xk, wk[v], sums[r][v]);
        }
      }
      const int64_t cols = std::min(few_rows_panel, out - o0);
      for (int v = 0; v < VECS; ++v) {
        const int n = static_cast<int>(std::clamp<int64_t>(cols - v * W, 0, W));
        if (n == 0) break;
        const vec b = bias != nullptr ? V::load_first(bias + o0 + v * W, n) : V::zero();
        for (int r = 0; r < R; ++r) V::store_first(y + r * ldy + o0 + v * W, V::add(sums[r][v], b), n);
      }
    }
  }

  template <int R = MaxRows>
  static void rows(const float* panels, const float* bias, const float* x, int64_t n, int64_t in, int64_t out,
                   float* y, int64_t ldy) {
    if constexpr (R > 0) {
      if (n >= R) return group<R>(panels, bias, x, in, out, y, ldy);
      return rows<R - 1>(panels, bias, x, n, in, out, y, ldy);
    }
  }

  // More rows than one group (several sentences' beams searched together): each stretch of
  // panels, about 128 KB of weights, is swept by every group in turn while it is still in the
  // cache, so the weights come from memory once per call, not once per group. Every sum is
  // still one register over `in` in order: the same bits as a group alone.
  static void run(const float* panels, const float* bias, const float* x, int64_t n, int64_t in, int64_t out,
                  float* y, int64_t ldy) {
    const int64_t stretch =
        std::max(few_rows_panel, (int64_t{32768} / std::max<int64_t>(in, 1)) / few_rows_panel * few_rows_panel);
    for (int64_t o0 = 0; o0 < out; o0 += stretch) {
      const int64_t cols = std::min(stretch, out - o0);
      for (int64_t r0 = 0; r0 < n; r0 += MaxRows) {
        const int64_t take = std::min<int64_t>(MaxRows, n - r0);
        rows(panels + o0 * in, bias != nullptr ? bias + o0 : nullptr, x + r0 * in, take, in, cols, y + r0 * ldy + o0,
             ldy);
      }
    }
  }
};

}  // namespace attn::kernels
