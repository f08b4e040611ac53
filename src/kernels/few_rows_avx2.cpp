// few_rows_product for AVX2 + FMA (compiled with -mavx2 -mfma).
#include "kernels/few_rows.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include "kernels/few_rows_tiled.hpp"

namespace attn::kernels {

// 3 rows × 4 vectors: 12 sums and the panel's 4 vectors in the 16 registers.
void few_rows_product_avx2(const float* panels, const float* bias, const float* x, int64_t rows, int64_t in,
                           int64_t out, float* y, int64_t ldy) {
  few_rows_tiled<simd::avx2, 3>::run(panels, bias, x, rows, in, out, y, ldy);
}

}  // namespace attn::kernels
#endif
