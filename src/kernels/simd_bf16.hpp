// The bf16 operations of the fused attention kernel, once per instruction set, on top of the
// float32 ones in simd.hpp. Operands travel as 32-bit words each holding a pair of bf16 values
// (the lower-indexed one in the low half), the layout vdpbf16ps multiplies:
//   dot(acc, a, b):  acc[i] += a.hi[i]·b.hi[i], then += a.lo[i]·b.lo[i]
// Where the CPU has AVX-512 BF16 that is one instruction. Elsewhere the *_emulated structs
// compute the same thing in float32: a product of two bf16 values is exact in float32, so two
// FMAs in the instruction's order (the high pair first, as Intel's pseudo-code has it), each
// rounded to nearest and flushed to zero when subnormal (the instruction ignores MXCSR and
// flushes), give the instruction's bits.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/half.hpp"
#include "kernels/simd.hpp"

namespace attn::simd {

#if defined(__AVX512F__) && defined(__AVX512DQ__)
// Pairs of bf16 for AVX-512: W words to a vector.
struct avx512_pairs : avx512 {
  using words = __m512i;

  static words load_words(const uint32_t* p) { return _mm512_loadu_si512(p); }
  static void store_words(uint32_t* p, words w) { _mm512_storeu_si512(p, w); }
  static words set1_word(uint32_t w) { return _mm512_set1_epi32(static_cast<int>(w)); }
  // The same 32 bits per lane, seen as floats (to move words with the float shuffles) or back.
  static vec as_floats(words w) { return _mm512_castsi512_ps(w); }
  static words as_words(vec x) { return _mm512_castps_si512(x); }

  // Each lane's float32 rounded to bf16 exactly as attn::float_to_bf16 does (nearest, ties to
  // even; NaN quiet; subnormals → ±0), left in the high half, the low half zero.
  static __m512i round_to_high_half(vec x) {
    const __m512i b = _mm512_castps_si512(x);
    const __m512i one = _mm512_set1_epi32(1);
    __m512i r = _mm512_add_epi32(
        b, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), _mm512_and_si512(_mm512_srli_epi32(b, 16), one)));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(b, _mm512_set1_epi32(0x7FFFFFFF)),
                                                  _mm512_set1_epi32(0x7F800000));
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(b, _mm512_set1_epi32(0x00400000)));
    const __mmask16 tiny = _mm512_testn_epi32_mask(b, _mm512_set1_epi32(0x7F800000));
    r = _mm512_mask_mov_epi32(r, tiny, _mm512_and_si512(b, _mm512_set1_epi32(static_cast<int>(0x80000000u))));
    return _mm512_and_si512(r, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)));
  }

  // Words (bf16(lo[i]), bf16(hi[i])).
  static words pack_pairs(vec lo, vec hi) {
    return _mm512_or_si512(round_to_high_half(hi), _mm512_srli_epi32(round_to_high_half(lo), 16));
  }

  // 2W consecutive floats x = [a, b] as W words: word i = (bf16(x[2i]), bf16(x[2i + 1])).
  static words pack_consecutive(vec a, vec b) {
    const __m256i lo = _mm512_cvtepi32_epi16(_mm512_srli_epi32(round_to_high_half(a), 16));
    const __m256i hi = _mm512_cvtepi32_epi16(_mm512_srli_epi32(round_to_high_half(b), 16));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }

 protected:
  // Subnormal lanes → ±0 (the sign kept), as the instruction's flush-to-zero does.
  static vec flush_subnormal(vec x) {
    const __m512i b = _mm512_castps_si512(x);
    const __mmask16 tiny = _mm512_testn_epi32_mask(b, _mm512_set1_epi32(0x7F800000));
    return _mm512_castsi512_ps(
        _mm512_mask_mov_epi32(b, tiny, _mm512_and_si512(b, _mm512_set1_epi32(static_cast<int>(0x80000000u)))));
  }
  static vec high_half(words w) {
    return _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  static vec low_half(words w) { return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)); }
};

struct avx512_bf16_emulated : avx512_pairs {
  static vec dot(vec acc, words a, words b) {
    acc = flush_subnormal(fmadd(high_half(a), high_half(b), acc));
    return flush_subnormal(fmadd(low_half(a), low_half(b), acc));
  }
};

#if defined(__AVX512BF16__)
struct avx512_bf16 : avx512_pairs {
  static vec dot(vec acc, words a, words b) {
    return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh&>(a), reinterpret_cast<__m512bh&>(b));
  }

  // vcvtne2ps2bf16 rounds as float_to_bf16 does (nearest even, subnormals flushed; NaN payloads
  // may differ), giving [lo's 16 | hi's 16]; vpermw interleaves them into pairs. Two
  // instructions where the integer rounding takes a dozen.
  static words pack_pairs(vec lo, vec hi) {
    const __m512bh both = _mm512_cvtne2ps_pbh(hi, lo);
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                                23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(interleave, reinterpret_cast<const __m512i&>(both));
  }

  // [bf16(a) | bf16(b)] is already the consecutive pairs: one instruction.
  static words pack_consecutive(vec a, vec b) {
    const __m512bh both = _mm512_cvtne2ps_pbh(b, a);
    return reinterpret_cast<const __m512i&>(both);
  }
};
#endif
#endif

#if defined(__AVX2__) && defined(__FMA__)
// Pairs of bf16 for AVX2 (no bf16 instruction: always the emulation).
struct avx2_bf16_emulated : avx2 {
  using words = __m256i;

  static words load_words(const uint32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store_words(uint32_t* p, words w) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), w); }
  static words set1_word(uint32_t w) { return _mm256_set1_epi32(static_cast<int>(w)); }
  static vec as_floats(words w) { return _mm256_castsi256_ps(w); }
  static words as_words(vec x) { return _mm256_castps_si256(x); }

  static __m256i round_to_high_half(vec x) {
    const __m256i b = _mm256_castps_si256(x);
    const __m256i one = _mm256_set1_epi32(1);
    __m256i r = _mm256_add_epi32(
        b, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), _mm256_and_si256(_mm256_srli_epi32(b, 16), one)));
    const __m256i abs = _mm256_and_si256(b, _mm256_set1_epi32(0x7FFFFFFF));
    const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7F800000));  // abs < 2^31: signed compare is safe
    r = _mm256_blendv_epi8(r, _mm256_or_si256(b, _mm256_set1_epi32(0x00400000)), nan);
    const __m256i tiny = _mm256_cmpeq_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7F800000)), _mm256_setzero_si256());
    r = _mm256_blendv_epi8(r, _mm256_and_si256(b, _mm256_set1_epi32(static_cast<int>(0x80000000u))), tiny);
    return _mm256_and_si256(r, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u)));
  }

  static words pack_pairs(vec lo, vec hi) {
    return _mm256_or_si256(round_to_high_half(hi), _mm256_srli_epi32(round_to_high_half(lo), 16));
  }

  static words pack_consecutive(vec a, vec b) {
    // vpackusdw works within 128-bit halves: [a0-3, b0-3, a4-7, b4-7], then put the halves in order.
    const __m256i packed = _mm256_packus_epi32(_mm256_srli_epi32(round_to_high_half(a), 16),
                                               _mm256_srli_epi32(round_to_high_half(b), 16));
    return _mm256_permute4x64_epi64(packed, 0xD8);
  }

  static vec dot(vec acc, words a, words b) {
    acc = flush_subnormal(fmadd(high_half(a), high_half(b), acc));
    return flush_subnormal(fmadd(low_half(a), low_half(b), acc));
  }

 private:
  static vec flush_subnormal(vec x) {
    const __m256i b = _mm256_castps_si256(x);
    const __m256i tiny = _mm256_cmpeq_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7F800000)), _mm256_setzero_si256());
    return _mm256_castsi256_ps(
        _mm256_blendv_epi8(b, _mm256_and_si256(b, _mm256_set1_epi32(static_cast<int>(0x80000000u))), tiny));
  }
  static vec high_half(words w) {
    return _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  static vec low_half(words w) { return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)); }
};
#endif

// Packing float32 rows into pairs, on any of the types above (the tails one pair at a time).

// out[i] = (bf16(x[2i]·factor), bf16(x[2i + 1]·factor)) for i < ⌈n/2⌉; an odd n's last pair takes 0.
template <class V>
[[gnu::always_inline]] inline void pack_along(const float* x, int64_t n, float factor, uint32_t* out) {
  const typename V::vec f = V::set1(factor);
  int64_t d = 0;
  for (; d + 2 * V::W <= n; d += 2 * V::W)
    V::store_words(out + d / 2, V::pack_consecutive(V::mul(V::load(x + d), f), V::mul(V::load(x + d + V::W), f)));
  for (; d < n; d += 2)
    out[d / 2] = float_to_bf16(x[d] * factor) | static_cast<uint32_t>(d + 1 < n ? float_to_bf16(x[d + 1] * factor) : 0) << 16;
}

// out[e] = (bf16(x0[e]), bf16(x1[e])) for e < n: two rows interleaved; x1 null reads as zeros.
template <class V>
[[gnu::always_inline]] inline void pack_two_rows(const float* x0, const float* x1, int64_t n, uint32_t* out) {
  int64_t e = 0;
  for (; e + V::W <= n; e += V::W)
    V::store_words(out + e, V::pack_pairs(V::load(x0 + e), x1 != nullptr ? V::load(x1 + e) : V::zero()));
  for (; e < n; ++e)
    out[e] = float_to_bf16(x0[e]) | static_cast<uint32_t>(x1 != nullptr ? float_to_bf16(x1[e]) : 0) << 16;
}

}  // namespace attn::simd
