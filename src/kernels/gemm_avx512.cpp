// The sgemm for AVX-512 (compiled with -mavx512f -mavx512dq; called only when the CPU has them).
#include "kernels/gemm.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include "kernels/gemm_tiled.hpp"

namespace attn::kernels {

// 8 rows × 32 columns: 16 sums, two vectors of B and a broadcast of A. 12 rows (24 sums) fill
// more registers yet measured 3–4% slower on the projections (x·Wᵀ, 2 threads, median of 6
// interleaved runs: 512×768×768 200 vs 207 GFLOP/s, 2048×512×512 194 vs 202), partly because
// 512 or 2048 rows split evenly in panels of 8 between two threads and not in panels of 12.
using gemm_avx512_tiled = gemm_tiled<simd::avx512, 8>;

void gemm_avx512(const gemm_args& g, int threads, const b_panels& packed) {
  gemm_avx512_tiled(g, threads, packed).run();
}

void pack_b_avx512(const gemm_args& g, float* panels) { gemm_avx512_tiled(g, 1).pack_whole_b(panels); }

int64_t avx512_panel_width(int64_t n) { return gemm_avx512_tiled::padded_n(n); }

int64_t avx512_panel_columns() { return gemm_avx512_tiled::NR; }

}  // namespace attn::kernels
#endif
