// The fused attention forward (FlashAttention's idea, laid out for CPU vectors), written once
// over a vector type V and compiled per instruction set by sdpa_fused_<isa>.cpp.
//
// A work item is one (batch, head, tile of BR queries). It walks the keys in tiles of BC:
//   scores   Sᵀ[key][query] = K_tile · Qᵀ      (queries along the vector lanes)
//   softmax  running max m and sum l per query, updated per tile; the accumulator O is
//            rescaled by 2^(m_old − m_new) when the max grows (the "online softmax")
//   values   Oᵀ[d][query] += V[key][d] · Pᵀ[key][query]   (queries along the lanes again)
// so the L×S matrix is never stored: memory is O(BR·BC) per thread, linear in the sequence.
//
// Why this layout: with queries in the lanes, the row statistics are plain vertical vector
// operations (no horizontal reductions); both products are the same register block, a few
// broadcast values of K or V against the query vectors (P·V as rows of V against broadcast
// values of P ran 3–4% slower overall at 1,2048,8,64); K and V are read where the caller puts
// them (grouped-query heads just point at their shared K/V head; flash_forward_dense.hpp first
// copies a strided V into adjacent rows), and the query tile is repacked per item (transposed,
// pre-multiplied by scale·log2 e, so the softmax works in base 2 and exp becomes exp2). O is
// transposed back once per work item, as it is written.
//
// Each output element is produced by one thread in a fixed order, so results are identical
// from run to run and do not depend on the number of threads.
//
// With BF16 the two products take bf16 operands and accumulate in float32 (V then is one of
// simd_bf16.hpp's structs): the query tile is packed as bf16 pairs along D, K and V come
// pre-packed (flash_problem's kw, vw; or, where each head has one work item, that item packs its
// own), and P is rounded to bf16 pairs along the keys as the softmax computes it. The softmax, masks and rescaling are the float32 ones, unchanged.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/half.hpp"
#include "kernels/flash_pack_bf16.hpp"
#include "kernels/flash_problem.hpp"
#include "kernels/flush_denormals.hpp"
#include "kernels/scratch_vectors.hpp"
#include "kernels/simd.hpp"

namespace attn::kernels {
namespace {

constexpr float log2e = 1.4426950408889634f;
constexpr float neg_inf = -std::numeric_limits<float>::infinity();

template <class V, int QV, int JB, int JD, bool BF16 = false>
class flash_forward {
  using vec = typename V::vec;

 public:
  static constexpr int W = V::W;
  static constexpr int BR = QV * W;  // queries per tile: QV vectors
  static constexpr int BC = 128;     // keys per tile

  explicit flash_forward(const flash_problem& p)
      : p_(p), group_(p.Hkv == 0 ? 1 : p.H / p.Hkv) {
    // The mask is "per key" when it does not vary along the queries (key padding, [S], [B,1,1,S]).
    if (p.mask != nullptr) mask_mode_ = p.ms[2] == 0 ? mask_mode::per_key : mask_mode::full;
  }

  void run() const {
    const int64_t tiles = (p_.L + BR - 1) / BR;
    const int64_t items = p_.B * p_.H * tiles;
#pragma omp parallel if (items > 1)
    {
      const denormals_flushed flushed;
      scratch s(p_.D, p_.Dv, mask_mode_);
      // Dynamic: under a causal mask a tile's cost grows with its index. Within each head the
      // last (heaviest) tile goes first, so the cheap ones fill in at the end.
#pragma omp for schedule(dynamic, 1)
      for (int64_t item = 0; item < items; ++item) {
        const int64_t bh = item / tiles, t = tiles - 1 - item % tiles;
        tile(s, bh / p_.H, bh % p_.H, t * BR);
      }
    }
  }

 private:
  enum class mask_mode { none, per_key, full };

  struct scratch {
    std::vector<float> qt;    // [D][BR]   the query tile, transposed and pre-scaled
    std::vector<float> st;    // [BC][BR]  scores, then probabilities (+ JB rows: the last
                              //           micro-block of keys may run past BC)
    std::vector<float> mt;    // [BC][BR]  the mask tile (full masks) or [BC] (per-key masks)
    std::vector<float> ot;    // [Dv][BR]  the unnormalised output, transposed
    std::vector<float> m, l;  // [BR]      running max (base 2) and sum
    std::vector<float> alpha; // [BR]      this tile's rescale factor
    std::vector<uint32_t> qw; // [D/2][BR] bf16: the query tile as pairs along D (qt unused)
    std::vector<uint32_t> pw; // [BC/2][BR] bf16: P as pairs along the keys
    std::vector<uint32_t> kw, vw;  // bf16 with no packs in the problem: this item's head's packs
    scratch(int64_t D, int64_t Dv, mask_mode mode)
        : qt(BF16 ? 0 : static_cast<size_t>(std::max<int64_t>(D, 1) * BR)),
          st(static_cast<size_t>((BC + JB) * BR)),
          mt(mode == mask_mode::full ? BC * BR : mode == mask_mode::per_key ? BC : 0),
          ot(static_cast<size_t>(std::max<int64_t>(Dv, 1) * BR)),
          m(BR),
          l(BR),
          alpha(BR),
          qw(BF16 ? static_cast<size_t>(std::max<int64_t>((D + 1) / 2, 1) * BR) : 0),
          pw(BF16 ? static_cast<size_t>(BC / 2 * BR) : 0) {}
  };

  // One (batch, K/V head)'s operands: float32 rows, or the bf16 packs.
  struct head {
    const float *k, *v;
    const uint32_t *kw, *vw;
  };

  // ---- one work item ----
  void tile(scratch& s, int64_t b, int64_t h, int64_t i0) const {
    const int64_t rows = std::min<int64_t>(BR, p_.L - i0);
    const head hd = head_operands(s, b, h / group_);
    pack_queries(s, b, h, i0, rows);

    std::fill(s.m.begin(), s.m.end(), neg_inf);
    std::fill(s.l.begin(), s.l.end(), 0.0f);
    // Oᵀ starts as the first key tile's products rather than as zeros to add them to: the fill
    // was 2% of the time at 16,64,8,64 (perf).
    bool first = true;
    // Causal (top-left): the tile's last query sees keys up to its own index; later key tiles
    // are skipped, not computed.
    const int64_t jend = p_.causal ? std::min(p_.S, i0 + rows) : p_.S;
    for (int64_t j0 = 0; j0 < jend; j0 += BC) {
      const int nk = static_cast<int>(std::min<int64_t>(BC, jend - j0));
      // A tile whose every score is masked would add exactly nothing: skip it.
      if (mask_mode_ != mask_mode::none && !load_mask(s, b, h, i0, rows, j0, nk)) continue;
      scores(s, hd, j0, nk, jend);
      apply_masks(s, i0, j0, nk);
      softmax_update(s, nk);
      accumulate_values(s, hd, j0, nk, first);
      first = false;
    }
    if (first) std::fill(s.ot.begin(), s.ot.end(), 0.0f);  // every key masked: the rows are 0
    write_output(s, b, h, i0, rows);
    if (p_.weights != nullptr) write_weights(s, b, h, i0, rows, hd);
  }

  head head_operands(scratch& s, int64_t b, int64_t hk) const {
    head hd{p_.k + b * p_.ks[0] + hk * p_.ks[1], p_.v + b * p_.vs[0] + hk * p_.vs[1], nullptr, nullptr};
    if constexpr (BF16) {
      if (p_.kw == nullptr) {  // the caller left the packing to the work items (one per head)
        const int64_t pairs = (p_.S + 1) / 2;
        resize_scratch(s.kw, static_cast<size_t>(p_.S * p_.kw_row));
        resize_scratch(s.vw, static_cast<size_t>(pairs * p_.vw_cols));
        pack_key_value_pairs<V>(p_, b, hk, 0, pairs, s.kw.data(), s.vw.data());
        hd.kw = s.kw.data(), hd.vw = s.vw.data();
        return hd;
      }
      const int64_t bh = b * p_.Hkv + hk;
      hd.kw = p_.kw + bh * p_.S * p_.kw_row;
      hd.vw = p_.vw + bh * ((p_.S + 1) / 2) * p_.vw_cols;
    }
    return hd;
  }

  // qt[d][r] = q[i0 + r][d] · scale · log2 e; rows past L are zero. Blocks of W rows × W values
  // of D, transposed in registers. (bf16: qw[d/2][r] holds the pair d, d + 1, each rounded to
  // bf16 after the scaling, an odd D's last pair with a zero; blocks of W rows × W pairs.)
  void pack_queries(scratch& s, int64_t b, int64_t h, int64_t i0, int64_t rows) const {
    constexpr int per = BF16 ? 2 * W : W;  // elements of D per block
    const vec c = V::set1(p_.scale * log2e);
    const float* qb = p_.q + b * p_.qs[0] + h * p_.qs[1] + i0 * p_.qs[2];
    // x[at …] · c, n of them (zeros past n)
    const auto load = [&](const float* x, int64_t at, int64_t n) {
      if (n <= 0) return V::zero();
      return V::mul(n >= W ? V::load(x + at) : V::load_first(x + at, static_cast<int>(n)), c);
    };
    for (int u = 0; u < QV; ++u) {
      for (int64_t d0 = 0; d0 < p_.D; d0 += per) {
        const int64_t nd = std::min<int64_t>(per, p_.D - d0);
        vec x[W];
        for (int i = 0; i < W; ++i) {
          const float* qr = qb + (u * W + i) * p_.qs[2] + d0;
          if (u * W + i >= rows) x[i] = V::zero();
          else if constexpr (BF16) x[i] = V::as_floats(V::pack_consecutive(load(qr, 0, nd), load(qr, W, nd - W)));
          else x[i] = load(qr, 0, nd);
        }
        V::transpose(x);
        for (int j = 0; j < (nd + per / W - 1) / (per / W); ++j) {
          if constexpr (BF16) V::store_words(s.qw.data() + (d0 / 2 + j) * BR + u * W, V::as_words(x[j]));
          else V::store(s.qt.data() + (d0 + j) * BR + u * W, x[j]);
        }
      }
    }
  }

  // The mask tile in base 2; false when every (valid) entry is -inf.
  bool load_mask(scratch& s, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0,
                 int nk) const {
    const float* mb = p_.mask + b * p_.ms[0] + h * p_.ms[1] + j0 * p_.ms[3];
    bool any = false;
    if (mask_mode_ == mask_mode::per_key) {
      for (int jj = 0; jj < nk; ++jj) {
        const float x = mb[jj * p_.ms[3]];
        s.mt[jj] = x * log2e;
        any |= !(x == neg_inf);
      }
      return any;
    }
    // Row by row, reading along the keys: a walk down a column of a mask whose rows are 4 KiB
    // apart (S = 1024) lands every read in the same cache set and missed L1 each time.
    for (int64_t r = 0; r < BR; ++r) {
      float* col = s.mt.data() + r;
      if (r >= rows) {  // past L: zeros, never read back
        for (int jj = 0; jj < nk; ++jj) col[jj * BR] = 0.0f;
        continue;
      }
      const float* mr = mb + (i0 + r) * p_.ms[2];
      bool row_any = false;
      for (int jj = 0; jj < nk; ++jj) {
        const float x = mr[jj * p_.ms[3]];
        col[jj * BR] = x * log2e;
        row_any |= x != neg_inf;
      }
      any |= row_any;
    }
    return any;
  }

  // st[jj][:] = Kᵀ tile × query tile, micro-blocks of JB keys × QV vectors of queries.
  void scores(scratch& s, const head& hd, int64_t j0, int nk, int64_t jend) const {
    if constexpr (BF16) {
      const uint32_t* krow[JB];
      for (int jb = 0; jb < nk; jb += JB) {
        for (int x = 0; x < JB; ++x) krow[x] = hd.kw + std::min(j0 + jb + x, jend - 1) * p_.kw_row;
        score_block_bf16(s.qw.data(), krow, s.st.data() + jb * BR);
      }
      return;
    }
    const float* const kh = hd.k;
    const float* krow[JB];
    for (int jb = 0; jb < nk; jb += JB) {
      // The last block may run past the valid keys: it reads the last valid key again and its
      // rows of st are never used.
      for (int x = 0; x < JB; ++x) krow[x] = kh + std::min(j0 + jb + x, jend - 1) * p_.ks[2];
      score_block(s.qt.data(), krow, s.st.data() + jb * BR);
    }
  }

  void score_block(const float* qt, const float* const* krow, float* out) const {
    vec acc[JB][QV];
    for (int x = 0; x < JB; ++x)
      for (int u = 0; u < QV; ++u) acc[x][u] = V::zero();
    for (int64_t d = 0; d < p_.D; ++d) {
      vec q[QV];
      for (int u = 0; u < QV; ++u) q[u] = V::load(qt + d * BR + u * W);
      for (int x = 0; x < JB; ++x) {
        const vec kb = V::set1(krow[x][d]);
        for (int u = 0; u < QV; ++u) acc[x][u] = V::fmadd(kb, q[u], acc[x][u]);
      }
    }
    for (int x = 0; x < JB; ++x)
      for (int u = 0; u < QV; ++u) V::store(out + x * BR + u * W, acc[x][u]);
  }

  // The same block from bf16 pairs: half the steps, each multiplying two elements of D.
  void score_block_bf16(const uint32_t* qw, const uint32_t* const* krow, float* out) const {
    vec acc[JB][QV];
    for (int x = 0; x < JB; ++x)
      for (int u = 0; u < QV; ++u) acc[x][u] = V::zero();
    for (int64_t d2 = 0; d2 < p_.kw_row; ++d2) {
      typename V::words q[QV];
      for (int u = 0; u < QV; ++u) q[u] = V::load_words(qw + d2 * BR + u * W);
      for (int x = 0; x < JB; ++x) {
        const typename V::words kb = V::set1_word(krow[x][d2]);
        for (int u = 0; u < QV; ++u) acc[x][u] = V::dot(acc[x][u], q[u], kb);
      }
    }
    for (int x = 0; x < JB; ++x)
      for (int u = 0; u < QV; ++u) V::store(out + x * BR + u * W, acc[x][u]);
  }

  // Adds the mask and sets the causally hidden scores (query i < key j) to -inf.
  void apply_masks(scratch& s, int64_t i0, int64_t j0, int nk) const {
    const bool diagonal = p_.causal && j0 + nk - 1 > i0;
    if (mask_mode_ == mask_mode::none && !diagonal) return;
    for (int jj = 0; jj < nk; ++jj) {
      float* row = s.st.data() + jj * BR;
      for (int u = 0; u < QV; ++u) {
        vec x = V::load(row + u * W);
        if (mask_mode_ == mask_mode::per_key) x = V::add(x, V::set1(s.mt[jj]));
        if (mask_mode_ == mask_mode::full) x = V::add(x, V::load(s.mt.data() + jj * BR + u * W));
        // Lanes whose query index i0 + u·W + lane is below the key index j0 + jj.
        if (diagonal) x = V::mask_first(x, static_cast<int>(j0 + jj - (i0 + u * W)));
        V::store(row + u * W, x);
      }
    }
  }

  // The online softmax step: new max, rescale factor, probabilities and their sum. The QV
  // vectors of queries go side by side through the keys: their max and sum are QV independent
  // chains of dependent additions, which one after another left the FP units waiting.
  void softmax_update(scratch& s, int nk) const {
    vec mx[QV], m_use[QV], sum[QV];
    for (int u = 0; u < QV; ++u) mx[u] = V::load(s.m.data() + u * W);
    for (int jj = 0; jj < nk; ++jj)
      for (int u = 0; u < QV; ++u) mx[u] = V::max(mx[u], V::load(s.st.data() + jj * BR + u * W));
    for (int u = 0; u < QV; ++u) {
      // A query that has seen only masked keys keeps max -inf; subtracting 0 instead keeps
      // exp2(-inf - max) = 0 rather than NaN.
      m_use[u] = V::neg_inf_to_zero(mx[u]);
      sum[u] = V::zero();
    }
    if constexpr (BF16) {
      // Two keys at a time, rounded into P's bf16 pairs as they come (a missing last key of an
      // odd tile is 0): no float32 P is stored and read back. The sum is taken in key order,
      // as below.
      for (int jj = 0; jj < nk; jj += 2) {
        for (int u = 0; u < QV; ++u) {
          const float* x = s.st.data() + jj * BR + u * W;
          const vec lo = V::exp2(V::sub(V::load(x), m_use[u]));
          const vec hi = jj + 1 < nk ? V::exp2(V::sub(V::load(x + BR), m_use[u])) : V::zero();
          sum[u] = V::add(V::add(sum[u], lo), hi);
          V::store_words(s.pw.data() + jj / 2 * BR + u * W, V::pack_pairs(lo, hi));
        }
      }
    } else {
      for (int jj = 0; jj < nk; ++jj) {
        for (int u = 0; u < QV; ++u) {
          float* x = s.st.data() + jj * BR + u * W;
          const vec pr = V::exp2(V::sub(V::load(x), m_use[u]));
          V::store(x, pr);
          sum[u] = V::add(sum[u], pr);
        }
      }
    }
    for (int u = 0; u < QV; ++u) {
      const vec m_old = V::load(s.m.data() + u * W);
      const vec alpha = V::exp2(V::sub(m_old, m_use[u]));
      V::store(s.m.data() + u * W, mx[u]);
      V::store(s.alpha.data() + u * W, alpha);
      V::store(s.l.data() + u * W, V::fmadd(V::load(s.l.data() + u * W), alpha, sum[u]));
    }
  }

  // Oᵀ[d][:] ← Oᵀ[d][:] · α + Σ_jj V[j0 + jj][d] · P[jj][:] over the tile's keys, in blocks of
  // JD values of a row of V × QV vectors of queries: the score block's shape, V's values
  // broadcast and P's rows (queries along the lanes, as the softmax left them) loaded. The online
  // softmax's rescale by α rides on the accumulators' first load; the first tile starts from 0
  // (Oᵀ · α would be 0 · 0 there). (bf16: a pair of keys per step, P's words against V's packed
  // pairs.)
  void accumulate_values(scratch& s, const head& hd, int64_t j0, int nk, bool first) const {
    int64_t d0 = 0;
    for (; d0 + JD <= p_.Dv; d0 += JD) value_block<JD>(s, hd, j0, nk, d0, first);
    if (d0 < p_.Dv) value_tail<JD - 1>(static_cast<int>(p_.Dv - d0), s, hd, j0, nk, d0, first);
  }

  // The last n < JD values of the rows (found by recursion on the template).
  template <int ND>
  void value_tail(int n, scratch& s, const head& hd, int64_t j0, int nk, int64_t d0,
                  bool first) const {
    if (n == ND) value_block<ND>(s, hd, j0, nk, d0, first);
    else if constexpr (ND > 1) value_tail<ND - 1>(n, s, hd, j0, nk, d0, first);
  }

  template <int ND>
  void value_block(scratch& s, const head& hd, int64_t j0, int nk, int64_t d0, bool first) const {
    vec acc[ND][QV];
    float* ot = s.ot.data() + d0 * BR;
    for (int u = 0; u < QV; ++u) {
      const vec alpha = V::load(s.alpha.data() + u * W);
      for (int x = 0; x < ND; ++x)
        acc[x][u] = first ? V::zero() : V::mul(V::load(ot + x * BR + u * W), alpha);
    }
    if constexpr (BF16) {
      // j0 is a multiple of BC: even. An odd tile's missing last key is 0 in P's last pair, as
      // in V's zero-padded last row.
      const int64_t cols = p_.vw_cols;
      const uint32_t* vw = hd.vw + j0 / 2 * cols + d0;
      for (int k = 0; k < (nk + 1) / 2; ++k) {
        typename V::words pv[QV];
        for (int u = 0; u < QV; ++u) pv[u] = V::load_words(s.pw.data() + k * BR + u * W);
        for (int x = 0; x < ND; ++x) {
          const typename V::words vb = V::set1_word(vw[k * cols + x]);
          for (int u = 0; u < QV; ++u) acc[x][u] = V::dot(acc[x][u], pv[u], vb);
        }
      }
    } else {
      const int64_t vs = p_.vs[2];
      const float* v = hd.v + j0 * vs + d0;
      for (int jj = 0; jj < nk; ++jj) {
        vec pv[QV];
        for (int u = 0; u < QV; ++u) pv[u] = V::load(s.st.data() + jj * BR + u * W);
        for (int x = 0; x < ND; ++x) {
          const vec vb = V::set1(v[jj * vs + x]);
          for (int u = 0; u < QV; ++u) acc[x][u] = V::fmadd(vb, pv[u], acc[x][u]);
        }
      }
    }
    for (int x = 0; x < ND; ++x)
      for (int u = 0; u < QV; ++u) V::store(ot + x * BR + u * W, acc[x][u]);
  }

  // out[i0 + r][:] = Oᵀ[:][r] / l[r]; a row that saw no unmasked key is exactly 0. Blocks of
  // W values × W queries are divided along the lanes, then transposed in registers.
  void write_output(scratch& s, int64_t b, int64_t h, int64_t i0, int64_t rows) const {
    float* out = p_.out + ((b * p_.H + h) * p_.L + i0) * p_.Dv;
    for (int u = 0; u < QV && u * W < rows; ++u) {
      const vec l = V::load(s.l.data() + u * W);
      const int nr = static_cast<int>(std::min<int64_t>(W, rows - u * W));
      for (int64_t d0 = 0; d0 < p_.Dv; d0 += W) {
        const int nd = static_cast<int>(std::min<int64_t>(W, p_.Dv - d0));
        vec x[W];
        for (int i = 0; i < W; ++i)
          x[i] = i < nd ? V::div_or_zero(V::load(s.ot.data() + (d0 + i) * BR + u * W), l) : V::zero();
        V::transpose(x);
        for (int i = 0; i < nr; ++i) {
          float* dst = out + (u * W + i) * p_.Dv + d0;
          if (nd == W) V::store(dst, x[i]);
          else V::store_first(dst, x[i], nd);
        }
      }
    }
    // ln Σ exp(score) = (m + log2 l) · ln 2, m the base-2 running max; −inf when all masked.
    if (p_.lse != nullptr)
      for (int64_t r = 0; r < rows; ++r)
        p_.lse[(b * p_.H + h) * p_.L + i0 + r] = s.l[r] > 0.0f ? (s.m[r] + std::log2(s.l[r])) / log2e : neg_inf;
  }

  // The normalised weights, recomputed tile by tile from the final max and sum (only when the
  // caller asks for them: they are the one L×S output).
  void write_weights(scratch& s, int64_t b, int64_t h, int64_t i0, int64_t rows,
                     const head& hd) const {
    const int64_t jend = p_.causal ? std::min(p_.S, i0 + rows) : p_.S;
    float* wb = p_.weights + ((b * p_.H + h) * p_.L + i0) * p_.S;
    for (int64_t j0 = 0; j0 < p_.S; j0 += BC) {
      const int nk = static_cast<int>(std::min<int64_t>(BC, p_.S - j0));
      if (j0 >= jend) {  // causally hidden
        for (int64_t r = 0; r < rows; ++r) std::fill(wb + r * p_.S + j0, wb + r * p_.S + j0 + nk, 0.0f);
        continue;
      }
      if (mask_mode_ != mask_mode::none) load_mask(s, b, h, i0, rows, j0, nk);
      scores(s, hd, j0, nk, p_.S);
      apply_masks(s, i0, j0, nk);
      for (int u = 0; u < QV; ++u) {
        const vec m_use = V::neg_inf_to_zero(V::load(s.m.data() + u * W));
        const vec l = V::load(s.l.data() + u * W);
        for (int jj = 0; jj < nk; ++jj) {
          float* x = s.st.data() + jj * BR + u * W;
          V::store(x, V::div_or_zero(V::exp2(V::sub(V::load(x), m_use)), l));
        }
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int jj = 0; jj < nk; ++jj) wb[r * p_.S + j0 + jj] = s.st[jj * BR + r];
    }
  }

  const flash_problem& p_;
  const int64_t group_;
  mask_mode mask_mode_ = mask_mode::none;
};

}  // namespace
}  // namespace attn::kernels
