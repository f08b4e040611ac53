// The sgemm for AVX-512 (compiled with -mavx512f -mavx512dq; called only when the CPU has them).
#include "kernels/gemm.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include "kernels/gemm_tiled.hpp"

namespace attn::kernels {

// 12 rows × 32 columns: 24 sums, two vectors of B and a broadcast of A in the 32 registers.
void gemm_avx512(const gemm_args& g, int threads) { gemm_tiled<simd::avx512, 12>(g, threads).run(); }

}  // namespace attn::kernels
#endif
