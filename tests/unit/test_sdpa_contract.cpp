// The numeric contract of sdpa (issue #7), each case with an exact expectation and run on both
// kernels (fused and the float64 reference). Elsewhere already: fully masked rows give exact
// zeros (test_sdpa_fused / test_sdpa_reference: fully_masked_rows_…), logits around ±1e4 stay
// finite and within the float32 formula's error (test_sdpa_fused: huge_logits_stay_finite), and
// strided inputs give the bits of their contiguous copies (strided_… in both). The speed claim
// (90% of keys masked no slower than 1.5× unmasked) is measured by bench/masked_speed.py, not
// timed here.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attn/sdpa.hpp"

namespace {

using attn::sdpa_kernel;
using attn::shape_t;
using attn::tensor;

constexpr float inf = std::numeric_limits<float>::infinity();
const sdpa_kernel both_kernels[] = {sdpa_kernel::fused, sdpa_kernel::reference};

std::string kernel_name(sdpa_kernel k) { return k == sdpa_kernel::fused ? "fused" : "reference"; }

tensor random_tensor(const shape_t& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  tensor t(shape);
  for (float& x : t.values()) x = dist(rng);
  return t;
}

// Multiples of 1/8 in [-4, 4]: sums of a few hundred of them are exact in float32, so a mean
// over a power-of-two count is too.
tensor dyadic_tensor(const shape_t& shape, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-32, 32);
  tensor t(shape);
  for (float& x : t.values()) x = static_cast<float>(dist(rng)) / 8.0f;
  return t;
}

bool same_bits(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), a.values().size() * sizeof(float)) == 0;
}

attn::sdpa_options options(sdpa_kernel kernel, const char* scale = nullptr,
                           const tensor* mask = nullptr) {
  attn::sdpa_options o;
  o.kernel = kernel;
  if (scale != nullptr) o.scale = attn::scale_spec::parse(scale);
  o.attn_mask = mask;
  return o;
}

TEST(sdpa_contract, minus_infinity_and_lowest_float_masks_agree) {
  // HF-style masks use the lowest float instead of -inf; a key masked either way must get
  // exactly zero weight, so the outputs and weights are the same bits. Rows 3 and 20 have every
  // key masked: exact zeros either way (the -FLT_MAX mask is not turned into a uniform average).
  std::mt19937 rng(71);
  const int64_t L = 37, S = 150;
  const tensor q = random_tensor({2, 2, L, 16}, rng), k = random_tensor({2, 2, S, 16}, rng);
  const tensor v = random_tensor({2, 2, S, 16}, rng);
  tensor with_inf({L, S}, 0.0f), with_lowest({L, S}, 0.0f);
  std::bernoulli_distribution masked(0.3);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < S; ++j)
      if (i == 3 || i == 20 || masked(rng)) {
        with_inf.at({i, j}) = -inf;
        with_lowest.at({i, j}) = -FLT_MAX;
      }
  for (sdpa_kernel kernel : both_kernels) {
    SCOPED_TRACE(kernel_name(kernel));
    tensor w_inf, w_lowest;
    const tensor a = attn::sdpa(q, k, v, options(kernel, nullptr, &with_inf), &w_inf);
    const tensor b = attn::sdpa(q, k, v, options(kernel, nullptr, &with_lowest), &w_lowest);
    EXPECT_TRUE(same_bits(a, b));
    EXPECT_TRUE(same_bits(w_inf, w_lowest));
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t d = 0; d < 16; ++d) {
        EXPECT_EQ(b.at({1, h, 3, d}), 0.0f);
        EXPECT_EQ(b.at({0, h, 20, d}), 0.0f);
      }
  }
}

TEST(sdpa_contract, scale_zero_gives_the_mean_of_v) {
  // Every score is 0, so every weight is 1/S and each output row is the mean of V's rows. With
  // S a power of two and V on a 1/8 grid that mean is exact in float32: the same bits expected.
  // S = 256 spans two key tiles of the fused kernel.
  std::mt19937 rng(72);
  for (int64_t S : {1, 8, 256}) {
    const tensor q = random_tensor({2, 3, 5, 16}, rng), k = random_tensor({2, 3, S, 16}, rng);
    const tensor v = dyadic_tensor({2, 3, S, 16}, rng);
    for (sdpa_kernel kernel : both_kernels) {
      SCOPED_TRACE(kernel_name(kernel) + ", S = " + std::to_string(S));
      tensor w;
      const tensor out = attn::sdpa(q, k, v, options(kernel, "0"), &w);
      for (float x : w.values()) ASSERT_EQ(x, 1.0f / static_cast<float>(S));
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t h = 0; h < 3; ++h)
          for (int64_t d = 0; d < 16; ++d) {
            double sum = 0;
            for (int64_t j = 0; j < S; ++j) sum += v.at({b, h, j, d});
            const auto mean = static_cast<float>(sum / static_cast<double>(S));
            for (int64_t i = 0; i < 5; ++i) ASSERT_EQ(out.at({b, h, i, d}), mean);
          }
    }
  }
}

TEST(sdpa_contract, one_key_gives_v_itself) {
  // S = 1: the single weight is exactly 1 whatever the score (large ones too), so O = V.
  std::mt19937 rng(73);
  tensor q = random_tensor({2, 2, 9, 8}, rng);
  for (float& x : q.values()) x *= 1000.0f;
  const tensor k = random_tensor({2, 2, 1, 8}, rng), v = random_tensor({2, 2, 1, 8}, rng);
  for (sdpa_kernel kernel : both_kernels) {
    SCOPED_TRACE(kernel_name(kernel));
    tensor w;
    const tensor out = attn::sdpa(q, k, v, options(kernel), &w);
    for (float x : w.values()) ASSERT_EQ(x, 1.0f);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < 9; ++i)
          for (int64_t d = 0; d < 8; ++d) ASSERT_EQ(out.at({b, h, i, d}), v.at({b, h, 0, d}));
  }
}

TEST(sdpa_contract, one_query_gives_the_bits_it_has_among_many) {
  // L = 1: a lone query is computed exactly as it is inside a batch of 40 queries (each query's
  // row is independent; the kernel must not depend on how many share its tile).
  std::mt19937 rng(74);
  const tensor q = random_tensor({1, 2, 40, 24}, rng), k = random_tensor({1, 2, 333, 24}, rng);
  const tensor v = random_tensor({1, 2, 333, 24}, rng);
  for (sdpa_kernel kernel : both_kernels) {
    SCOPED_TRACE(kernel_name(kernel));
    const tensor all = attn::sdpa(q, k, v, options(kernel));
    for (int64_t i : {0, 17, 39}) {
      const tensor one = attn::sdpa(q.slice(2, i, i + 1).contiguous(), k, v, options(kernel));
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t d = 0; d < 24; ++d)
          ASSERT_EQ(std::bit_cast<uint32_t>(one.at({0, h, 0, d})),
                    std::bit_cast<uint32_t>(all.at({0, h, i, d})))
              << "query " << i << ", head " << h << ", d " << d;
    }
  }
}

TEST(sdpa_contract, empty_batch_and_no_queries_give_empty_outputs) {
  std::mt19937 rng(75);
  for (sdpa_kernel kernel : both_kernels) {
    SCOPED_TRACE(kernel_name(kernel));
    tensor w;
    const tensor none = attn::sdpa(tensor({0, 2, 5, 8}), tensor({0, 2, 7, 8}), tensor({0, 2, 7, 6}),
                                   options(kernel), &w);
    EXPECT_EQ(none.shape(), (shape_t{0, 2, 5, 6}));
    EXPECT_EQ(w.shape(), (shape_t{0, 2, 5, 7}));
    const tensor k = random_tensor({1, 2, 7, 8}, rng), v = random_tensor({1, 2, 7, 6}, rng);
    const tensor no_queries = attn::sdpa(tensor({1, 2, 0, 8}), k, v, options(kernel));
    EXPECT_EQ(no_queries.shape(), (shape_t{1, 2, 0, 6}));
  }
}

}  // namespace
