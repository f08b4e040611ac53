// The fused attention forward with bf16 operands on vdpbf16ps (compiled with -mavx512bf16;
// called only when the CPU has AVX-512 BF16, see flash_bf16.cpp).
#include "kernels/flash_problem.hpp"

#if defined(__AVX512F__) && defined(__AVX512BF16__)
#include "kernels/flash_forward_bf16.hpp"
#include "kernels/simd_bf16.hpp"

namespace attn::kernels {

// The float32 kernel's tiles (64 queries × 6 keys of scores, 4 rows × 4 vectors of P·V): each
// instruction now multiplies two elements of D (or two keys) per lane.
void flash_forward_bf16_avx512(const flash_problem& p) {
  flash_forward_bf16_run<simd::avx512_bf16, 4, 6, 4, 4>(p);
}

}  // namespace attn::kernels
#endif
