#include "core/half.hpp"

#include <bit>

namespace attn {

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t bits = 0;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);  // inf, or NaN with its payload
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);  // rebias 15 → 127
  } else if (mantissa == 0) {
    bits = sign;  // ±0
  } else {
    // Subnormal half: normalise, since every half subnormal is a normal float.
    uint32_t e = 113;  // exponent of 2^-14 in float bias
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t exponent = (bits >> 23) & 0xFFu;
  const uint32_t mantissa = bits & 0x7FFFFFu;

  if (exponent == 0xFF) {
    if (mantissa == 0) return static_cast<uint16_t>(sign | 0x7C00u);
    uint32_t payload = mantissa >> 13;
    if (payload == 0) payload = 0x200u;  // the payload lived in the dropped bits: stay a NaN
    return static_cast<uint16_t>(sign | 0x7C00u | payload);
  }

  // Value = 1.mantissa × 2^(exponent-127); half normals have exponents -14…15.
  const int e = static_cast<int>(exponent) - 127;
  if (e > 15) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow (also above 65504)

  // Work with the 24-bit significand (implicit 1 included for normals) and shift it right so
  // that its unit in the last place becomes the half's; then round to nearest even.
  uint32_t significand = exponent == 0 ? mantissa : (mantissa | 0x800000u);
  int shift = 0;          // how many low bits to drop
  uint32_t half_exp = 0;  // the biased half exponent before rounding
  if (e >= -14) {
    shift = 13;
    half_exp = static_cast<uint32_t>(e + 15);
    significand &= 0x7FFFFFu;  // the implicit 1 is carried by half_exp
  } else {
    // Half subnormal: value = m × 2^-24, so m = significand × 2^(e - 23 + 24).
    // Float subnormals (exponent 0) are far below 2^-25 and end up as ±0.
    shift = exponent == 0 ? 32 : 13 + (-14 - e);
    if (shift > 24) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
  }
  const uint32_t kept = significand >> shift;
  const uint32_t dropped = significand & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1);
  uint32_t result = (half_exp << 10) + kept;
  // A carry out of the mantissa correctly bumps the exponent (and 65520+ becomes inf).
  if (dropped > halfway || (dropped == halfway && (kept & 1u) != 0)) ++result;
  return static_cast<uint16_t>(sign | result);
}

}  // namespace attn
