// The fused attention forward for AVX-512 (compiled with -mavx512f -mavx512dq; called only when
// the CPU has them, see sdpa_fused.cpp).
#include "kernels/flash_problem.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include "kernels/flash_forward.hpp"

namespace attn::kernels {

// 32 queries per tile (2 vectors) against blocks of 12 keys: 24 accumulators of the 32
// registers; P·V in blocks of 4 rows × 4 vectors (64 values of a row of V).
void flash_forward_avx512(const flash_problem& p) {
  flash_forward<simd::avx512, 2, 12, 4, 4>(p).run();
}

}  // namespace attn::kernels
#endif
