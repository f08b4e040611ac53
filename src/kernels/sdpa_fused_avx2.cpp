// The fused attention forward for AVX2 + FMA (compiled with -mavx2 -mfma; called only when the
// CPU has them, see sdpa_fused.cpp).
#include "kernels/flash_problem.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include "kernels/flash_forward.hpp"

namespace attn::kernels {

// 16 registers: 16 queries per tile (2 vectors) against blocks of 5 keys (10 accumulators);
// P·V in blocks of 4 rows × 2 vectors.
void flash_forward_avx2(const flash_problem& p) {
  flash_forward<simd::avx2, 2, 5, 4, 2>(p).run();
}

}  // namespace attn::kernels
#endif
