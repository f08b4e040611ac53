// The fused sdpa backward (every instruction set this CPU has) against the float64 reference
// backward: a randomised sweep of awkward shapes, masks, causal with L ≠ S and grouped-query
// heads. The bound, as for the forward: each gradient's error is at most twice that of a naive
// float32 computation of the same formulas. Also: no write outside the outputs, identical bits
// from run to run and across thread counts, exact zeros for fully masked rows.
// The bf16 backward (every bf16 path: vdpbf16ps, its emulation on AVX-512 and on AVX2) against
// the float64 reference on the bf16-rounded inputs, with FlashAttention's rule: at most twice the
// error of the same formulas computed as PyTorch's bf16 math path does (each product rounded to
// bf16); the emulation gives the instruction's bits.
#include <gtest/gtest.h>
#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attn/mask.hpp"
#include "attn/sdpa_backward.hpp"
#include "core/half.hpp"
#include "kernels/flash_backward_problem.hpp"
#include "sdpa_test_support.hpp"

namespace {

using namespace sdpa_test;  // NOLINT: the shared test helpers

using attn::shape_t;
using attn::tensor;
using attn::kernels::flash_backward_problem;
using attn::kernels::flash_problem;

struct isa {
  std::string name;
  std::function<void(const flash_problem&)> forward;
  std::function<void(const flash_backward_problem&)> backward;
  bool bf16 = false;
};

// The AVX2 path is tested even where AVX-512 is the default.
std::vector<isa> available_isas() {
  std::vector<isa> out;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    out.push_back({"avx2", attn::kernels::flash_forward_avx2, attn::kernels::flash_backward_avx2});
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    out.push_back({"avx512", attn::kernels::flash_forward_avx512, attn::kernels::flash_backward_avx512});
  return out;
}

std::vector<isa> bf16_isas() {
  std::vector<isa> out;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    out.push_back({"avx2 (bf16 emulated)", attn::kernels::flash_forward_bf16_emulated_avx2,
                   attn::kernels::flash_backward_bf16_emulated_avx2, true});
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    out.push_back({"avx512 (bf16 emulated)", attn::kernels::flash_forward_bf16_emulated_avx512,
                   attn::kernels::flash_backward_bf16_emulated_avx512, true});
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"))
    out.push_back({"avx512_bf16", attn::kernels::flash_forward_bf16_avx512,
                   attn::kernels::flash_backward_bf16_avx512, true});
  return out;
}

float keep(float x) { return x; }

bool same_bits(const tensor& a, const tensor& b) {
  return std::memcmp(a.data(), b.data(), a.values().size() * sizeof(float)) == 0;
}
float bf16(float x) { return attn::bf16_to_float(attn::float_to_bf16(x)); }

struct call {
  tensor q, k, v, g;  // g: the gradient of the loss with respect to the output
  const tensor* mask = nullptr;
  bool causal = false;
  float scale = 0.0f;
};

void mask_strides(const tensor* mask, int64_t ms[4]) {
  for (int i = 0; i < 4; ++i) ms[i] = 0;
  if (mask != nullptr)
    for (int i = 1; i <= mask->rank(); ++i)
      if (mask->dim(-i) != 1) ms[4 - i] = mask->strides()[mask->rank() - i];
}

flash_problem describe(const call& c) { return problem_of(c.q, c.k, c.v, c.mask, c.causal, c.scale); }

struct grads {
  std::vector<float> dq, dk, dv;
  bool guards_ok = false;
};

// The ISA's own forward (for o and lse), then its backward on guarded buffers.
grads run_fused(const isa& kernel, const call& c) {
  flash_problem f = describe(c);
  std::vector<float> o(static_cast<size_t>(f.B * f.H * f.L * f.Dv)), lse(static_cast<size_t>(f.B * f.H * f.L));
  f.out = o.data();
  f.lse = lse.data();
  kernel.forward(f);
  flash_backward_problem p;
  p.f = describe(c);
  p.o = o.data(), p.grad_o = c.g.data(), p.lse = lse.data();
  for (int i = 0; i < 3; ++i) p.gs[i] = c.g.strides()[i];
  p.os[0] = f.H * f.L * f.Dv, p.os[1] = f.L * f.Dv, p.os[2] = f.Dv;
  guarded dq(static_cast<size_t>(f.B * f.H * f.L * f.D)), dk(static_cast<size_t>(f.B * f.Hkv * f.S * f.D)),
      dv(static_cast<size_t>(f.B * f.Hkv * f.S * f.Dv));
  p.dq = dq.data(), p.dk = dk.data(), p.dv = dv.data();
  kernel.backward(p);
  return {dq.values(), dk.values(), dv.values(),
          dq.guards_intact() && dk.guards_intact() && dv.guards_intact()};
}

// The backward in float32, written the obvious way: what "naive fp32" error means in the bound.
// With round = bf16, PyTorch's math path on bf16 tensors: the inputs and every product's result
// rounded to bf16 (products accumulate in float32), the softmax and its backward in float32
// rounded to bf16.
grads naive_float(const call& c, float (*round)(float) = keep) {
  const int64_t B = c.q.dim(0), H = c.q.dim(1), L = c.q.dim(2), D = c.q.dim(3);
  const int64_t Hkv = c.k.dim(1), S = c.k.dim(2), Dv = c.v.dim(3);
  int64_t ms[4];
  mask_strides(c.mask, ms);
  grads r{std::vector<float>(static_cast<size_t>(B * H * L * D)),
          std::vector<float>(static_cast<size_t>(B * Hkv * S * D)),
          std::vector<float>(static_cast<size_t>(B * Hkv * S * Dv)), true};
  const auto q = [&](int64_t b, int64_t h, int64_t i, int64_t d) { return round(c.q.at({b, h, i, d})); };
  const auto k = [&](int64_t b, int64_t h, int64_t j, int64_t d) { return round(c.k.at({b, h, j, d})); };
  const auto v = [&](int64_t b, int64_t h, int64_t j, int64_t e) { return round(c.v.at({b, h, j, e})); };
  const auto g = [&](int64_t b, int64_t h, int64_t i, int64_t e) { return round(c.g.at({b, h, i, e})); };
  const float scale = round(c.scale);
  std::vector<float> p(static_cast<size_t>(S)), dp(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        const int64_t hk = h / (H / Hkv);
        float mx = -inf;
        for (int64_t j = 0; j < S; ++j) {
          float dot = 0.0f;
          for (int64_t d = 0; d < D; ++d) dot += q(b, h, i, d) * k(b, hk, j, d);
          p[j] = round(round(dot) * scale);
          if (c.mask != nullptr) p[j] = round(p[j] + c.mask->data()[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]]);
          if (c.causal && j > i) p[j] = -inf;
          mx = std::max(mx, p[j]);
        }
        if (mx == -inf) continue;
        float sum = 0.0f;
        for (int64_t j = 0; j < S; ++j) sum += (p[j] = std::exp(p[j] - mx));
        for (int64_t j = 0; j < S; ++j) {
          p[j] = round(p[j] / sum);
          float x = 0.0f;
          for (int64_t e = 0; e < Dv; ++e) x += g(b, h, i, e) * v(b, hk, j, e);
          dp[j] = round(x);
        }
        // Δ_i = Σ_j p_ij dp_ij, computed as do_i · o_i (FlashAttention's formula, and the
        // kernel's): o_i rounded first.
        float row = 0.0f;
        for (int64_t e = 0; e < Dv; ++e) {
          float o = 0.0f;
          for (int64_t j = 0; j < S; ++j) o += p[j] * v(b, hk, j, e);
          row += g(b, h, i, e) * round(o);
        }
        for (int64_t j = 0; j < S; ++j) {
          const float ds = round(round(p[j] * (dp[j] - row)) * scale);
          for (int64_t e = 0; e < Dv; ++e) r.dv[((b * Hkv + hk) * S + j) * Dv + e] += p[j] * g(b, h, i, e);
          for (int64_t d = 0; d < D; ++d) {
            r.dq[((b * H + h) * L + i) * D + d] += ds * k(b, hk, j, d);
            r.dk[((b * Hkv + hk) * S + j) * D + d] += ds * q(b, h, i, d);
          }
        }
      }
  for (std::vector<float>* part : {&r.dq, &r.dk, &r.dv})
    for (float& x : *part) x = round(x);
  return r;
}

// isas: all float32 or all bf16.
void check_case(const sweep_case& sc, std::mt19937& rng, const std::vector<isa>& isas) {
  SCOPED_TRACE(describe(sc));
  const bool bf16_isas = isas.front().bf16;
  call c;
  // Scores of a few units: softmax neither flat nor one-hot.
  const float spread = 2.0f / std::sqrt(std::sqrt(static_cast<float>(sc.D)));
  c.q = random_tensor({sc.B, sc.H, sc.L, sc.D}, rng, -spread, spread);
  c.k = random_tensor({sc.B, sc.Hkv, sc.S, sc.D}, rng, -spread, spread);
  c.v = random_tensor({sc.B, sc.Hkv, sc.S, sc.Dv}, rng);
  c.g = random_tensor({sc.B, sc.H, sc.L, sc.Dv}, rng);
  c.causal = sc.causal;
  c.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(sc.D)));
  const tensor mask = make_mask(sc.mask, sc, rng);
  if (sc.mask != mask_kind::none) c.mask = &mask;

  attn::sdpa_options options;
  options.causal = c.causal;
  options.attn_mask = c.mask;
  options.scale = attn::scale_spec::parse(std::to_string(c.scale));
  if (bf16_isas) options.dtype = attn::sdpa_dtype::bf16;  // exact on the rounded inputs
  const attn::sdpa_gradients want = attn::ref::sdpa_backward(c.q, c.k, c.v, c.g, options);
  const grads naive = naive_float(c, bf16_isas ? bf16 : keep);
  // A floor for dq and dk: dS = P ∘ (dP − Δ) takes the difference of two dot products of
  // length Dv (dP_ij = do_i·v_j, Δ_i = do_i·o_i) that may cancel exactly (one visible key: then
  // dq = dk = 0), and the kernel sums them in another order than the naive loop, so a rounding
  // of e = 4 ε · max_i Σ_e |do_ie| · max|v| is allowed per dS term. It reaches dq_i through
  // scale Σ_j P_ij k_j (at most e · scale · max|k|) and dk_j through scale Σ_i P_ij q_i (at most
  // e · scale · max|q| · the largest column sum of P over the queries of a K/V head).
  double row_g = 0.0;
  for (int64_t r = 0; r < c.g.numel() / sc.Dv; ++r) {
    double x = 0.0;
    for (int64_t e = 0; e < sc.Dv; ++e) x += std::fabs(c.g.values()[static_cast<size_t>(r * sc.Dv + e)]);
    row_g = std::max(row_g, x);
  }
  const double e_term = 4.0 * FLT_EPSILON * row_g * max_abs(c.v);
  tensor weights;
  attn::ref::sdpa(c.q, c.k, c.v, options, &weights);
  std::vector<double> colsum(static_cast<size_t>(sc.B * sc.Hkv * sc.S), 0.0);
  for (int64_t b = 0; b < sc.B; ++b)
    for (int64_t h = 0; h < sc.H; ++h)
      for (int64_t i = 0; i < sc.L; ++i)
        for (int64_t j = 0; j < sc.S; ++j)
          colsum[static_cast<size_t>((b * sc.Hkv + h / (sc.H / sc.Hkv)) * sc.S + j)] += weights.at({b, h, i, j});
  const double max_colsum = *std::max_element(colsum.begin(), colsum.end());
  const double floors[] = {e_term * c.scale * max_abs(c.k), e_term * c.scale * max_abs(c.q) * max_colsum, 0.0};
  struct part {
    const char* name;
    const std::vector<float>& naive;
    const tensor& want;
  };
  const part parts[] = {{"dq", naive.dq, want.dq}, {"dk", naive.dk, want.dk}, {"dv", naive.dv, want.dv}};
  grads avx512;  // the first AVX-512 bf16 path's gradients
  for (const isa& kernel : isas) {
    SCOPED_TRACE(kernel.name);
    const grads got = run_fused(kernel, c);
    EXPECT_TRUE(got.guards_ok) << "a write outside the gradients";
    if (kernel.bf16 && kernel.name.rfind("avx512", 0) == 0) {  // the emulation gives the instruction's bits
      if (avx512.dq.empty()) avx512 = got;
      else EXPECT_TRUE(avx512.dq == got.dq && avx512.dk == got.dk && avx512.dv == got.dv)
          << "not the bits of the emulation";
    }
    const std::vector<float>* fused[] = {&got.dq, &got.dk, &got.dv};
    for (int i = 0; i < 3; ++i) {
      const double naive_err = max_abs_error(parts[i].naive, parts[i].want);
      // Where the naive error is itself tiny (a handful of terms), allow a few float ulps of
      // the largest gradient: the fused kernel sums in another order.
      const double bound =
          std::max({2.0 * naive_err, 4.0 * FLT_EPSILON * max_abs(parts[i].want), floors[i]});
      const double err = max_abs_error(*fused[i], parts[i].want);
      EXPECT_LE(err, bound) << parts[i].name << ": naive " << (bf16_isas ? "bf16 math" : "float32") << " error " << naive_err
                            << ", largest gradient " << max_abs(parts[i].want);
    }
  }
}

TEST(sdpa_backward_fused, random_sweep_against_reference) {
  const std::vector<isa> isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: no fused kernel";
  const std::vector<int64_t> lengths = {1, 2, 3, 7, 63, 64, 65, 127, 129};
  const std::vector<int64_t> dims = {8, 16, 59, 64, 80, 128};
  std::mt19937 rng(2027);
  for (int tries = 0; tries < 40; ++tries) {
    const sweep_case sc = random_case(tries, rng, lengths, dims);
    check_case(sc, rng, isas);
  }
}

TEST(sdpa_backward_fused, every_length_and_head_size_once) {
  // Each listed size at least once, on cheap partners, so the sweep's luck cannot leave one out.
  const std::vector<isa> isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "no fused kernel on this CPU";
  std::mt19937 rng(17);
  for (int64_t n : {1, 2, 3, 7, 63, 64, 65, 127, 129}) {
    check_case({1, 2, 1, n, 33, 16, 16, false, mask_kind::none}, rng, isas);
    check_case({1, 1, 1, 17, n, 16, 16, true, mask_kind::additive_ls}, rng, isas);
  }
  for (int64_t d : {8, 16, 59, 64, 80, 128})
    check_case({1, 2, 2, 37, 70, d, d, true, mask_kind::bool_per_key}, rng, isas);
  check_case({2, 4, 2, 65, 129, 64, 48, false, mask_kind::additive_full}, rng, isas);
}

TEST(sdpa_backward_fused, causal_with_fewer_and_more_queries_than_keys) {
  const std::vector<isa> isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "no fused kernel on this CPU";
  std::mt19937 rng(18);
  for (auto [L, S] : std::vector<std::pair<int64_t, int64_t>>{{7, 129}, {129, 7}, {65, 300}, {300, 65}})
    check_case({1, 2, 1, L, S, 32, 32, true, mask_kind::none}, rng, isas);
}

// Q [1, 2, 70, 16] against 200 keys, scale 0.25, with a mask that leaves query row 5 nothing to
// attend to, row 40 only the last key tiles, and hides keys 64 … 127 (a whole key tile) from all.
struct masked_rows_case {
  call c;
  tensor mask{{70, 200}, 0.0f};

  explicit masked_rows_case(std::mt19937& rng) {
    c.q = random_tensor({1, 2, 70, 16}, rng);
    c.k = random_tensor({1, 2, 200, 16}, rng);
    c.v = random_tensor({1, 2, 200, 16}, rng);
    c.g = random_tensor({1, 2, 70, 16}, rng);
    c.scale = 0.25f;
    for (int64_t j = 0; j < 200; ++j) {
      mask.at({5, j}) = -inf;
      if (j < 128) mask.at({40, j}) = -inf;
    }
    for (int64_t i = 0; i < 70; ++i)
      for (int64_t j = 64; j < 128; ++j) mask.at({i, j}) = -inf;
    c.mask = &mask;
  }
  masked_rows_case(const masked_rows_case&) = delete;  // c.mask points into this

  // Row 5's dq and the hidden keys' dk and dv are exactly zero.
  static void expect_exact_zeros(const grads& got) {
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t d = 0; d < 16; ++d) EXPECT_EQ(got.dq[(h * 70 + 5) * 16 + d], 0.0f);
      for (int64_t j = 64; j < 128; ++j)
        for (int64_t d = 0; d < 16; ++d) {
          EXPECT_EQ(got.dk[(h * 200 + j) * 16 + d], 0.0f);
          EXPECT_EQ(got.dv[(h * 200 + j) * 16 + d], 0.0f);
        }
    }
  }
};

TEST(sdpa_backward_fused, fully_masked_rows_give_exact_zero_gradients) {
  const std::vector<isa> isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "no fused kernel on this CPU";
  std::mt19937 rng(19);
  const masked_rows_case m(rng);
  attn::sdpa_options o;
  o.attn_mask = &m.mask;
  o.scale = attn::scale_spec::parse("0.25");
  const attn::sdpa_gradients want = attn::ref::sdpa_backward(m.c.q, m.c.k, m.c.v, m.c.g, o);
  for (const isa& kernel : isas) {
    SCOPED_TRACE(kernel.name);
    const grads got = run_fused(kernel, m.c);
    masked_rows_case::expect_exact_zeros(got);
    EXPECT_LE(max_abs_error(got.dq, want.dq), 1e-5);
    EXPECT_LE(max_abs_error(got.dk, want.dk), 1e-5);
    EXPECT_LE(max_abs_error(got.dv, want.dv), 1e-5);
  }
}

// The fused backward through attn::sdpa_backward with these options: the same bits twice, and
// for 1 and 3 threads; returns the gradients.
attn::sdpa_gradients expect_same_bits_every_run_and_thread_count(const tensor& q, const tensor& k, const tensor& v,
                                                                 const tensor& out, const tensor& lse, const tensor& g,
                                                                 const attn::sdpa_options& o) {
  const int threads = omp_get_max_threads();
  const attn::sdpa_gradients first = attn::sdpa_backward(q, k, v, out, lse, g, o);
  const attn::sdpa_gradients again = attn::sdpa_backward(q, k, v, out, lse, g, o);
  omp_set_num_threads(1);
  const attn::sdpa_gradients one = attn::sdpa_backward(q, k, v, out, lse, g, o);
  omp_set_num_threads(3);
  const attn::sdpa_gradients three = attn::sdpa_backward(q, k, v, out, lse, g, o);
  omp_set_num_threads(threads);
  for (const attn::sdpa_gradients* other : {&again, &one, &three}) {
    EXPECT_TRUE(same_bits(first.dq, other->dq));
    EXPECT_TRUE(same_bits(first.dk, other->dk));
    EXPECT_TRUE(same_bits(first.dv, other->dv));
  }
  return first;
}

// A key that every query all but ignores (weights near 2^-115) meets small output gradients:
// its dV is a sum of products below 2^-126, subnormal floats that cost a microcode assist each
// (in training, they more than doubled this backward's share of the step as attention
// sharpened). The kernels run with such values flushed to 0: no gradient comes out subnormal,
// every one stays within 1e-9 of the float64 reference, and the calling thread's floating-point
// mode is left as it was.
TEST(sdpa_backward_fused, subnormal_products_are_flushed_and_the_callers_mode_kept) {
  std::mt19937 rng(23);
  constexpr int64_t L = 64, S = 65, D = 16;
  call c;
  c.q = random_tensor({1, 1, L, D}, rng, -0.1f, 0.1f);
  c.k = random_tensor({1, 1, S, D}, rng, -0.1f, 0.1f);
  c.v = random_tensor({1, 1, S, D}, rng);
  c.g = random_tensor({1, 1, L, D}, rng, -1e-4f, 1e-4f);
  for (int64_t i = 0; i < L; ++i) c.q.data()[i * D] = 1.0f;
  for (int64_t j = 0; j < S; ++j) c.k.data()[j * D] = j == 0 ? -80.0f : 0.0f;  // key 0: score ≈ -80
  c.scale = 1.0f;
  attn::sdpa_options options;
  options.scale = attn::scale_spec::parse("1");
  const attn::sdpa_gradients want = attn::ref::sdpa_backward(c.q, c.k, c.v, c.g, options);
  // The case is the one meant: key 0's dV is below float's smallest normal, and not 0.
  const float dv0 = std::fabs(want.dv.values()[0]);
  ASSERT_GT(dv0, 0.0f);
  ASSERT_LT(dv0, FLT_MIN);
  for (const isa& kernel : available_isas()) {
    SCOPED_TRACE(kernel.name);
    const unsigned before = _mm_getcsr();
    const grads got = run_fused(kernel, c);
    EXPECT_EQ(_mm_getcsr(), before);
    for (const std::vector<float>* part : {&got.dq, &got.dk, &got.dv})
      for (float x : *part) ASSERT_NE(std::fpclassify(x), FP_SUBNORMAL);
    EXPECT_LE(max_abs_error(got.dq, want.dq), 1e-9);
    EXPECT_LE(max_abs_error(got.dk, want.dk), 1e-9);
    EXPECT_LE(max_abs_error(got.dv, want.dv), 1e-9);
  }
}

TEST(sdpa_backward_fused, same_bits_every_run_and_every_thread_count) {
  std::mt19937 rng(20);
  const tensor q = random_tensor({1, 4, 300, 64}, rng), k = random_tensor({1, 2, 333, 64}, rng);
  const tensor v = random_tensor({1, 2, 333, 64}, rng), g = random_tensor({1, 4, 300, 64}, rng);
  attn::sdpa_options o;
  o.causal = true;
  tensor lse;
  const tensor out = attn::sdpa_forward(q, k, v, o, lse);
  expect_same_bits_every_run_and_thread_count(q, k, v, out, lse, g, o);
}

TEST(sdpa_backward_fused, entry_points_agree_with_the_reference) {
  // attn::sdpa_forward's lse and the strided-input path of attn::sdpa_backward.
  std::mt19937 rng(21);
  const tensor qs = random_tensor({2, 37, 3, 16}, rng), ks = random_tensor({2, 41, 3, 16}, rng);
  const tensor vs = random_tensor({2, 41, 3, 16}, rng), g = random_tensor({2, 3, 37, 16}, rng);
  const tensor q = qs.transpose(1, 2), k = ks.transpose(1, 2), v = vs.transpose(1, 2);
  attn::sdpa_options o;
  tensor lse, ref_lse;
  const tensor out = attn::sdpa_forward(q, k, v, o, lse);
  attn::ref::sdpa_forward(q, k, v, o, ref_lse);
  for (size_t i = 0; i < lse.values().size(); ++i) EXPECT_NEAR(lse.values()[i], ref_lse.values()[i], 1e-5);
  const attn::sdpa_gradients got = attn::sdpa_backward(q, k, v, out, lse, g, o);
  const attn::sdpa_gradients want = attn::ref::sdpa_backward(q, k, v, g, o);
  EXPECT_LE(max_abs_error({got.dq.values().begin(), got.dq.values().end()}, want.dq), 1e-5);
  EXPECT_LE(max_abs_error({got.dk.values().begin(), got.dk.values().end()}, want.dk), 1e-5);
  EXPECT_LE(max_abs_error({got.dv.values().begin(), got.dv.values().end()}, want.dv), 1e-5);
  o.kernel = attn::sdpa_kernel::reference;
  const attn::sdpa_gradients r = attn::sdpa_backward(q, k, v, out, lse, g, o);
  EXPECT_EQ(std::memcmp(r.dq.data(), want.dq.data(), want.dq.values().size() * sizeof(float)), 0);
}

// ---- bf16 ----

TEST(sdpa_backward_bf16, random_sweep_against_reference) {
  const std::vector<isa> isas = bf16_isas();
  if (isas.empty()) GTEST_SKIP() << "no AVX2: bf16 runs on the reference";
  const std::vector<int64_t> lengths = {1, 2, 3, 7, 63, 64, 65, 127, 129};
  const std::vector<int64_t> dims = {1, 7, 16, 33, 64, 65, 128};
  std::mt19937 rng(2028);
  for (int tries = 0; tries < 30; ++tries) check_case(random_case(tries, rng, lengths, dims), rng, isas);
}

TEST(sdpa_backward_bf16, every_length_and_head_size_once) {
  const std::vector<isa> isas = bf16_isas();
  if (isas.empty()) GTEST_SKIP() << "no AVX2: bf16 runs on the reference";
  std::mt19937 rng(27);
  for (int64_t n : {1, 2, 3, 7, 63, 64, 65, 127, 129}) {
    check_case({1, 2, 1, n, 33, 16, 16, false, mask_kind::none}, rng, isas);
    check_case({1, 1, 1, 17, n, 16, 16, true, mask_kind::additive_ls}, rng, isas);
  }
  for (int64_t d : {1, 2, 7, 33, 64, 65, 128})
    check_case({1, 2, 2, 37, 70, d, d, true, mask_kind::bool_per_key}, rng, isas);
  check_case({2, 4, 2, 65, 129, 64, 48, false, mask_kind::additive_full}, rng, isas);
}

TEST(sdpa_backward_bf16, fully_masked_rows_and_hidden_keys_get_exact_zeros) {
  std::mt19937 rng(29);
  const masked_rows_case m(rng);
  for (const isa& kernel : bf16_isas()) {
    SCOPED_TRACE(kernel.name);
    const grads got = run_fused(kernel, m.c);
    masked_rows_case::expect_exact_zeros(got);
    EXPECT_NE(got.dq[6 * 16], 0.0f);
  }
}

TEST(sdpa_backward_bf16, entry_points_same_bits_every_run_and_every_thread_count) {
  std::mt19937 rng(31);
  const tensor q = random_tensor({1, 4, 300, 64}, rng), k = random_tensor({1, 2, 333, 64}, rng);
  const tensor v = random_tensor({1, 2, 333, 64}, rng), g = random_tensor({1, 4, 300, 64}, rng);
  attn::sdpa_options o;
  o.causal = true;
  o.dtype = attn::sdpa_dtype::bf16;
  tensor lse;
  const tensor out = attn::sdpa_forward(q, k, v, o, lse);
  // The training forward is the bf16 forward, and its lse is the reference's on rounded inputs.
  EXPECT_TRUE(same_bits(out, attn::sdpa(q, k, v, o)));
  tensor ref_lse;
  attn::ref::sdpa_forward(q, k, v, o, ref_lse);
  for (size_t i = 0; i < lse.values().size(); ++i) EXPECT_NEAR(lse.values()[i], ref_lse.values()[i], 0.05);
  const attn::sdpa_gradients first = expect_same_bits_every_run_and_thread_count(q, k, v, out, lse, g, o);
  // Not the float32 gradients: the dtype reached the kernel.
  o.dtype = attn::sdpa_dtype::float32;
  const tensor out32 = attn::sdpa_forward(q, k, v, o, lse);
  EXPECT_FALSE(same_bits(first.dq, attn::sdpa_backward(q, k, v, out32, lse, g, o).dq));
}

}  // namespace
