// gemm_bf16 for AVX2: the pairs multiplied by vdpbf16ps's float32 emulation. 4 rows × 16
// columns: 8 sums, beside the emulation's temporaries, in AVX2's 16 registers.
#include "kernels/gemm.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include "kernels/gemm_bf16_tiled.hpp"

namespace attn::kernels {

void gemm_bf16_avx2(const gemm_args& g, int threads) { gemm_bf16_tiled<simd::avx2_bf16_emulated, 4>(g, threads).run(); }

}  // namespace attn::kernels
#endif
