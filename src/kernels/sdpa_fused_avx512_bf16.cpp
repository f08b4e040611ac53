// The fused attention forward with bf16 operands on vdpbf16ps (compiled with -mavx512bf16;
// called only when the CPU has AVX-512 BF16, see flash_bf16.cpp).
#include "kernels/flash_problem.hpp"

#if defined(__AVX512F__) && defined(__AVX512BF16__)
#include "kernels/flash_forward_bf16.hpp"
#include "kernels/simd_bf16.hpp"

namespace attn::kernels {

// 64 queries × 5 keys of scores (the float32 kernel takes 6), 4 values of V × 64 queries of
// P·V (5 or 6 values ran the same, within the noise); each instruction multiplies two elements
// of D (or two keys) per lane. With half as many steps of D per block the broadcasts weigh less
// than in float32, and 5 keys cover a tile of 128 with 2 spare where 6 compute 4: 3% faster at
// N ≥ 1024 (interleaved attn bench runs). The block size changes no result: each score is the
// same sum either way.
void flash_forward_bf16_avx512(const flash_problem& p) {
  flash_forward_bf16_run<simd::avx512_bf16, 4, 5, 4>(p);
}

}  // namespace attn::kernels
#endif
