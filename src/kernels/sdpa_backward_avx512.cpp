// The fused attention backward for AVX-512 (compiled with -mavx512f -mavx512dq; called only
// when the CPU has them, see sdpa_backward.cpp).
#include "kernels/flash_backward_problem.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include "kernels/flash_backward.hpp"
#include "kernels/simd_bf16.hpp"

namespace attn::kernels {

// Scores: 4 query rows × 4 vectors (64 keys, the whole tile) = 16 accumulators; updates:
// 4 rows × 4 vectors (64 values of a head) = 16 accumulators, of the 32 registers.
void flash_backward_avx512(const flash_backward_problem& p) {
  flash_backward<simd::avx512, 4, 4, 4, 4>(p).run();
}

// bf16 on an AVX-512 CPU without AVX-512 BF16 (or when ATTN_BF16=emulate asks): the tiles of
// flash_backward_bf16_avx512 with each vdpbf16ps emulated in float32, so the same bits.
void flash_backward_bf16_emulated_avx512(const flash_backward_problem& p) {
  flash_backward<simd::avx512_bf16_emulated, 4, 4, 4, 4, true>(p).run();
}

}  // namespace attn::kernels
#endif
