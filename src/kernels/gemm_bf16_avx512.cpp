// gemm_bf16 for AVX-512: vdpbf16ps where the CPU has AVX-512 BF16, else the same pairs
// multiplied by its float32 emulation (compiled with -mavx512bf16; each entry point is called
// only on a CPU that has what it uses).
#include "kernels/gemm.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include "kernels/gemm_bf16_tiled.hpp"

namespace attn::kernels {

void gemm_bf16_avx512_emulated(const gemm_args& g, int threads) {
  gemm_bf16_tiled<simd::avx512_bf16_emulated, 8>(g, threads).run();
}

#if defined(__AVX512BF16__)
void gemm_bf16_avx512(const gemm_args& g, int threads) { gemm_bf16_tiled<simd::avx512_bf16, 8>(g, threads).run(); }
#endif

}  // namespace attn::kernels
#endif
