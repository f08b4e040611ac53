// The fused sdpa kernels (every instruction set this CPU has) against the float64 reference:
// a randomised sweep of awkward shapes, masks, causal with L ≠ S and grouped-query heads. The
// bound: the fused error is at most twice that of a naive float32 computation of the same
// formula. Also: no write outside the outputs, identical bits from run to run and across
// thread counts.
#include <gtest/gtest.h>
#include <omp.h>

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
#include "attn/sdpa.hpp"
#include "kernels/flash_problem.hpp"
#include "sdpa_test_support.hpp"

namespace {

using namespace sdpa_test;  // NOLINT: the shared test helpers

using attn::shape_t;
using attn::tensor;
using attn::kernels::flash_problem;

// The instruction sets this CPU can run; the AVX2 path is tested even where AVX-512 is the
// default.
std::vector<isa> available_isas() {
  std::vector<isa> out;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    out.push_back({"avx2", attn::kernels::flash_forward_avx2});
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    out.push_back({"avx512", attn::kernels::flash_forward_avx512});
  return out;
}

// The formula in float32, written the obvious way: what "naive fp32" error means in the bound.
std::vector<float> naive_float(const call& c) {
  const int64_t B = c.q.dim(0), H = c.q.dim(1), L = c.q.dim(2), D = c.q.dim(3);
  const int64_t Hkv = c.k.dim(1), S = c.k.dim(2), Dv = c.v.dim(3);
  int64_t ms[4] = {0, 0, 0, 0};
  if (c.mask != nullptr)
    for (int i = 1; i <= c.mask->rank(); ++i)
      if (c.mask->dim(-i) != 1) ms[4 - i] = c.mask->strides()[c.mask->rank() - i];
  std::vector<float> out(static_cast<size_t>(B * H * L * Dv), 0.0f), s(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        const int64_t hk = h / (H / Hkv);
        float mx = -inf;
        for (int64_t j = 0; j < S; ++j) {
          float dot = 0.0f;
          for (int64_t d = 0; d < D; ++d) dot += c.q.at({b, h, i, d}) * c.k.at({b, hk, j, d});
          s[j] = dot * c.scale;
          if (c.mask != nullptr) s[j] += c.mask->data()[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]];
          if (c.causal && j > i) s[j] = -inf;
          mx = std::max(mx, s[j]);
        }
        if (mx == -inf) continue;
        float sum = 0.0f;
        for (int64_t j = 0; j < S; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int64_t d = 0; d < Dv; ++d) {
          float acc = 0.0f;
          for (int64_t j = 0; j < S; ++j) acc += s[j] * c.v.at({b, hk, j, d});
          out[((b * H + h) * L + i) * Dv + d] = acc / sum;
        }
      }
  return out;
}

void check_case(const sweep_case& sc, std::mt19937& rng, const std::vector<isa>& isas) {
  SCOPED_TRACE(describe(sc));
  call c;
  // Scores of a few units: softmax neither flat nor one-hot.
  const float spread = 2.0f / std::sqrt(std::sqrt(static_cast<float>(std::max<int64_t>(sc.D, 1))));
  c.q = random_tensor({sc.B, sc.H, sc.L, sc.D}, rng, -spread, spread);
  c.k = random_tensor({sc.B, sc.Hkv, sc.S, sc.D}, rng, -spread, spread);
  c.v = random_tensor({sc.B, sc.Hkv, sc.S, sc.Dv}, rng);
  c.causal = sc.causal;
  c.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(sc.D, 1))));
  const tensor mask = make_mask(sc.mask, sc, rng);
  if (sc.mask != mask_kind::none) c.mask = &mask;

  attn::sdpa_options options;
  options.causal = c.causal;
  options.attn_mask = c.mask;
  options.scale = attn::scale_spec::parse(std::to_string(c.scale));
  tensor ref_weights;
  const tensor want = attn::ref::sdpa(c.q, c.k, c.v, options, &ref_weights);
  const double naive_err = max_abs_error(naive_float(c), want);
  const double bound = std::max(2.0 * naive_err, 2.0 * FLT_EPSILON * max_abs(want));
  const bool want_weights = sc.L * sc.S <= (1 << 16);
  for (const isa& kernel : isas) {
    SCOPED_TRACE(kernel.name);
    const fused_result got = run_fused(kernel, c, want_weights);
    EXPECT_TRUE(got.guards_ok) << "a write outside the output";
    const double err = max_abs_error(got.out, want);
    EXPECT_LE(err, bound) << "naive float32 error " << naive_err;
    if (want_weights) {
      // Weights in [0, 1]; the same 2× rule against a float32 softmax is implied by the
      // output bound, so hold them to a few ulps of 1.
      EXPECT_LE(max_abs_error(got.weights, ref_weights), 8.0 * FLT_EPSILON);
    }
  }
}

TEST(sdpa_fused, random_sweep_against_reference) {
  const std::vector<isa> isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: no fused kernel";
  const std::vector<int64_t> lengths = {1, 2, 3, 7, 63, 64, 65, 127, 129, 1023, 1025};
  const std::vector<int64_t> dims = {8, 16, 32, 59, 64, 80, 128, 256};
  std::mt19937 rng(2026);
  int run = 0;
  for (int tries = 0; run < 48 && tries < 10000; ++tries) {
    const sweep_case sc = random_case(tries, rng, lengths, dims);
    // Keep the float64 reference affordable: large L·S only with small heads.
    if (sc.L * sc.S * (sc.D + sc.Dv) > 120000000) continue;
    check_case(sc, rng, isas);
    ++run;
  }
  EXPECT_EQ(run, 48);
}

TEST(sdpa_fused, every_length_and_head_size_once) {
  // Each listed size at least once, on cheap partners, so the sweep's luck cannot leave one out.
  const std::vector<isa> isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "no fused kernel on this CPU";
  std::mt19937 rng(7);
  for (int64_t n : {1, 2, 3, 7, 63, 64, 65, 127, 129, 1023, 1025}) {
    check_case({1, 2, 1, n, 33, 16, 16, false, mask_kind::none}, rng, isas);
    check_case({1, 1, 1, 17, n, 16, 16, true, mask_kind::additive_ls}, rng, isas);
  }
  for (int64_t d : {8, 16, 32, 59, 64, 80, 128, 256})
    check_case({1, 2, 2, 37, 70, d, d, true, mask_kind::bool_per_key}, rng, isas);
  check_case({2, 4, 2, 65, 129, 64, 48, false, mask_kind::additive_full}, rng, isas);
}

TEST(sdpa_fused, causal_with_fewer_and_more_queries_than_keys) {
  const std::vector<isa> isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "no fused kernel on this CPU";
  std::mt19937 rng(8);
  for (auto [L, S] : std::vector<std::pair<int64_t, int64_t>>{{7, 129}, {129, 7}, {65, 1025}, {1025, 65}})
    check_case({1, 2, 1, L, S, 32, 32, true, mask_kind::none}, rng, isas);
}

TEST(sdpa_fused, fully_masked_rows_and_tiles_give_exact_zeros) {
  const std::vector<isa> isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "no fused kernel on this CPU";
  std::mt19937 rng(9);
  call c;
  c.q = random_tensor({1, 2, 70, 16}, rng);
  c.k = random_tensor({1, 2, 300, 16}, rng);
  c.v = random_tensor({1, 2, 300, 16}, rng);
  c.scale = 0.25f;
  tensor mask({70, 300}, 0.0f);
  for (int64_t j = 0; j < 300; ++j) {
    mask.at({5, j}) = -inf;                  // row 5: nothing to attend to
    if (j < 256) mask.at({40, j}) = -inf;    // row 40: only the last key tile
  }
  for (int64_t i = 0; i < 70; ++i)
    for (int64_t j = 128; j < 256; ++j) mask.at({i, j}) = -inf;  // a whole key tile hidden
  c.mask = &mask;
  attn::sdpa_options o;
  o.attn_mask = &mask;
  o.scale = attn::scale_spec::parse("0.25");
  tensor want_w;
  const tensor want = attn::ref::sdpa(c.q, c.k, c.v, o, &want_w);
  for (const isa& kernel : isas) {
    SCOPED_TRACE(kernel.name);
    const fused_result got = run_fused(kernel, c, true);
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t d = 0; d < 16; ++d) EXPECT_EQ(got.out[(h * 70 + 5) * 16 + d], 0.0f);
      for (int64_t j = 0; j < 300; ++j) EXPECT_EQ(got.weights[(h * 70 + 5) * 300 + j], 0.0f);
    }
    EXPECT_LE(max_abs_error(got.out, want), 1e-6);
    EXPECT_LE(max_abs_error(got.weights, want_w), 1e-6);
  }
}

TEST(sdpa_fused, huge_logits_stay_finite) {
  const std::vector<isa> isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "no fused kernel on this CPU";
  std::mt19937 rng(10);
  call c;
  // Scores around ±1e4. Their float rounding (about 1e-3) decides the error, row by row, so
  // many rows are compared: the largest error over them, not one row's luck.
  c.q = random_tensor({1, 2, 300, 8}, rng, -100.0f, 100.0f);
  c.k = random_tensor({1, 2, 400, 8}, rng, -100.0f, 100.0f);
  c.v = random_tensor({1, 2, 400, 8}, rng);
  c.scale = 1.0f;
  attn::sdpa_options o;
  o.scale = attn::scale_spec::parse("1");
  const tensor want = attn::ref::sdpa(c.q, c.k, c.v, o);
  // A score near 1e4 carries float rounding of about 1e-3 before any exp: hold the kernel to
  // the float32 formula's own error, as everywhere.
  const double naive_err = max_abs_error(naive_float(c), want);
  for (const isa& kernel : isas) {
    const fused_result got = run_fused(kernel, c, false);
    for (float x : got.out) ASSERT_TRUE(std::isfinite(x));
    EXPECT_LE(max_abs_error(got.out, want), 2.0 * naive_err) << kernel.name;
  }
}

TEST(sdpa_fused, nan_in_the_input_reaches_the_output) {
  const std::vector<isa> isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "no fused kernel on this CPU";
  std::mt19937 rng(11);
  call c;
  c.q = random_tensor({1, 1, 3, 8}, rng);
  c.k = random_tensor({1, 1, 5, 8}, rng);
  c.v = random_tensor({1, 1, 5, 8}, rng);
  c.k.at({0, 0, 2, 3}) = std::numeric_limits<float>::quiet_NaN();
  c.scale = 0.5f;
  for (const isa& kernel : isas) {
    const fused_result got = run_fused(kernel, c, false);
    for (float x : got.out) EXPECT_TRUE(std::isnan(x)) << kernel.name;
  }
}

TEST(sdpa_fused, same_bits_every_run_and_every_thread_count) {
  std::mt19937 rng(12);
  const tensor q = random_tensor({2, 4, 300, 64}, rng), k = random_tensor({2, 2, 333, 64}, rng);
  const tensor v = random_tensor({2, 2, 333, 64}, rng);
  attn::sdpa_options o;
  o.causal = true;
  const int threads = omp_get_max_threads();
  const tensor first = attn::sdpa(q, k, v, o);
  const tensor again = attn::sdpa(q, k, v, o);
  omp_set_num_threads(1);
  const tensor one = attn::sdpa(q, k, v, o);
  omp_set_num_threads(3);
  const tensor three = attn::sdpa(q, k, v, o);
  omp_set_num_threads(threads);
  const size_t bytes = first.values().size() * sizeof(float);
  EXPECT_EQ(std::memcmp(first.data(), again.data(), bytes), 0);
  EXPECT_EQ(std::memcmp(first.data(), one.data(), bytes), 0);
  EXPECT_EQ(std::memcmp(first.data(), three.data(), bytes), 0);
}

TEST(sdpa_fused, strided_inputs_give_the_bits_of_their_contiguous_copies) {
  std::mt19937 rng(13);
  // [B, L, H, D] storage viewed as [B, H, L, D] (what a fused QKV projection produces).
  const tensor qs = random_tensor({2, 37, 3, 16}, rng), ks = random_tensor({2, 41, 3, 16}, rng);
  const tensor vs = random_tensor({2, 41, 3, 16}, rng);
  const tensor q = qs.transpose(1, 2), k = ks.transpose(1, 2), v = vs.transpose(1, 2);
  const tensor a = attn::sdpa(q, k, v), b = attn::sdpa(q.contiguous(), k.contiguous(), v.contiguous());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.values().size() * sizeof(float)), 0);
  // A transposed last dimension (stride ≠ 1) is copied first, and still right.
  const tensor kt = ks.transpose(1, 2).contiguous().transpose(2, 3).contiguous().transpose(2, 3);
  const tensor c = attn::sdpa(q, kt, v);
  EXPECT_EQ(std::memcmp(a.data(), c.data(), a.values().size() * sizeof(float)), 0);
}

TEST(sdpa_fused, strided_keys_and_values_read_by_many_query_tiles_keep_their_bits) {
  // Enough queries for several query tiles and grouped heads: the fused forward then copies
  // strided K and V into adjacent rows first (flash_forward_dense.hpp). Dv ≠ D, so a copy that
  // mixed up the two row lengths, heads or batches would show.
  std::mt19937 rng(15);
  const int64_t B = 2, L = 150, S = 131, H = 4, Hkv = 2, D = 16, Dv = 24;
  const tensor qs = random_tensor({B, L, H, D}, rng), ks = random_tensor({B, S, Hkv, D}, rng);
  const tensor vs = random_tensor({B, S, Hkv, Dv}, rng);
  const tensor q = qs.transpose(1, 2), k = ks.transpose(1, 2), v = vs.transpose(1, 2);
  for (const bool causal : {false, true}) {
    attn::sdpa_options o;
    o.causal = causal;
    const tensor a = attn::sdpa(q, k, v, o);
    const tensor b = attn::sdpa(q.contiguous(), k.contiguous(), v.contiguous(), o);
    ASSERT_EQ(a.shape(), b.shape());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.values().size() * sizeof(float)), 0) << causal;
    const tensor r = attn::ref::sdpa(q, k, v, o);
    const auto got = a.values();
    EXPECT_LT(max_abs_error({got.begin(), got.end()}, r), 1e-5) << causal;
  }
}

TEST(sdpa_fused, kernel_option_selects_the_reference) {
  std::mt19937 rng(14);
  const tensor q = random_tensor({1, 1, 5, 8}, rng), k = random_tensor({1, 1, 6, 8}, rng);
  const tensor v = random_tensor({1, 1, 6, 8}, rng);
  attn::sdpa_options o;
  o.kernel = attn::sdpa_kernel::reference;
  const tensor a = attn::sdpa(q, k, v, o), b = attn::ref::sdpa(q, k, v);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.values().size() * sizeof(float)), 0);
  EXPECT_FALSE(attn::fused_kernel_isa().empty());
}

}  // namespace
