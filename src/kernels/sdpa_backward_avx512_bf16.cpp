// The fused attention backward with bf16 operands on vdpbf16ps (compiled with -mavx512bf16;
// called only when the CPU has AVX-512 BF16, see flash_bf16.cpp).
#include "kernels/flash_backward_problem.hpp"

#if defined(__AVX512F__) && defined(__AVX512BF16__)
#include "kernels/flash_backward.hpp"
#include "kernels/simd_bf16.hpp"

namespace attn::kernels {

// The float32 kernel's tiles (4 rows × 64 keys of scores, 4 rows × 4 vectors of updates): each
// instruction now multiplies two elements of the reduction per lane.
void flash_backward_bf16_avx512(const flash_backward_problem& p) {
  flash_backward<simd::avx512_bf16, 4, 4, 4, 4, true>(p).run();
}

}  // namespace attn::kernels
#endif
