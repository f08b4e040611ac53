// The fused attention backward for AVX2 + FMA (compiled with -mavx2 -mfma; called only when the
// CPU has them, see sdpa_backward.cpp).
#include "kernels/flash_backward_problem.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include "kernels/flash_backward.hpp"
#include "kernels/simd_bf16.hpp"

namespace attn::kernels {

// 16 registers: scores 4 rows × 2 vectors (16 keys), updates 4 rows × 3 vectors.
void flash_backward_avx2(const flash_backward_problem& p) {
  flash_backward<simd::avx2, 4, 2, 4, 3>(p).run();
}

// bf16 without AVX-512: the emulation of vdpbf16ps in float32 (correct, not faster).
void flash_backward_bf16_emulated_avx2(const flash_backward_problem& p) {
  flash_backward<simd::avx2_bf16_emulated, 4, 2, 4, 3, true>(p).run();
}

}  // namespace attn::kernels
#endif
