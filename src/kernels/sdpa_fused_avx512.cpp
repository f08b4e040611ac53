// The fused attention forward for AVX-512 (compiled with -mavx512f -mavx512dq; called only when
// the CPU has them, see sdpa_fused.cpp).
#include "kernels/flash_problem.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include "kernels/flash_forward_bf16.hpp"
#include "kernels/flash_forward_dense.hpp"
#include "kernels/simd_bf16.hpp"

namespace attn::kernels {

// 64 queries per tile (4 vectors) against blocks of 6 keys: 24 accumulators of the 32
// registers, fed by 4 loads and 6 broadcasts per step of D. (32 queries against 12 keys, 2 loads
// and 12 broadcasts for the same 24 FMAs, ran 10-12% slower at N ≥ 1024, the same at N ≤ 256:
// the broadcasts were the bottleneck.) P·V in blocks of 4 values of V's rows against the same
// 4 vectors of queries: 16 accumulators, and 64 = 4·16 leaves no narrower last block (blocks of
// 5 ran as fast, of 6 2–3% slower). The tile size changes no result: each score, each softmax
// step and each sum over the keys is computed in the same order.
void flash_forward_avx512(const flash_problem& p) {
  flash_forward_dense_run<simd::avx512, 4, 6, 4>(p);
}

// bf16 on an AVX-512 CPU without AVX-512 BF16 (or when ATTN_BF16=emulate asks): the tiles of
// flash_forward_bf16_avx512, each vdpbf16ps emulated in float32, so the results are the same bits.
void flash_forward_bf16_emulated_avx512(const flash_problem& p) {
  flash_forward_bf16_run<simd::avx512_bf16_emulated, 4, 5, 4>(p);
}

}  // namespace attn::kernels
#endif
