// few_rows_product for AVX-512 (compiled with -mavx512f -mavx512dq).
#include "kernels/few_rows.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include "kernels/few_rows_tiled.hpp"

namespace attn::kernels {

// 8 rows × 2 vectors: 16 sums, the panel's two vectors and a broadcast in the 32 registers.
void few_rows_product_avx512(const float* panels, const float* bias, const float* x, int64_t rows, int64_t in,
                             int64_t out, float* y, int64_t ldy) {
  few_rows_tiled<simd::avx512, 8>::run(panels, bias, x, rows, in, out, y, ldy);
}

}  // namespace attn::kernels
#endif
