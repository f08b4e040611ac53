// kernels::gemm_bf16, the product on bf16 operands with float32 sums, against a long-double
// computation on the operands rounded to bf16: every transpose, odd sizes on both sides of the
// kernel's blocks (MR rows, NR columns, an odd inner dimension that ends in a half pair, two
// blocks of it), leading dimensions wider than the matrices, alpha, beta and the bias, on one
// thread and on two; the instruction against its emulation, bit for bit; and that the operands
// really are rounded (the float32 product is out of reach of the bound).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/aligned_vector.hpp"
#include "core/half.hpp"
#include "kernels/gemm.hpp"
#include "kernels/isa.hpp"

namespace {

using attn::kernels::gemm_args;
using kernel_fn = void (*)(const gemm_args&, int);

struct problem {
  bool ta, tb;
  int64_t m, n, k;
  float alpha = 1.0f, beta = 0.0f;
  bool bias = false;
};

std::vector<std::pair<const char*, kernel_fn>> kernels_here() {
  std::vector<std::pair<const char*, kernel_fn>> ks;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) {
    if (__builtin_cpu_supports("avx512bf16")) ks.emplace_back("avx512_bf16", attn::kernels::gemm_bf16_avx512);
    if (attn::kernels::amx_bf16_usable()) ks.emplace_back("amx", attn::kernels::gemm_bf16_amx);
    ks.emplace_back("avx512 emulated", attn::kernels::gemm_bf16_avx512_emulated);
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    ks.emplace_back("avx2 emulated", attn::kernels::gemm_bf16_avx2);
#endif
  return ks;
}

long double rounded(float x) { return attn::bf16_to_float(attn::float_to_bf16(x)); }

struct operands {
  std::vector<float> a, b, c, bias;
  int64_t lda, ldb, ldc;
};

operands make(const problem& p, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t pad = 3;
  const int64_t a_rows = p.ta ? p.k : p.m, a_cols = p.ta ? p.m : p.k;
  const int64_t b_rows = p.tb ? p.n : p.k, b_cols = p.tb ? p.k : p.n;
  operands o;
  o.lda = a_cols + pad, o.ldb = b_cols + pad, o.ldc = p.n + pad;
  o.a.resize(static_cast<size_t>(a_rows * o.lda));
  o.b.resize(static_cast<size_t>(b_rows * o.ldb));
  o.c.resize(static_cast<size_t>(p.m * o.ldc));
  for (float& x : o.a) x = normal(rng);
  for (float& x : o.b) x = normal(rng);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < o.ldc; ++j)
      o.c[static_cast<size_t>(i * o.ldc + j)] =
          j >= p.n ? 12345.0f : (p.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : normal(rng));
  if (p.bias) {
    o.bias.resize(static_cast<size_t>(p.n));
    for (float& x : o.bias) x = normal(rng);
  }
  return o;
}

gemm_args args_of(const problem& p, operands& o) {
  gemm_args g;
  g.trans_a = p.ta, g.trans_b = p.tb, g.m = p.m, g.n = p.n, g.k = p.k, g.alpha = p.alpha;
  g.a = o.a.data(), g.lda = o.lda, g.b = o.b.data(), g.ldb = o.ldb, g.beta = p.beta;
  g.c = o.c.data(), g.ldc = o.ldc, g.bias = p.bias ? o.bias.data() : nullptr;
  return g;
}

// Runs one kernel on p and checks every element of C (and that C's padding is untouched).
void check(const problem& p, kernel_fn kernel, int threads, std::mt19937& rng, const char* name) {
  operands o = make(p, rng);
  const std::vector<float> c0 = o.c;
  kernel(args_of(p, o), threads);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < o.ldc; ++j) {
      const float got = o.c[static_cast<size_t>(i * o.ldc + j)];
      if (j >= p.n) {
        ASSERT_EQ(got, 12345.0f) << name << ": padding of C written at " << i << "," << j;
        continue;
      }
      long double sum = 0, magnitude = 0;
      for (int64_t q = 0; q < p.k; ++q) {
        const long double x = rounded(p.ta ? o.a[static_cast<size_t>(q * o.lda + i)] : o.a[static_cast<size_t>(i * o.lda + q)]);
        const long double y = rounded(p.tb ? o.b[static_cast<size_t>(j * o.ldb + q)] : o.b[static_cast<size_t>(q * o.ldb + j)]);
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      const long double before = p.beta == 0.0f ? 0.0L : static_cast<long double>(p.beta) * c0[static_cast<size_t>(i * o.ldc + j)];
      const long double bias = p.bias ? o.bias[static_cast<size_t>(j)] : 0.0L;
      const long double want = p.alpha * sum + before + bias;
      // The products of bf16 values are exact in float32; only the float32 sums round.
      const double bound = static_cast<double>(p.k + 3) * FLT_EPSILON *
                           static_cast<double>(std::fabs(p.alpha) * magnitude + std::fabs(before) + std::fabs(bias));
      ASSERT_NEAR(got, static_cast<double>(want), bound)
          << name << " threads=" << threads << " ta=" << p.ta << " tb=" << p.tb << " m=" << p.m
          << " n=" << p.n << " k=" << p.k << " at " << i << "," << j;
    }
}

TEST(gemm_bf16, every_transpose_and_odd_sizes_against_long_double) {
  const auto kernels = kernels_here();
  if (kernels.empty()) GTEST_SKIP() << "no AVX2 on this CPU: gemm_bf16 runs the reference";
  std::mt19937 rng(21);
  for (const auto& [name, kernel] : kernels)
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int64_t m : {1, 7, 65})
          for (int64_t n : {1, 33, 530})
            for (int64_t k : {1, 2, 7, 63, 1025})  // 1025: two blocks of the inner dimension, the last pair half empty
              for (int threads : {1, 2}) check({ta, tb, m, n, k}, kernel, threads, rng, name);
}

TEST(gemm_bf16, transposed_a_across_its_blocks_of_rows_with_alpha_beta_and_bias) {
  const auto kernels = kernels_here();
  if (kernels.empty()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(22);
  for (const auto& [name, kernel] : kernels)
    for (bool ta : {false, true})
      for (int64_t m : {129, 263})
        for (float alpha : {1.0f, -0.5f})
          for (float beta : {0.0f, 0.25f})
            for (int threads : {1, 2}) check({ta, true, m, 47, 101, alpha, beta, true}, kernel, threads, rng, name);
}

TEST(gemm_bf16, same_bits_on_any_thread_count_and_instruction_as_its_emulation) {
  std::mt19937 rng(23);
  const problem p{false, true, 300, 600, 1100};  // two blocks of the inner dimension
  std::vector<std::vector<float>> results;
  for (const auto& [name, kernel] : kernels_here()) {
    if (std::string(name).starts_with("avx2") || std::string(name) == "amx") continue;  // other sums' order
    for (int threads : {1, 2}) {
      std::mt19937 same(rng);
      operands o = make(p, same);
      kernel(args_of(p, o), threads);
      results.push_back(o.c);
    }
  }
  for (size_t r = 1; r < results.size(); ++r) EXPECT_EQ(results[r], results[0]) << "result " << r;
}

// The tile unit's sums run in their own order: its bits are its own, the same on any thread
// count, and C's groups (a projection written straight into heads) land where c_at says.
TEST(gemm_bf16, amx_same_bits_on_any_thread_count_and_into_groups) {
  if (!attn::kernels::amx_bf16_usable()) GTEST_SKIP() << "no AMX-BF16 here (or ATTN_AMX=off)";
  std::mt19937 rng(25);
  for (const problem& p : {problem{false, true, 300, 600, 1100}, problem{true, false, 129, 65, 63}}) {
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2}) {
      std::mt19937 same(rng);
      operands o = make(p, same);
      attn::kernels::gemm_bf16_amx(args_of(p, o), threads);
      results.push_back(o.c);
    }
    EXPECT_EQ(results[1], results[0]);
  }
  // [rows, 64] written as two groups of rows × two of 32 columns, each group its own block.
  const problem p{false, true, 40, 64, 96};
  operands o = make(p, rng);
  gemm_args g = args_of(p, o);
  std::vector<float> plain(static_cast<size_t>(p.m * o.ldc)), grouped(4 * 20 * 32, -1.0f);
  g.c = plain.data();
  attn::kernels::gemm_bf16_amx(g, 2);
  g.c = grouped.data(), g.ldc = 32, g.c_rows = 20, g.c_row_group_stride = 2 * 20 * 32, g.c_cols = 32,
  g.c_col_group_stride = 20 * 32;
  attn::kernels::gemm_bf16_amx(g, 2);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j)
      ASSERT_EQ(*g.c_at(i, j), plain[static_cast<size_t>(i * o.ldc + j)]) << i << "," << j;
}

// A C past 32 MB on whole cache lines (the tied output's logits) is written with streamed
// stores: the same numbers as the tiles' own stores give into a C that cannot be streamed.
TEST(gemm_bf16, amx_streams_a_large_c_with_the_same_bits) {
  if (!attn::kernels::amx_bf16_usable()) GTEST_SKIP() << "no AMX-BF16 here (or ATTN_AMX=off)";
  std::mt19937 rng(26);
  const problem p{false, true, 1030, 8192, 40};  // 33.8 MB of C; the last block of rows partial
  operands o = make(p, rng);
  gemm_args g = args_of(p, o);
  attn::aligned_vector<float> streamed(static_cast<size_t>(p.m * p.n), -1.0f);
  g.c = streamed.data(), g.ldc = p.n;
  attn::kernels::gemm_bf16_amx(g, 2);
  std::vector<float> stored(static_cast<size_t>(p.m * (p.n + 8)), -1.0f);  // a row 8200 floats long: not on lines
  g.c = stored.data(), g.ldc = p.n + 8;
  attn::kernels::gemm_bf16_amx(g, 2);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j)
      ASSERT_EQ(streamed[static_cast<size_t>(i * p.n + j)], stored[static_cast<size_t>(i * (p.n + 8) + j)])
          << i << "," << j;
  // and one row against the long-double sums of the rounded operands
  check({false, true, 1, 8192, 40}, attn::kernels::gemm_bf16_amx, 1, rng, "amx");
}

TEST(gemm_bf16, operands_are_rounded_and_the_dispatcher_matches_the_reference) {
  std::mt19937 rng(24);
  const problem p{false, false, 70, 90, 400};
  operands o = make(p, rng);
  gemm_args g = args_of(p, o);
  std::vector<float> fast(o.c.size()), slow(o.c.size()), exact(o.c.size());
  g.c = fast.data();
  attn::kernels::gemm_bf16(g);
  g.c = slow.data();
  attn::kernels::ref::gemm_bf16(g);
  g.c = exact.data();
  attn::kernels::ref::gemm(g);
  double furthest = 0;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      const auto at = static_cast<size_t>(i * o.ldc + j);
      ASSERT_NEAR(fast[at], slow[at], 1e-4 * (1.0 + std::fabs(slow[at])));
      furthest = std::max(furthest, std::fabs(double(fast[at]) - exact[at]));
    }
  // bf16 keeps 8 bits of each operand: sums of 400 products of N(0, 1) values move by ~0.1,
  // far past float32's rounding of them (~1e-4).
  EXPECT_GT(furthest, 1e-2);
}

}  // namespace
