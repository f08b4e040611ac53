// IEEE binary16 ↔ float32, bit-exact and independent of compiler support for _Float16 (used by
// the safetensors reader/writer and the float16 word-vector files).
#pragma once

#include <cstdint>

namespace attn {

// Exact: every half value is a float. NaN payloads are kept (shifted into the float mantissa).
float half_to_float(uint16_t h);

// Round to nearest, ties to even; too large → ±inf; tiny → subnormal or ±0; NaN stays NaN
// (the payload's top 10 bits are kept, and a quiet bit is set if they are all zero).
uint16_t float_to_half(float f);

}  // namespace attn
