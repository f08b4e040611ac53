// The few vector operations the fused attention kernel needs, once per instruction set. Each
// struct is compiled only in the translation unit built for its instruction set (see
// sdpa_fused_avx512.cpp, sdpa_fused_avx2.cpp), so one binary carries both and picks at run time.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <limits>

namespace attn::simd {

// 2^f on [0, 1]: a degree-6 polynomial fitted to relative error (largest 8.4e-8 after float
// rounding, about 1.4 ulp). Horner's scheme, lowest coefficient last.
inline constexpr float exp2_poly[7] = {1.0f,          0.6931470037f,  0.2402298301f, 0.05548334122f,
                                       0.009678840637f, 0.00124396896f, 0.0002170225343f};

// Below 2^-126 a result would be subnormal: it is flushed to exactly 0, so masked scores
// (-inf) give weight 0 and no denormal ever reaches the accumulators (they are slow).
inline constexpr float exp2_floor = -126.0f;

#if defined(__AVX512F__) && defined(__AVX512DQ__)
struct avx512 {
  static constexpr int W = 16;
  using vec = __m512;

  static vec zero() { return _mm512_setzero_ps(); }
  static vec set1(float x) { return _mm512_set1_ps(x); }
  static vec load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, vec v) { _mm512_storeu_ps(p, v); }
  static __mmask16 first(int n) { return static_cast<__mmask16>((1u << n) - 1u); }  // n in [0, W]
  static vec load_first(const float* p, int n) { return _mm512_maskz_loadu_ps(first(n), p); }
  static void store_first(float* p, vec v, int n) { _mm512_mask_storeu_ps(p, first(n), v); }
  static vec fmadd(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
  static vec add(vec a, vec b) { return _mm512_add_ps(a, b); }
  static vec sub(vec a, vec b) { return _mm512_sub_ps(a, b); }
  static vec mul(vec a, vec b) { return _mm512_mul_ps(a, b); }
  static vec div(vec a, vec b) { return _mm512_div_ps(a, b); }
  // max(a, b) that keeps a NaN in b (the hardware returns the second operand when either is NaN).
  static vec max(vec a, vec b) { return _mm512_max_ps(a, b); }

  // Lanes [0, n) set to -inf: the causal mask inside a tile (query lane < key index).
  static vec mask_first(vec s, int n) {
    if (n <= 0) return s;
    if (n >= W) return set1(-std::numeric_limits<float>::infinity());
    return _mm512_mask_mov_ps(s, first(n), set1(-std::numeric_limits<float>::infinity()));
  }

  // 0 where x == -inf, else x: a fully masked row's running maximum becomes a harmless 0.
  static vec neg_inf_to_zero(vec x) {
    const __mmask16 inf = _mm512_cmp_ps_mask(x, set1(-std::numeric_limits<float>::infinity()),
                                             _CMP_EQ_OQ);
    return _mm512_maskz_mov_ps(static_cast<__mmask16>(~inf), x);
  }

  // 0 where l == 0 (every key masked), else a / l.
  static vec div_or_zero(vec a, vec l) {
    const __mmask16 nz = _mm512_cmp_ps_mask(l, zero(), _CMP_NEQ_UQ);
    return _mm512_maskz_div_ps(nz, a, l);
  }

  // x[i][j] ↔ x[j][i] for a 16 × 16 block: pairs of rows interleaved, then pairs of pairs, then
  // 128-bit quarters twice (64 shuffles). (The masked forms with every lane selected compile to
  // the plain instructions; the plain intrinsics' placeholder operand trips GCC 12's
  // -Wuninitialized in the sanitizer build.)
  static void transpose(vec (&x)[W]) {
    constexpr __mmask16 all = 0xFFFF;
    const auto lo_pairs = [](vec a, vec b) {  // 64-bit halves of each quarter, interleaved
      const __m512d ad = _mm512_castps_pd(a);
      return _mm512_castpd_ps(_mm512_mask_unpacklo_pd(ad, 0xFF, ad, _mm512_castps_pd(b)));
    };
    const auto hi_pairs = [](vec a, vec b) {
      const __m512d ad = _mm512_castps_pd(a);
      return _mm512_castpd_ps(_mm512_mask_unpackhi_pd(ad, 0xFF, ad, _mm512_castps_pd(b)));
    };
    vec t[W];
    for (int i = 0; i < W; i += 2) {
      t[i] = _mm512_mask_unpacklo_ps(x[i], all, x[i], x[i + 1]);
      t[i + 1] = _mm512_mask_unpackhi_ps(x[i], all, x[i], x[i + 1]);
    }
    // x[4g + k], quarter q: column 4q + k of rows 4g … 4g + 3.
    for (int i = 0; i < W; i += 4) {
      x[i] = lo_pairs(t[i], t[i + 2]);
      x[i + 1] = hi_pairs(t[i], t[i + 2]);
      x[i + 2] = lo_pairs(t[i + 1], t[i + 3]);
      x[i + 3] = hi_pairs(t[i + 1], t[i + 3]);
    }
    // Quarters 0, 2 (0x88) or 1, 3 (0xdd) of the first operand, then of the second.
    for (int k = 0; k < 4; ++k) {
      t[k] = _mm512_mask_shuffle_f32x4(x[k], all, x[k], x[4 + k], 0x88);
      t[4 + k] = _mm512_mask_shuffle_f32x4(x[k], all, x[k], x[4 + k], 0xdd);
      t[8 + k] = _mm512_mask_shuffle_f32x4(x[8 + k], all, x[8 + k], x[12 + k], 0x88);
      t[12 + k] = _mm512_mask_shuffle_f32x4(x[8 + k], all, x[8 + k], x[12 + k], 0xdd);
    }
    for (int k = 0; k < 4; ++k) {
      x[k] = _mm512_mask_shuffle_f32x4(t[k], all, t[k], t[8 + k], 0x88);
      x[8 + k] = _mm512_mask_shuffle_f32x4(t[k], all, t[k], t[8 + k], 0xdd);
      x[4 + k] = _mm512_mask_shuffle_f32x4(t[4 + k], all, t[4 + k], t[12 + k], 0x88);
      x[12 + k] = _mm512_mask_shuffle_f32x4(t[4 + k], all, t[4 + k], t[12 + k], 0xdd);
    }
  }

  // 2^u for u ≤ 0 (and NaN). vreduceps gives f = u - floor(u) in one instruction, vscalefps
  // multiplies by 2^floor(u) without building exponent bits by hand.
  static vec exp2(vec u) {
    const vec lo = set1(exp2_floor);
    const __mmask16 keep = _mm512_cmp_ps_mask(u, lo, _CMP_NLT_UQ);  // false below the floor
    // Lanes below the floor (-inf among them, whose f is NaN) are zeroed by the mask at the end,
    // so u needs no clamping first.
    const vec f = _mm512_reduce_ps(u, 0x09);  // round down, no precision exception
    vec p = set1(exp2_poly[6]);
    for (int i = 5; i >= 0; --i) p = fmadd(p, f, set1(exp2_poly[i]));
    return _mm512_maskz_scalef_ps(keep, p, u);
  }
};
#endif

#if defined(__AVX2__) && defined(__FMA__)
struct avx2 {
  static constexpr int W = 8;
  using vec = __m256;

  static vec zero() { return _mm256_setzero_ps(); }
  static vec set1(float x) { return _mm256_set1_ps(x); }
  static vec load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, vec v) { _mm256_storeu_ps(p, v); }
  static __m256i first(int n) {  // lanes [0, n) all ones
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static vec load_first(const float* p, int n) { return _mm256_maskload_ps(p, first(n)); }
  static void store_first(float* p, vec v, int n) { _mm256_maskstore_ps(p, first(n), v); }
  static vec fmadd(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
  static vec add(vec a, vec b) { return _mm256_add_ps(a, b); }
  static vec sub(vec a, vec b) { return _mm256_sub_ps(a, b); }
  static vec mul(vec a, vec b) { return _mm256_mul_ps(a, b); }
  static vec div(vec a, vec b) { return _mm256_div_ps(a, b); }
  static vec max(vec a, vec b) { return _mm256_max_ps(a, b); }

  static vec mask_first(vec s, int n) {
    if (n <= 0) return s;
    const vec ninf = set1(-std::numeric_limits<float>::infinity());
    if (n >= W) return ninf;
    return _mm256_blendv_ps(s, ninf, _mm256_castsi256_ps(first(n)));
  }

  static vec neg_inf_to_zero(vec x) {
    const vec inf = _mm256_cmp_ps(x, set1(-std::numeric_limits<float>::infinity()), _CMP_EQ_OQ);
    return _mm256_andnot_ps(inf, x);
  }

  static vec div_or_zero(vec a, vec l) {
    const vec nz = _mm256_cmp_ps(l, zero(), _CMP_NEQ_UQ);
    return _mm256_and_ps(nz, _mm256_div_ps(a, l));
  }

  // x[i][j] ↔ x[j][i] for an 8 × 8 block: pairs of rows interleaved, pairs of pairs, then halves.
  static void transpose(vec (&x)[W]) {
    vec t[W], u[W];
    for (int i = 0; i < W; i += 2) {
      t[i] = _mm256_unpacklo_ps(x[i], x[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(x[i], x[i + 1]);
    }
    // u[4g + k], half h: column 4h + k of rows 4g … 4g + 3.
    for (int i = 0; i < W; i += 4) {
      u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
      u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int k = 0; k < 4; ++k) {
      x[k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x20);
      x[4 + k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x31);
    }
  }

  // 2^u for u ≤ 0 (and NaN): floor, polynomial, then 2^floor(u) built in the exponent bits.
  static vec exp2(vec u) {
    const vec lo = set1(exp2_floor);
    const vec keep = _mm256_cmp_ps(u, lo, _CMP_NLT_UQ);
    u = _mm256_max_ps(lo, u);
    const vec fl = _mm256_floor_ps(u);
    const vec f = _mm256_sub_ps(u, fl);
    vec p = set1(exp2_poly[6]);
    for (int i = 5; i >= 0; --i) p = fmadd(p, f, set1(exp2_poly[i]));
    // floor(u) in [-126, 0]: the biased exponent 127 + n is in [1, 127], a normal power of two.
    const __m256i n = _mm256_cvtps_epi32(fl);
    const vec two_n = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
    return _mm256_and_ps(keep, _mm256_mul_ps(p, two_n));
  }
};
#endif

}  // namespace attn::simd
