// The fused attention backward (FlashAttention-2's recomputation, laid out for CPU vectors),
// written once over a vector type V and compiled per instruction set by sdpa_backward_<isa>.cpp.
//   q [B,H,L,D], k [B,Hkv,S,D], v [B,Hkv,S,Dv], o, do [B,H,L,Dv], lse [B,H,L]
//   → dq [B,H,L,D], dk [B,Hkv,S,D], dv [B,Hkv,S,Dv]
//
// The weights are never stored: for each pair (tile of BR queries, tile of BC keys) the kernel
// recomputes them from the forward's row log-sum-exp, then applies the backward of each
// forward line to the tile:
//   S  = Q·Kᵀ                      (scores, keys along the vector lanes)
//   P  = exp(S·scale + mask − lse)  (the forward's softmax, exactly normalised by lse)
//   dV += Pᵀ·dO                     (o = P·V)
//   dP = dO·Vᵀ                      (o = P·V)
//   dS = P ∘ (dP − Δ),  Δ = rowsum(dO ∘ O)   (softmax: Δ_i = Σ_j P_ij dP_ij)
//   dK += dSᵀ·Q · scale,  dQ += dS·K · scale (S = Q·Kᵀ·scale)
//
// Determinism without atomics: a work item is (batch, K/V head, chunk of key tiles) and owns
// its rows of dK and dV outright (summing over every query and every query head of its group
// in a fixed order). dQ sums over all key tiles, so each chunk writes its own partial dQ, and
// the partials are added in chunk order at the end. The number of chunks depends on the problem
// only, never on the thread count, so the bits are the same for any number of threads.
//
// Each work item copies the Q and dO rows of its query heads into zero-padded rows (a whole
// number of vectors, a whole number of tiles) and transposes each key tile once, so the
// micro-kernels have no ragged edges; every copy is linear in the sequence length. Work items
// allocate and fill their own buffers, so nothing runs serially before or between them, and
// with a single chunk (the usual case for batches of heads) there is no barrier at all.
//
// bf16 (BF16 = true, V one of simd_bf16.hpp's types): the five products run on vdpbf16ps pairs
// with float32 accumulation, everything else as in float32. Each product's operands are packed
// as pairs along its reduction: Q and dO along D for S and dP (Q rounded after the scale · log2 e,
// as the bf16 forward rounds it, so the recomputed P is the forward's), and two rows interleaved
// for dK and dV; Kᵀ, Vᵀ along D and K two keys interleaved for dQ; P and dS are rounded to bf16
// pairs per tile, just before they multiply (as P is before P·V in the forward).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/half.hpp"
#include "kernels/flash_backward_problem.hpp"
#include "kernels/flush_denormals.hpp"
#include "kernels/scratch_vectors.hpp"
#include "kernels/simd.hpp"
#include "kernels/simd_bf16.hpp"

namespace attn::kernels {
namespace {

constexpr float bwd_log2e = 1.4426950408889634f;
constexpr float bwd_inf = std::numeric_limits<float>::infinity();

// What the micro-kernels multiply: float32 elements with FMA, or 32-bit words of bf16 pairs with
// the pair dot product (acc += a.lo·b.lo + a.hi·b.hi); one micro-kernel serves both.
template <class V>
struct float_operands {
  using elem = float;
  using operand = typename V::vec;
  static operand broadcast(float x) { return V::set1(x); }
  static operand load(const float* p) { return V::load(p); }
  static typename V::vec madd(typename V::vec acc, operand a, operand b) { return V::fmadd(a, b, acc); }
};

template <class V>
struct pair_operands {
  using elem = uint32_t;
  using operand = typename V::words;
  static operand broadcast(uint32_t w) { return V::set1_word(w); }
  static operand load(const uint32_t* p) { return V::load_words(p); }
  static typename V::vec madd(typename V::vec acc, operand a, operand b) { return V::dot(acc, a, b); }
};

// R × KV: the score micro-kernel's rows × key vectors; NR × NV: the rank-update micro-kernel's
// rows × vectors of a head.
template <class V, int R, int KV, int NR, int NV, bool BF16 = false>
class flash_backward {
  using vec = typename V::vec;
  using ops = std::conditional_t<BF16, pair_operands<V>, float_operands<V>>;
  using elem = typename ops::elem;

 public:
  static constexpr int W = V::W;
  static constexpr int BR = 64;  // queries per tile
  static constexpr int BC = 64;  // keys per tile (BC == BR keeps causal tile skipping simple)
  static constexpr int RB = 8;   // row counts are rounded up to this for the micro-kernels
  static_assert(BC % (KV * W) == 0 && RB % R == 0 && RB % NR == 0 && BR % RB == 0);

  explicit flash_backward(const flash_backward_problem& p)
      : p_(p), f_(p.f), group_(f_.Hkv == 0 ? 1 : f_.H / f_.Hkv),
        dp_(round_up(f_.D, W)), dvp_(round_up(f_.Dv, W)), dw_((f_.D + 1) / 2), dvw_((f_.Dv + 1) / 2),
        lp_(round_up(f_.L, BR)), qtiles_(lp_ / BR), ktiles_((f_.S + BC - 1) / BC) {
    // Chunks of key tiles: enough work items to keep a few threads busy (about 16) when the
    // batch has few K/V heads, with the partial dQ buffers (one per chunk) capped at 256 MB.
    const int64_t base = std::max<int64_t>(f_.B * f_.Hkv, 1);
    chunks_ = std::clamp<int64_t>((16 + base - 1) / base, 1, std::max<int64_t>(ktiles_, 1));
    const int64_t dq_bytes = f_.B * f_.H * f_.L * f_.D * 4;
    while (chunks_ > 1 && chunks_ * dq_bytes > (int64_t{256} << 20)) --chunks_;
  }

  void run() {
    const int64_t items = f_.B * f_.Hkv * chunks_;
    if (items == 0) return;
    // Partial dQ per chunk [chunks][B·H][L][D], each region written whole by its work item
    // (so it needs no clearing); none with a single chunk, whose items write dq directly.
    if (chunks_ > 1) partial_.reset(new float[static_cast<size_t>(chunks_ * f_.B * f_.H * f_.L * f_.D)]);
#pragma omp parallel if (items > 1)
    {
      const denormals_flushed flushed;
      scratch s(group_, lp_, f_.D, f_.Dv, dp_, dvp_, f_.mask != nullptr || f_.causal || f_.S % BC != 0);
      if constexpr (BF16) s.allocate_pairs(group_, lp_, dp_, dvp_, dw_, dvw_);
#pragma omp for schedule(dynamic, 1)
      for (int64_t item = 0; item < items; ++item) {
        const int64_t bk = item / chunks_;
        key_chunk(s, bk / f_.Hkv, bk % f_.Hkv, item % chunks_);
      }
      if (chunks_ > 1) {
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < f_.B * f_.H; ++bh) sum_partials(bh);
      }
    }
  }

 private:
  static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

  struct scratch {
    // The work item's query heads (G = H / Hkv of them): padded rows of Q and dO, Δ, the
    // exponent offsets, and the dQ being summed over the item's key tiles.
    std::vector<float> qp, gp;   // [G][lp][dp], [G][lp][dvp]  zero-padded (padding never written)
    std::vector<float> delta;    // [G][lp]
    std::vector<float> off;      // [G][lp]  +inf on padding rows (their P is then 0)
    std::vector<float> dq;       // [G][lp][dp]
    std::vector<float> kt, vt;  // [D][BC], [Dv][BC]  the key tile's K and V, transposed
    std::vector<float> kr;      // [BC][dp]           its K rows, zero-padded
    std::vector<float> dk, dv;  // [BC][dp], [BC][dvp] its gradients, summed over the queries
    std::vector<float> s, ds;   // [BR][BC]           scores → P, and dP → dS
    std::vector<float> mt;      // [BR][BC]           additive mask tile (base 2), when needed
    scratch(int64_t G, int64_t lp, int64_t D, int64_t Dv, int64_t dp, int64_t dvp, bool masks)
        : qp(static_cast<size_t>(G * lp * dp)), gp(static_cast<size_t>(G * lp * dvp)),
          delta(static_cast<size_t>(G * lp)), off(static_cast<size_t>(G * lp), bwd_inf),
          dq(static_cast<size_t>(G * lp * dp)),
          kt(static_cast<size_t>(std::max<int64_t>(D, 1) * BC)),
          vt(static_cast<size_t>(std::max<int64_t>(Dv, 1) * BC)),
          kr(static_cast<size_t>(BC * dp)), dk(static_cast<size_t>(BC * dp)),
          dv(static_cast<size_t>(BC * dvp)), s(BR * BC), ds(BR * BC), mt(masks ? BR * BC : 0) {}

    // bf16 pairs (32-bit words), zero-initialised so padding multiplies as 0:
    std::vector<uint32_t> qw, gw;   // [G][lp][dw], [G][lp][dvw]    Q·scale·log2 e, dO: pairs along D
    std::vector<uint32_t> qi, gi;   // [G][lp/2][dp], [G][lp/2][dvp] the same, rows 2i and 2i+1 paired
    std::vector<uint32_t> ktw, vtw; // [dw][BC], [dvw][BC]           Kᵀ, Vᵀ: pairs along D per key
    std::vector<uint32_t> ki;       // [BC/2][dp]                    K, keys 2c and 2c+1 paired
    std::vector<uint32_t> pi, dsi;  // [BR/2][BC]                    P, dS: rows 2r and 2r+1 paired
    std::vector<uint32_t> dsk;      // [BR][BC/2]                    dS: keys 2c and 2c+1 paired
    std::vector<float> row;         // [2][dp]                       two rows of Q, widened back
    std::vector<uint32_t> words;    // [BC][max(dw, dvw)]            a key tile's rows, packed along D
    void allocate_pairs(int64_t G, int64_t lp, int64_t dp, int64_t dvp, int64_t dw, int64_t dvw) {
      resize_scratch(qw, static_cast<size_t>(G * lp * dw));
      resize_scratch(gw, static_cast<size_t>(G * lp * dvw));
      resize_scratch(qi, static_cast<size_t>(G * lp / 2 * dp));
      resize_scratch(gi, static_cast<size_t>(G * lp / 2 * dvp));
      resize_scratch(ktw, static_cast<size_t>(dw * BC));
      resize_scratch(vtw, static_cast<size_t>(dvw * BC));
      resize_scratch(ki, static_cast<size_t>(BC / 2 * dp));
      resize_scratch(pi, BR / 2 * BC);
      resize_scratch(dsi, BR / 2 * BC);
      resize_scratch(dsk, BR * BC / 2);
      resize_scratch(row, static_cast<size_t>(2 * dp));
      resize_scratch(words, static_cast<size_t>(BC * std::max(dw, dvw)));
    }
  };

  // For query head h (g-th of its group): padded copies of Q and dO rows; Δ = rowsum(dO ∘ O);
  // the exponent offset lse · log2 e, +inf for a fully masked row so its P is exactly 0.
  void prepare_rows(scratch& s, int64_t b, int64_t h, int64_t g) const {
    if constexpr (BF16) return prepare_row_pairs(s, b, h, g);
    const int64_t bh = b * f_.H + h;
    float* qp = s.qp.data() + g * lp_ * dp_;
    float* gp = s.gp.data() + g * lp_ * dvp_;
    for (int64_t i = 0; i < f_.L; ++i) {
      const float* q = f_.q + b * f_.qs[0] + h * f_.qs[1] + i * f_.qs[2];
      const float* gr = p_.grad_o + b * p_.gs[0] + h * p_.gs[1] + i * p_.gs[2];
      const float* o = p_.o + b * p_.os[0] + h * p_.os[1] + i * p_.os[2];
      for (int64_t d = 0; d < f_.D; ++d) qp[i * dp_ + d] = q[d];
      float d = 0.0f;
      for (int64_t e = 0; e < f_.Dv; ++e) {
        gp[i * dvp_ + e] = gr[e];
        d += gr[e] * o[e];
      }
      s.delta[static_cast<size_t>(g * lp_ + i)] = d;
      const float lse = p_.lse[bh * f_.L + i];
      s.off[static_cast<size_t>(g * lp_ + i)] = lse == -bwd_inf ? bwd_inf : lse * bwd_log2e;
    }
  }

  // prepare_rows for bf16: Q·scale·log2 e and dO rounded to bf16, packed along D (qw, gw) and
  // with rows paired (qi, gi); Δ = rowsum(bf16(dO) ∘ O), as the rounded dO is what multiplies.
  void prepare_row_pairs(scratch& s, int64_t b, int64_t h, int64_t g) const {
    const int64_t bh = b * f_.H + h;
    const float c = f_.scale * bwd_log2e;
    const float* qh = f_.q + b * f_.qs[0] + h * f_.qs[1];
    const float* gh = p_.grad_o + b * p_.gs[0] + h * p_.gs[1];
    for (int64_t i = 0; i < f_.L; ++i) {
      uint32_t* gw = s.gw.data() + (g * lp_ + i) * dvw_;
      simd::pack_along<V>(qh + i * f_.qs[2], f_.D, c, s.qw.data() + (g * lp_ + i) * dw_);
      simd::pack_along<V>(gh + i * p_.gs[2], f_.Dv, 1.0f, gw);
      const float* o = p_.o + b * p_.os[0] + h * p_.os[1] + i * p_.os[2];
      float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // four sums in turn: no chain of dependent adds
      for (int64_t e = 0; e < f_.Dv; ++e) d[e % 4] += bf16_to_float(static_cast<uint16_t>(gw[e / 2] >> (e % 2 * 16))) * o[e];
      s.delta[static_cast<size_t>(g * lp_ + i)] = (d[0] + d[1]) + (d[2] + d[3]);
      const float lse = p_.lse[bh * f_.L + i];
      s.off[static_cast<size_t>(g * lp_ + i)] = lse == -bwd_inf ? bwd_inf : lse * bwd_log2e;
    }
    // The pairs of rows (Q scaled first, so it rounds to qw's values).
    std::vector<float>& row = s.row;
    for (int64_t i2 = 0; i2 < (f_.L + 1) / 2; ++i2) {
      const bool second = 2 * i2 + 1 < f_.L;
      for (int64_t r = 0; r < (second ? 2 : 1); ++r) {
        const float* q = qh + (2 * i2 + r) * f_.qs[2];
        for (int64_t d = 0; d < f_.D; ++d) row[r * dp_ + d] = q[d] * c;
      }
      simd::pack_two_rows<V>(row.data(), second ? row.data() + dp_ : nullptr, f_.D, s.qi.data() + (g * lp_ / 2 + i2) * dp_);
      const float* g0 = gh + 2 * i2 * p_.gs[2];
      simd::pack_two_rows<V>(g0, second ? g0 + p_.gs[2] : nullptr, f_.Dv, s.gi.data() + (g * lp_ / 2 + i2) * dvp_);
    }
  }

  // ---- one work item: key tiles c, c + chunks, c + 2·chunks, … of K/V head (b, hk) ----
  void key_chunk(scratch& s, int64_t b, int64_t hk, int64_t chunk) {
    const float* kh = f_.k + b * f_.ks[0] + hk * f_.ks[1];
    const float* vh = f_.v + b * f_.vs[0] + hk * f_.vs[1];
    for (int64_t g = 0; g < group_; ++g) prepare_rows(s, b, hk * group_ + g, g);
    std::fill(s.dq.begin(), s.dq.end(), 0.0f);
    for (int64_t jt = chunk; jt < ktiles_; jt += chunks_) {
      const int64_t j0 = jt * BC;
      const int nk = static_cast<int>(std::min<int64_t>(BC, f_.S - j0));
      pack_keys(s, kh, vh, j0, nk);
      std::fill(s.dk.begin(), s.dk.end(), 0.0f);
      std::fill(s.dv.begin(), s.dv.end(), 0.0f);
      // Causal (top-left): query tiles wholly before this key tile see none of it.
      const int64_t first = f_.causal ? j0 / BR : 0;
      for (int64_t g = 0; g < group_; ++g)
        for (int64_t it = first; it < qtiles_; ++it) pair(s, b, hk * group_ + g, g, it * BR, j0, nk);
      write_dkdv(s, b, hk, j0, nk);
    }
    write_dq(s, b, hk, chunk);
  }

  // kt[d][c] = K[j0 + c][d], vt[e][c] = V[j0 + c][e], kr[c][:] = K[j0 + c][:]; zero past S.
  // (Row by row of the transposes: contiguous stores, reads from the tile's rows, all in L1.)
  void pack_keys(scratch& s, const float* kh, const float* vh, int64_t j0, int nk) const {
    if constexpr (BF16) return pack_key_pairs(s, kh, vh, j0, nk);
    if (nk < BC) {  // the last tile of a sequence: keys past S must read as 0
      std::fill(s.kt.begin(), s.kt.end(), 0.0f);
      std::fill(s.vt.begin(), s.vt.end(), 0.0f);
      std::fill(s.kr.begin(), s.kr.end(), 0.0f);
    }
    const float* k0 = kh + j0 * f_.ks[2];
    const float* v0 = vh + j0 * f_.vs[2];
    for (int64_t d = 0; d < f_.D; ++d) {
      float* row = s.kt.data() + d * BC;
      for (int c = 0; c < nk; ++c) row[c] = k0[c * f_.ks[2] + d];
    }
    for (int64_t e = 0; e < f_.Dv; ++e) {
      float* row = s.vt.data() + e * BC;
      for (int c = 0; c < nk; ++c) row[c] = v0[c * f_.vs[2] + e];
    }
    // The padding lanes of kr (D to dp) are never written, so they stay 0 from allocation.
    for (int c = 0; c < nk; ++c) {
      const float* k = k0 + c * f_.ks[2];
      float* row = s.kr.data() + c * dp_;
      for (int64_t d = 0; d < f_.D; ++d) row[d] = k[d];  // short rows: a loop, not a memmove call
    }
  }

  // pack_keys for bf16: ktw[d][c] = (K[c][2d], K[c][2d+1]), vtw likewise, ki[c][:] = the pairs
  // (K[2c][:], K[2c+1][:]); keys past S are 0. Rows are packed along D first (row), then
  // transposed word by word.
  void pack_key_pairs(scratch& s, const float* kh, const float* vh, int64_t j0, int nk) const {
    if (nk < BC) {
      std::fill(s.ktw.begin(), s.ktw.end(), 0u);
      std::fill(s.vtw.begin(), s.vtw.end(), 0u);
      std::fill(s.ki.begin(), s.ki.end(), 0u);
    }
    uint32_t* words = s.words.data();
    const auto transpose = [&](const float* x, int64_t xs, int64_t n, int64_t nw, uint32_t* out) {
      for (int c = 0; c < nk; ++c) simd::pack_along<V>(x + (j0 + c) * xs, n, 1.0f, words + c * nw);
      for (int64_t d = 0; d < nw; ++d)
        for (int c = 0; c < nk; ++c) out[d * BC + c] = words[c * nw + d];
    };
    transpose(kh, f_.ks[2], f_.D, dw_, s.ktw.data());
    transpose(vh, f_.vs[2], f_.Dv, dvw_, s.vtw.data());
    for (int c2 = 0; c2 < (nk + 1) / 2; ++c2) {
      const float* k0 = kh + (j0 + 2 * c2) * f_.ks[2];
      simd::pack_two_rows<V>(k0, 2 * c2 + 1 < nk ? k0 + f_.ks[2] : nullptr, f_.D, s.ki.data() + c2 * dp_);
    }
  }

  // ---- one (query tile, key tile) pair ----
  void pair(scratch& s, int64_t b, int64_t h, int64_t g, int64_t i0, int64_t j0, int nk) const {
    const int rows = static_cast<int>(std::min<int64_t>(BR, f_.L - i0));
    const int rows_r = static_cast<int>(round_up(rows, RB));
    const int keys_r = static_cast<int>(round_up(nk, RB));
    const bool diagonal = f_.causal && j0 + nk - 1 > i0;
    const bool masked = f_.mask != nullptr || diagonal || nk < BC;
    if (masked && !load_mask(s, b, h, i0, rows, j0, nk)) return;  // every score hidden
    if constexpr (BF16) pair_bf16(s, g, i0, rows, rows_r, keys_r, nk, masked);
    else pair_float(s, g, i0, rows, rows_r, keys_r, nk, masked);
  }

  void pair_float(scratch& s, int64_t g, int64_t i0, int rows, int rows_r, int keys_r, int nk, bool masked) const {
    const float* q = s.qp.data() + (g * lp_ + i0) * dp_;
    const float* go = s.gp.data() + (g * lp_ + i0) * dvp_;
    dot_tile(q, dp_, s.kt.data(), f_.D, rows_r, s.s.data());     // S  = Q·Kᵀ
    dot_tile(go, dvp_, s.vt.data(), f_.Dv, rows_r, s.ds.data()); // dP = dO·Vᵀ
    softmax_grad(s, g * lp_ + i0, rows_r, masked);               // P, dS = P ∘ (dP − Δ)
    // dV[c] += Σ_r P[r][c] dO[r];  dK[c] += Σ_r dS[r][c] Q[r] (scale applied when written)
    update(s.dv.data(), dvp_, keys_r, dvp_ / W, s.s.data(), 1, BC, go, dvp_, rows);
    update(s.dk.data(), dp_, keys_r, dp_ / W, s.ds.data(), 1, BC, q, dp_, rows);
    // dQ[r] += Σ_c dS[r][c] K[c]
    float* dq = s.dq.data() + (g * lp_ + i0) * dp_;
    update(dq, dp_, rows_r, dp_ / W, s.ds.data(), BC, 1, s.kr.data(), dp_, nk);
  }

  // pair() on bf16 operands: the same five products, each on pairs along its reduction.
  void pair_bf16(scratch& s, int64_t g, int64_t i0, int rows, int rows_r, int keys_r, int nk, bool masked) const {
    dot_tile(s.qw.data() + (g * lp_ + i0) * dw_, dw_, s.ktw.data(), dw_, rows_r, s.s.data());      // S
    dot_tile(s.gw.data() + (g * lp_ + i0) * dvw_, dvw_, s.vtw.data(), dvw_, rows_r, s.ds.data());  // dP
    softmax_grad_pairs(s, g * lp_ + i0, rows_r, masked);
    const int row_pairs = (rows + 1) / 2;  // an odd tile's last pair has a padding row: P = dS = 0
    const int64_t i2 = (g * lp_ + i0) / 2;
    update(s.dv.data(), dvp_, keys_r, dvp_ / W, s.pi.data(), 1, BC, s.gi.data() + i2 * dvp_, dvp_, row_pairs);
    update(s.dk.data(), dp_, keys_r, dp_ / W, s.dsi.data(), 1, BC, s.qi.data() + i2 * dp_, dp_, row_pairs);
    float* dq = s.dq.data() + (g * lp_ + i0) * dp_;
    update(dq, dp_, rows_r, dp_ / W, s.dsk.data(), BC / 2, 1, s.ki.data(), dp_, (nk + 1) / 2);
  }

  // mt[r][c]: the additive mask in base 2, −inf for causally hidden scores and keys past S.
  // False when every score of the valid rows is hidden (the pair then adds nothing).
  bool load_mask(scratch& s, int64_t b, int64_t h, int64_t i0, int rows, int64_t j0, int nk) const {
    const float* mb = f_.mask == nullptr
                          ? nullptr
                          : f_.mask + b * f_.ms[0] + h * f_.ms[1] + i0 * f_.ms[2] + j0 * f_.ms[3];
    bool any = false;
    for (int r = 0; r < BR; ++r) {
      float* row = s.mt.data() + r * BC;
      for (int c = 0; c < BC; ++c) {
        float x = 0.0f;
        if (c >= nk || (f_.causal && j0 + c > i0 + r)) x = -bwd_inf;
        else if (mb != nullptr) x = mb[r * f_.ms[2] + c * f_.ms[3]] * bwd_log2e;
        row[c] = x;
        any |= r < rows && x != -bwd_inf;
      }
      if (r + 1 >= rows) {  // padding rows: their offset is +inf, so P = 0 whatever mt holds
        for (int r2 = r + 1; r2 < BR; ++r2) std::fill_n(s.mt.data() + r2 * BC, BC, 0.0f);
        break;
      }
    }
    return any;
  }

  // out[r][c] = Σ_d a[r][d] · bt[d][c] for r < rows (a multiple of RB), every c < BC.
  // (bf16: a and bt hold pairs along the depth, which counts words.)
  void dot_tile(const elem* a, int64_t as, const elem* bt, int64_t depth, int rows, float* out) const {
    for (int r0 = 0; r0 < rows; r0 += R)
      for (int c0 = 0; c0 < BC; c0 += KV * W) dot_block(a + r0 * as, as, bt + c0, depth, out + r0 * BC + c0);
  }

  void dot_block(const elem* a, int64_t as, const elem* bt, int64_t depth, float* out) const {
    vec acc[R][KV];
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < KV; ++u) acc[r][u] = V::zero();
    for (int64_t d = 0; d < depth; ++d) {
      typename ops::operand bv[KV];
      for (int u = 0; u < KV; ++u) bv[u] = ops::load(bt + d * BC + u * W);
      for (int r = 0; r < R; ++r) {
        const auto av = ops::broadcast(a[r * as + d]);
        for (int u = 0; u < KV; ++u) acc[r][u] = ops::madd(acc[r][u], av, bv[u]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < KV; ++u) V::store(out + r * BC + u * W, acc[r][u]);
  }

  // One vector of a row: P = 2^(S·scale·log2 e + mt − off) and dS = P ∘ (dP − Δ), from the
  // tiles s (scores), mt and ds (dP) at element `at`; c2 = scale · log2 e. (bf16: Q came
  // pre-scaled, so S is scaled already and c2 is not used.)
  void p_and_ds(const scratch& s, int64_t at, vec c2, vec off, vec dl, bool masked, vec& pr, vec& ds) const {
    vec u = V::load(s.s.data() + at);
    if constexpr (!BF16) u = V::mul(u, c2);
    if (masked) u = V::add(u, V::load(s.mt.data() + at));
    pr = V::exp2(V::sub(u, off));
    ds = V::mul(pr, V::sub(V::load(s.ds.data() + at), dl));
  }

  // s ← P, ds ← dS, row by row (float32).
  // row0: the tile's first row in the scratch's [G][lp] row statistics.
  void softmax_grad(scratch& s, int64_t row0, int rows, bool masked) const {
    const vec c2 = V::set1(f_.scale * bwd_log2e);
    for (int r = 0; r < rows; ++r) {
      const vec off = V::set1(s.off[static_cast<size_t>(row0 + r)]);
      const vec dl = V::set1(s.delta[static_cast<size_t>(row0 + r)]);
      for (int c = 0; c < BC; c += W) {
        vec pr, ds;
        p_and_ds(s, r * BC + c, c2, off, dl, masked, pr, ds);
        V::store(s.s.data() + r * BC + c, pr);
        V::store(s.ds.data() + r * BC + c, ds);
      }
    }
  }

  // softmax_grad for bf16, two rows and 2W keys at a time, rounding P and dS straight into the
  // pairs that multiply next (no float32 tile is stored and read back):
  //   pi[r2][c] = (P[2·r2][c], P[2·r2 + 1][c]), dsi likewise: rows paired, for dV and dK;
  //   dsk[r][c2] = (dS[r][2·c2], dS[r][2·c2 + 1]): keys paired, for dQ.
  void softmax_grad_pairs(scratch& s, int64_t row0, int rows, bool masked) const {
    if constexpr (BF16) {
      static_assert(BC % (2 * W) == 0);
      for (int r = 0; r < rows; r += 2) {  // rows: a multiple of RB, so even
        vec off[2], dl[2];
        for (int x = 0; x < 2; ++x) {
          off[x] = V::set1(s.off[static_cast<size_t>(row0 + r + x)]);
          dl[x] = V::set1(s.delta[static_cast<size_t>(row0 + r + x)]);
        }
        for (int c = 0; c < BC; c += 2 * W) {
          vec pr[2][2], ds[2][2];  // [row][half of the 2W keys]
          for (int x = 0; x < 2; ++x)
            for (int half = 0; half < 2; ++half)
              p_and_ds(s, (r + x) * BC + c + half * W, V::zero(), off[x], dl[x], masked, pr[x][half], ds[x][half]);
          for (int half = 0; half < 2; ++half) {
            const int64_t at = r / 2 * BC + c + half * W;
            V::store_words(s.pi.data() + at, V::pack_pairs(pr[0][half], pr[1][half]));
            V::store_words(s.dsi.data() + at, V::pack_pairs(ds[0][half], ds[1][half]));
          }
          for (int x = 0; x < 2; ++x)
            V::store_words(s.dsk.data() + (r + x) * BC / 2 + c / 2, V::pack_consecutive(ds[x][0], ds[x][1]));
        }
      }
    }
  }

  // out[x][:] += Σ_{y < ny} a[x·ax + y·ay] · rr[y][:] for x < nx (a multiple of RB), nvec
  // vectors per row: a rank-ny update in register blocks of NR rows × NV vectors. (bf16: y
  // counts pairs, a[…] and rr[y][:] are words holding the pair.)
  void update(float* out, int64_t os, int nx, int64_t nvec, const elem* a, int64_t ax, int64_t ay,
              const elem* rr, int64_t rs, int ny) const {
    for (int x0 = 0; x0 < nx; x0 += NR) {
      for (int64_t v0 = 0; v0 < nvec; v0 += NV) {
        float* o = out + x0 * os + v0 * W;
        const elem* ab = a + x0 * ax;
        const elem* rb = rr + v0 * W;
        const int64_t n = std::min<int64_t>(NV, nvec - v0);
        if (n == NV) update_block<NV>(o, os, ab, ax, ay, rb, rs, ny);
        else if constexpr (NV > 1) update_tail<NV - 1>(n, o, os, ab, ax, ay, rb, rs, ny);
      }
    }
  }

  // The last, narrower block of a row: NVN = n vectors, found by recursion on the template.
  template <int NVN>
  void update_tail(int64_t n, float* out, int64_t os, const elem* a, int64_t ax, int64_t ay,
                   const elem* rr, int64_t rs, int ny) const {
    if (n == NVN) update_block<NVN>(out, os, a, ax, ay, rr, rs, ny);
    else if constexpr (NVN > 1) update_tail<NVN - 1>(n, out, os, a, ax, ay, rr, rs, ny);
  }

  template <int NVN>
  void update_block(float* out, int64_t os, const elem* a, int64_t ax, int64_t ay, const elem* rr,
                    int64_t rs, int ny) const {
    vec acc[NR][NVN];
    for (int x = 0; x < NR; ++x)
      for (int u = 0; u < NVN; ++u) acc[x][u] = V::load(out + x * os + u * W);
    for (int y = 0; y < ny; ++y) {
      typename ops::operand rv[NVN];
      for (int u = 0; u < NVN; ++u) rv[u] = ops::load(rr + y * rs + u * W);
      const elem* arow = a + y * ay;
      for (int x = 0; x < NR; ++x) {
        const auto av = ops::broadcast(arow[x * ax]);
        for (int u = 0; u < NVN; ++u) acc[x][u] = ops::madd(acc[x][u], av, rv[u]);
      }
    }
    for (int x = 0; x < NR; ++x)
      for (int u = 0; u < NVN; ++u) V::store(out + x * os + u * W, acc[x][u]);
  }

  // dk = scale · Σ dSᵀ·Q, dv = Σ Pᵀ·dO for the tile's valid keys.
  // (bf16: the Q that multiplied was Q·scale·log2 e, so the factor is ln 2 = 1 / log2 e.)
  void write_dkdv(const scratch& s, int64_t b, int64_t hk, int64_t j0, int nk) const {
    const float dk_factor = BF16 ? 1.0f / bwd_log2e : f_.scale;
    for (int c = 0; c < nk; ++c) {
      float* dk = p_.dk + ((b * f_.Hkv + hk) * f_.S + j0 + c) * f_.D;
      float* dv = p_.dv + ((b * f_.Hkv + hk) * f_.S + j0 + c) * f_.Dv;
      const float* sk = s.dk.data() + c * dp_;
      const float* sv = s.dv.data() + c * dvp_;
      for (int64_t d = 0; d < f_.D; ++d) dk[d] = sk[d] * dk_factor;
      std::copy(sv, sv + f_.Dv, dv);
    }
  }

  // The item's dQ: dq = scale · Σ dS·K itself with a single chunk, else its chunk's partial.
  void write_dq(const scratch& s, int64_t b, int64_t hk, int64_t chunk) const {
    for (int64_t g = 0; g < group_; ++g) {
      const int64_t bh = b * f_.H + hk * group_ + g;
      for (int64_t i = 0; i < f_.L; ++i) {
        const float* src = s.dq.data() + (g * lp_ + i) * dp_;
        if (chunks_ == 1) {
          float* dq = p_.dq + (bh * f_.L + i) * f_.D;
          for (int64_t d = 0; d < f_.D; ++d) dq[d] = src[d] * f_.scale;
        } else {
          std::copy(src, src + f_.D, partial_.get() + ((chunk * f_.B * f_.H + bh) * f_.L + i) * f_.D);
        }
      }
    }
  }

  // dq = scale · (partial₀ + partial₁ + …), always in chunk order.
  void sum_partials(int64_t bh) const {
    const int64_t stride = f_.B * f_.H * f_.L * f_.D;
    for (int64_t i = 0; i < f_.L; ++i) {
      float* dq = p_.dq + (bh * f_.L + i) * f_.D;
      const float* src = partial_.get() + (bh * f_.L + i) * f_.D;
      for (int64_t d = 0; d < f_.D; ++d) {
        float x = src[d];
        for (int64_t c = 1; c < chunks_; ++c) x += src[c * stride + d];
        dq[d] = x * f_.scale;
      }
    }
  }

  const flash_backward_problem& p_;
  const flash_problem& f_;
  const int64_t group_, dp_, dvp_, dw_, dvw_, lp_, qtiles_, ktiles_;
  int64_t chunks_ = 1;
  std::unique_ptr<float[]> partial_;  // [chunks][B·H][L][D] when chunks_ > 1
};

}  // namespace
}  // namespace attn::kernels
