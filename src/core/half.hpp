// IEEE binary16 ↔ float32, bit-exact and independent of compiler support for _Float16 (used by
// the safetensors reader/writer and the float16 word-vector files), and bfloat16 ↔ float32 (inline:
// the bf16 attention kernels round every operand with it).
#pragma once

#include <bit>
#include <cstdint>

namespace attn {

// Exact: every half value is a float. NaN payloads are kept (shifted into the float mantissa).
float half_to_float(uint16_t h);

// Round to nearest, ties to even; too large → ±inf; tiny → subnormal or ±0; NaN stays NaN
// (the payload's top 10 bits are kept, and a quiet bit is set if they are all zero).
uint16_t float_to_half(float f);

// bfloat16 is the top half of a float32: widening is exact.
inline float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// Round to nearest, ties to even (as the AVX-512 BF16 conversions do); NaN stays a quiet NaN.
// Magnitudes below 2^-126 (float32 subnormals) become ±0: the bf16 dot-product instruction
// reads subnormal operands as zero, so flushing them here keeps every code path's results the same.
inline uint16_t float_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  if ((bits & 0x7F800000u) == 0) return static_cast<uint16_t>((bits >> 16) & 0x8000u);
  // Adding 0x7FFF plus the lowest kept bit rounds half-way cases to the even neighbour; a carry
  // into the exponent is the correct rounding up (to the next binade, or to inf).
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace attn
