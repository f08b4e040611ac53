// The fused attention forward for AVX2 + FMA (compiled with -mavx2 -mfma; called only when the
// CPU has them, see sdpa_fused.cpp).
#include "kernels/flash_problem.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include "kernels/flash_forward_bf16.hpp"
#include "kernels/flash_forward_dense.hpp"
#include "kernels/simd_bf16.hpp"

namespace attn::kernels {

// 16 registers: 16 queries per tile (2 vectors) against blocks of 5 keys (10 accumulators);
// P·V in blocks of 6 values of V's rows × the same 2 vectors of queries (12 accumulators;
// 4 or 5 values ran 3% slower).
void flash_forward_avx2(const flash_problem& p) {
  flash_forward_dense_run<simd::avx2, 2, 5, 6>(p);
}

// bf16 on a CPU without AVX-512: the emulated instruction, same tiles.
void flash_forward_bf16_emulated_avx2(const flash_problem& p) {
  flash_forward_bf16_run<simd::avx2_bf16_emulated, 2, 5, 6>(p);
}

}  // namespace attn::kernels
#endif
