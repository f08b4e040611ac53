// The sgemm for AVX2 + FMA (compiled with -mavx2 -mfma; called only when the CPU has them).
#include "kernels/gemm.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include "kernels/gemm_tiled.hpp"

namespace attn::kernels {

// 6 rows × 16 columns: 12 sums, two vectors of B and a broadcast of A in the 16 registers.
void gemm_avx2(const gemm_args& g, int threads) { gemm_tiled<simd::avx2, 6>(g, threads).run(); }

}  // namespace attn::kernels
#endif
