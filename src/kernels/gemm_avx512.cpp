// The sgemm for AVX-512 (compiled with -mavx512f -mavx512dq; called only when the CPU has them).
#include "kernels/gemm.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include "kernels/gemm_tiled.hpp"

namespace attn::kernels {

// 12 rows × 32 columns: 24 sums, two vectors of B and a broadcast of A in the 32 registers.
using gemm_avx512_tiled = gemm_tiled<simd::avx512, 12>;

void gemm_avx512(const gemm_args& g, int threads, const b_panels& packed) {
  gemm_avx512_tiled(g, threads, packed).run();
}

void pack_b_avx512(const gemm_args& g, float* panels) { gemm_avx512_tiled(g, 1).pack_whole_b(panels); }

int64_t avx512_panel_width(int64_t n) { return gemm_avx512_tiled::padded_n(n); }

}  // namespace attn::kernels
#endif
