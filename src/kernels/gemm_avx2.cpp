// The sgemm for AVX2 + FMA (compiled with -mavx2 -mfma; called only when the CPU has them).
#include "kernels/gemm.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include "kernels/gemm_tiled.hpp"

namespace attn::kernels {

// 6 rows × 16 columns: 12 sums, two vectors of B and a broadcast of A in the 16 registers.
using gemm_avx2_tiled = gemm_tiled<simd::avx2, 6>;

void gemm_avx2(const gemm_args& g, int threads, const b_panels& packed) {
  gemm_avx2_tiled(g, threads, packed).run();
}

void pack_b_avx2(const gemm_args& g, float* panels) { gemm_avx2_tiled(g, 1).pack_whole_b(panels); }

int64_t avx2_panel_width(int64_t n) { return gemm_avx2_tiled::padded_n(n); }

int64_t avx2_panel_columns() { return gemm_avx2_tiled::NR; }

}  // namespace attn::kernels
#endif
