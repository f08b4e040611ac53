// Scaled dot-product attention: O = softmax(Q·Kᵀ·scale + mask) · V, per batch and head.
//   q [B, H, L, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv] → o [B, H, L, Dv]
// Grouped-query attention: Hkv divides H, query head h reads key/value head h / (H / Hkv)
// (PyTorch's enable_gqa=True, which repeats each K/V head H/Hkv times).
#pragma once

#include <optional>
#include <string>

#include "attn/scale.hpp"
#include "attn/tensor.hpp"

namespace attn {

// Which implementation runs: the fused tiled kernel (the default), or the float64 reference.
enum class sdpa_kernel { fused, reference };

// The precision of the two products. bf16: Q·Kᵀ and P·V multiply bf16 operands and accumulate in
// float32 (PyTorch's bf16 matmuls do the same), the softmax stays float32, and the probabilities P
// are rounded to bf16 for P·V. The tensors stay float32: Q, K and V are rounded to bf16 on the way
// in (to nearest, ties to even; Q after the scale is applied), the output is float32.
enum class sdpa_dtype { float32, bf16 };

struct sdpa_options {
  bool causal = false;           // top-left aligned, like PyTorch's is_causal
  scale_spec scale = {};         // default 1/√D
  // Additive float mask, broadcastable (NumPy rules, rank ≤ 4) to [B, H, L, S]:
  // [L, S], [B, 1, L, S], [B, H, L, S], … Use additive_mask_from_bool for bool masks.
  const tensor* attn_mask = nullptr;
  sdpa_kernel kernel = sdpa_kernel::fused;
  sdpa_dtype dtype = sdpa_dtype::float32;
};

// A row whose every key is masked (all scores -inf) gives exactly 0 in the output and in the
// weights, rather than NaN: there is nothing to attend to, so it contributes nothing.
// weights_out, when given, receives the softmax weights [B, H, L, S].
tensor sdpa(const tensor& q, const tensor& k, const tensor& v, const sdpa_options& options = {},
            tensor* weights_out = nullptr);

// The instruction set the fused kernel uses on this CPU: "avx512", "avx2", or "reference" where
// the CPU has neither (the fused kernel then defers to the reference). The environment
// variable ATTN_ISA=avx2|reference chooses a lesser one (to test or compare those paths).
std::string fused_kernel_isa();

// How bf16 runs on this CPU: "avx512_bf16" (vdpbf16ps), "avx512 (bf16 emulated)" or
// "avx2 (bf16 emulated)" (the instruction computed in float32: the same bits, not faster), or
// "reference". ATTN_BF16=emulate asks for the emulation where the instruction exists.
std::string bf16_kernel_path();

// Each element rounded to the nearest bf16 (ties to even), as a float32 tensor; magnitudes
// below 2^-126 become ±0 (the instruction reads subnormal bf16 as zero).
tensor round_to_bf16(const tensor& t);

// "float32" / "fp32" / "f32" or "bf16" / "bfloat16"; a usage error otherwise.
sdpa_dtype parse_sdpa_dtype(const std::string& name);
const char* sdpa_dtype_name(sdpa_dtype d);

namespace ref {
// The specification: plain loops, double accumulation. Same contract as attn::sdpa. With
// dtype bf16 it computes exactly on the bf16-rounded Q, K and V (P is not rounded: the fused
// kernel's extra rounding of P is part of its error, measured against this).
tensor sdpa(const tensor& q, const tensor& k, const tensor& v, const sdpa_options& options = {},
            tensor* weights_out = nullptr);
}  // namespace ref

// Checks the shapes of an sdpa call and throws a usage error naming the tensor at fault.
void check_sdpa_shapes(const tensor& q, const tensor& k, const tensor& v, const tensor* mask);

}  // namespace attn
