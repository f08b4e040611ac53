// gemm_bf16 on Intel AMX (tdpbf16ps): the same product as gemm_bf16_avx512 — operands rounded to
// bf16, float32 sums — on the tile unit, which multiplies a 16 × 32 block of A by a 32 × 16
// block of B in one instruction (16 · 16 · 32 multiply-adds against vdpbf16ps's 16 · 2).
//
// Both operands are packed whole, rounded to bf16 and padded with zeros to whole tiles: A as
// rows along the inner dimension, B as the pairs tdpbf16ps reads (op(B)[2q, j] in the low half
// of a 32-bit word, op(B)[2q + 1, j] in the high), each in blocks whose tiles are contiguous
// (packed_layout).
// Each 32 × 32 block of C is four accumulator tiles summed over the whole inner dimension in
// order, then written through the epilogue (alpha, beta, bias, C's groups), or straight into C. The threads share
// the blocks, so the bits never depend on their number; they do differ from vdpbf16ps's, whose
// sums run in another order.
#include "kernels/gemm.hpp"

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512BF16__)
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/half.hpp"
#include "kernels/scratch_vectors.hpp"

namespace attn::kernels {

namespace {

constexpr int64_t tile_rows = 16;      // of A and C
constexpr int64_t tile_depth = 32;     // bf16 values of the inner dimension in one A row
constexpr int64_t block = 2 * tile_rows;  // C in 32 × 32 blocks: 2 A tiles × 2 B tiles

// The tile configuration ldtilecfg reads (palette 1): eight tiles of 16 rows × 64 bytes.
struct alignas(64) tile_config {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// Sixteen floats to sixteen bf16 (to nearest, ties to even, as float_to_bf16).
inline __m256i to_bf16(__m512 x) { return (__m256i)_mm512_cvtneps_pbh(x); }  // (a vector cast: the same bits)

// Where op(A)[i, p] and the pair op(B)[2q.., j] live in the packed operands: each tile's rows
// adjacent (64 bytes apart), never a row of the whole matrix apart. (Rows 4 KiB apart — an
// inner dimension or a B of 1024 columns — fall in one set of the L1 cache and evict each other.)
struct packed_layout {
  int64_t kp;  // the inner dimension padded to whole tiles
  // A in 32 × 32 blocks, block (i / 32, p / 32) at 1024 · (i / 32 · kp / 32 + p / 32), row-major.
  int64_t a(int64_t i, int64_t p) const {
    return ((i / block) * (kp / tile_depth) + p / tile_depth) * 1024 + (i % block) * 32 + p % tile_depth;
  }
  // B in panels of 32 columns, each kp / 2 rows of 32 pairs.
  int64_t b(int64_t q, int64_t j) const { return ((j / block) * (kp / 2) + q) * block + j % block; }
};

// The first `count` of 16 lanes (none when count <= 0).
inline __mmask16 columns_mask(int64_t count) {
  return count >= 16 ? __mmask16(0xffff) : count <= 0 ? __mmask16(0) : __mmask16((1u << count) - 1);
}

// 16 columns of two rows (null: zeros) as bf16 pairs, the first row's in the low halves.
inline __m512i pair_words(const float* first, const float* second, __mmask16 keep) {
  const __m512i low = first != nullptr ? _mm512_cvtepu16_epi32(to_bf16(_mm512_maskz_loadu_ps(keep, first)))
                                       : _mm512_setzero_si512();
  const __m512i high = second != nullptr ? _mm512_cvtepu16_epi32(to_bf16(_mm512_maskz_loadu_ps(keep, second)))
                                         : _mm512_setzero_si512();
  return _mm512_or_si512(low, _mm512_slli_epi32(high, 16));
}

// r[k][j] becomes r[j][k]: a 16 × 16 transpose of 32-bit words, in three rounds of shuffles
// (pairs of words, pairs of pairs, then the 128-bit lanes).
inline void transpose_words(__m512i r[16]) {
  __m512i a[16], b[16];
  for (int k = 0; k < 16; k += 2) {
    a[k] = _mm512_unpacklo_epi32(r[k], r[k + 1]);
    a[k + 1] = _mm512_unpackhi_epi32(r[k], r[k + 1]);
  }
  for (int k = 0; k < 16; k += 4) {  // b[k + m], lane l: rows k..k+3 at column 4l + m
    b[k] = _mm512_unpacklo_epi64(a[k], a[k + 2]);
    b[k + 1] = _mm512_unpackhi_epi64(a[k], a[k + 2]);
    b[k + 2] = _mm512_unpacklo_epi64(a[k + 1], a[k + 3]);
    b[k + 3] = _mm512_unpackhi_epi64(a[k + 1], a[k + 3]);
  }
  for (int m = 0; m < 4; ++m) {  // column 4l + m gathers lane l of b[m], b[4 + m], b[8 + m], b[12 + m]
    const __m512i c = _mm512_shuffle_i32x4(b[m], b[4 + m], 0x44), d = _mm512_shuffle_i32x4(b[8 + m], b[12 + m], 0x44);
    const __m512i e = _mm512_shuffle_i32x4(b[m], b[4 + m], 0xEE), f = _mm512_shuffle_i32x4(b[8 + m], b[12 + m], 0xEE);
    r[m] = _mm512_shuffle_i32x4(c, d, 0x88);
    r[4 + m] = _mm512_shuffle_i32x4(c, d, 0xDD);
    r[8 + m] = _mm512_shuffle_i32x4(e, f, 0x88);
    r[12 + m] = _mm512_shuffle_i32x4(e, f, 0xDD);
  }
}

// op(A)'s rows [i0, i1) (whole tiles of rows) into a_packed, zeros past m and k.
// (Row i lands where row i − first_row of a packed A would: a lone block of rows is packed as one.)
void pack_a(const gemm_args& g, const packed_layout& at, uint16_t* a_packed, int64_t i0, int64_t i1,
            int64_t first_row = 0) {
  const int64_t kp = at.kp;
  if (!g.trans_a) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t p = 0; p < kp; p += 16) {
        uint16_t* out = a_packed + at.a(i - first_row, p);
        const int64_t left = i < g.m ? std::max<int64_t>(0, std::min<int64_t>(16, g.k - p)) : 0;
        const float* src = g.a + i * g.lda + p;
        if (left == 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), to_bf16(_mm512_loadu_ps(src)));
        else {
          for (int64_t q = 0; q < left; ++q) out[q] = float_to_bf16(src[q]);
          std::fill(out + left, out + 16, uint16_t{0});
        }
      }
    return;
  }
  // A stored [k, m]: a column of it is a row of op(A). Rows 2q and 2q + 1 of A make 16 pairs
  // of 16 columns, transposed as 32-bit words: each column's 16 pairs along the inner dimension,
  // a 64-byte row of the packed block.
  for (int64_t pb = 0; pb < kp; pb += tile_depth)
    for (int64_t ib = i0; ib < i1; ib += 16) {
      const __mmask16 keep = columns_mask(g.m - ib);
      __m512i words[16];
      for (int64_t q = 0; q < 16; ++q) {
        const int64_t p = pb + 2 * q;
        words[q] = pair_words(p < g.k ? g.a + p * g.lda + ib : nullptr,
                              p + 1 < g.k ? g.a + (p + 1) * g.lda + ib : nullptr, keep);
      }
      transpose_words(words);
      for (int64_t r = 0; r < 16; ++r) _mm512_storeu_si512(a_packed + at.a(ib + r - first_row, pb), words[r]);
    }
}

// op(B)'s pairs of inner rows [q0, q1) (rows 2q and 2q + 1) into b_packed, np columns each,
// zeros past k and n.
void pack_b(const gemm_args& g, const packed_layout& at, int64_t np, uint32_t* b_packed, int64_t q0, int64_t q1) {
  const auto one = [&g](int64_t p, int64_t j) -> uint32_t {  // one bf16 of op(B), zero outside it
    if (p >= g.k || j >= g.n) return 0;
    return float_to_bf16(g.trans_b ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j]);
  };
  if (!g.trans_b) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t p = 2 * q;
      for (int64_t j = 0; j < np; j += 16) {
        uint32_t* out = b_packed + at.b(q, j);
        if (p + 1 < g.k && j + 16 <= g.n) {
          const float* r0 = g.b + p * g.ldb + j;
          const __m512i lo = _mm512_cvtepu16_epi32(to_bf16(_mm512_loadu_ps(r0)));
          const __m512i hi = _mm512_cvtepu16_epi32(to_bf16(_mm512_loadu_ps(r0 + g.ldb)));
          _mm512_storeu_si512(out, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        } else {
          for (int64_t c = 0; c < 16; ++c) out[c] = one(p, j + c) | one(p + 1, j + c) << 16;
        }
      }
    }
    return;
  }
  // B stored [n, k]: a row of it holds a column of op(B), its pairs adjacent. 16 rows of B,
  // 16 pairs each, transposed as 32-bit words: a row of 16 columns' pairs in the panel.
  for (int64_t q = q0; q < q1; q += 16) {
    const __mmask16 keep_low = columns_mask(g.k - 2 * q), keep_high = columns_mask(g.k - 2 * q - 16);
    for (int64_t jb = 0; jb < np; jb += 16) {
      __m512i words[16];
      for (int64_t r = 0; r < 16; ++r) {
        if (jb + r >= g.n) {
          words[r] = _mm512_setzero_si512();
          continue;
        }
        const float* src = g.b + (jb + r) * g.ldb + 2 * q;
        const __m256i low = to_bf16(_mm512_maskz_loadu_ps(keep_low, src));
        const __m256i high = to_bf16(_mm512_maskz_loadu_ps(keep_high, src + 16));
        words[r] = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);  // 16 pairs, in order
      }
      transpose_words(words);
      for (int64_t c = 0; c < 16; ++c) _mm512_storeu_si512(b_packed + at.b(q + c, jb), words[c]);
    }
  }
}

// One 32 × 32 block of C: rows i0.., columns j0.. of the padded product, then the epilogue.
// With alpha 1 and beta 1 (a gradient adding up) the sums start from C, as they do when the
// block is written in place, so that every block of C rounds the same way.
// stream: C is written past the caches (a whole block at a time, C aligned, beta 0).
// a_block: op(A)'s packed rows i0.. (32 of them, kp deep).
void block_product(const gemm_args& g, const packed_layout& at, const uint16_t* a_block, const uint32_t* b_packed,
                   int64_t i0, int64_t j0, bool stream) {
  const int64_t rows = std::min(block, g.m - i0), cols = std::min(block, g.n - j0);
  const bool from_c = g.alpha == 1.0f && g.beta == 1.0f;
  const bool whole = rows == block && cols == block;
  stream = stream && whole;
  // In place: a whole block of a plain C, nothing to add but what the tiles hold.
  const bool in_place = !stream && whole && g.c_rows == 0 && g.bias == nullptr && g.alpha == 1.0f &&
                        (g.beta == 0.0f || g.beta == 1.0f);
  alignas(64) float sums[block][block];
  float* const out = in_place ? g.c + i0 * g.ldc + j0 : &sums[0][0];
  const auto out_stride = static_cast<long>((in_place ? g.ldc : block) * 4);
  const int64_t out_ld = in_place ? g.ldc : block;
  if (from_c) {
    if (!in_place)
      for (int64_t r = 0; r < block; ++r)
        for (int64_t c = 0; c < block; ++c) sums[r][c] = r < rows && c < cols ? *g.c_at(i0 + r, j0 + c) : 0.0f;
    _tile_loadd(0, out, out_stride);
    _tile_loadd(1, out + 16, out_stride);
    _tile_loadd(2, out + 16 * out_ld, out_stride);
    _tile_loadd(3, out + 16 * out_ld + 16, out_stride);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  const uint32_t* b_panel = b_packed + at.b(0, j0);
  for (int64_t p = 0; p < at.kp; p += tile_depth) {
    const uint16_t* a = a_block + p * block;  // this step's 32 × 32 block of A: two tiles
    const uint32_t* b = b_panel + (p / 2) * block;  // its 16 pairs × 32 columns of B: two tiles
    _tile_loadd(4, a, 64);
    _tile_loadd(5, a + 512, 64);
    _tile_loadd(6, b, 128);
    _tile_loadd(7, b + 16, 128);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, out_stride);
  _tile_stored(1, out + 16, out_stride);
  _tile_stored(2, out + 16 * out_ld, out_stride);
  _tile_stored(3, out + 16 * out_ld + 16, out_stride);
  if (in_place) return;
  if (stream) {
    for (int64_t r = 0; r < block; ++r) {
      float* const dst = g.c + (i0 + r) * g.ldc + j0;
      _mm512_stream_ps(dst, _mm512_load_ps(&sums[r][0]));
      _mm512_stream_ps(dst + 16, _mm512_load_ps(&sums[r][16]));
    }
    return;
  }
  const __m512 alpha = _mm512_set1_ps(g.alpha), beta = _mm512_set1_ps(g.beta);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; c += 16) {
      const __mmask16 keep = static_cast<__mmask16>(cols - c >= 16 ? 0xffff : (1u << (cols - c)) - 1);
      // A group of C's columns is a multiple of 32 wide: these 16 never straddle two.
      float* const dst = g.c_at(i0 + r, j0 + c);
      __m512 v = _mm512_load_ps(&sums[r][c]);
      if (!from_c) {
        v = _mm512_mul_ps(alpha, v);
        if (g.beta != 0.0f) v = _mm512_add_ps(v, _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(keep, dst)));
      }
      if (g.bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(keep, g.bias + j0 + c));
      _mm512_mask_storeu_ps(dst, keep, v);
    }
}

void configure_tiles() {
  tile_config config;
  for (int t = 0; t < 8; ++t) config.rows[t] = tile_rows, config.bytes_per_row[t] = 64;
  _tile_loadconfig(&config);
}

}  // namespace

void gemm_bf16_amx(const gemm_args& g, int threads) {
  const int64_t kp = round_up(g.k, tile_depth), mp = round_up(g.m, block), np = round_up(g.n, block);
  // Grown, never shrunk: a vector resized down and up again between products of other shapes
  // would zero its new part each time (every element is written by the packing anyway).
  const packed_layout at{kp};
  const int64_t row_blocks = mp / block, column_blocks = np / block;
  // The blocks in groups of B's panels that fit the L2 cache together, a group's panels
  // innermost: each block of A is read from L1 for every panel of the group, and C is written
  // a group's width of each row at a time (not a row per block, a page apart).
  const int64_t group = std::clamp<int64_t>((256 << 10) / (kp * 64), 1, column_blocks);
  // With one group each block of A is used once, by one thread: it is packed there, just
  // before, into that thread's cache, never written out whole and read back (a long inner
  // dimension with few columns, dlogits·table, is mostly A's bytes).
  const bool a_in_blocks = column_blocks <= group;
  thread_local std::vector<uint16_t> a_store;
  thread_local std::vector<uint32_t> b_store;
  if (!a_in_blocks && a_store.size() < static_cast<size_t>(mp * kp))
    resize_scratch(a_store, static_cast<size_t>(mp * kp));
  if (b_store.size() < static_cast<size_t>(kp / 2 * np))
    resize_scratch(b_store, static_cast<size_t>(kp / 2 * np));
  uint16_t* const a_packed = a_store.data();
  uint32_t* const b_packed = b_store.data();
  const int team = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, row_blocks * column_blocks)));
#pragma omp parallel num_threads(team)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const auto share = [t, nt](int64_t total, int64_t unit) {  // this thread's part, whole units
      const int64_t units = total / unit;
      return std::pair{units * t / nt * unit, units * (t + 1) / nt * unit};
    };
    if (!a_in_blocks) {
      const auto [i0, i1] = share(mp, 16);
      pack_a(g, at, a_packed, i0, i1);
    }
    const auto [q0, q1] = share(kp / 2, 16);
    pack_b(g, at, np, b_packed, q0, q1);
#pragma omp barrier
    configure_tiles();
    thread_local std::vector<uint16_t> a_block_store;  // this thread's block of A (a_in_blocks)
    if (a_in_blocks && a_block_store.size() < static_cast<size_t>(block * kp))
      resize_scratch(a_block_store, static_cast<size_t>(block * kp));
    int64_t packed_rows = -1;  // the first row of the block in a_block_store
    const int64_t blocks = row_blocks * column_blocks;
    // A C far larger than the caches (the tied output's logits, [rows, vocabulary]) is written
    // with streaming stores: the tiles' own stores, each line of them read before it is
    // written, ran this product at a fifth of the unit's rate.
    const bool stream = g.beta == 0.0f && g.alpha == 1.0f && g.bias == nullptr && g.c_rows == 0 &&
                        g.m * g.n * 4 > (int64_t{32} << 20) && g.ldc % 16 == 0 &&
                        reinterpret_cast<uintptr_t>(g.c) % 64 == 0;
    for (int64_t b = blocks * t / nt; b < blocks * (t + 1) / nt; ++b) {
      const int64_t first = b / (row_blocks * group) * group, rest = b % (row_blocks * group);
      const int64_t width = std::min(group, column_blocks - first);  // panels in this group
      const int64_t i0 = rest / width * block, j0 = (first + rest % width) * block;
      if (a_in_blocks && packed_rows != i0) {
        pack_a(g, at, a_block_store.data(), i0, i0 + block, i0);
        packed_rows = i0;
      }
      block_product(g, at, a_in_blocks ? a_block_store.data() : a_packed + at.a(i0, 0), b_packed, i0, j0, stream);
    }
    if (stream) _mm_sfence();  // the streamed lines visible to the other threads after the region
    _tile_release();
  }
}

}  // namespace attn::kernels
#endif
