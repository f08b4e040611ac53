// kernels::gemm, the projections' sgemm, against a long-double computation: every transpose,
// odd sizes on both sides of the kernel's blocks (MR rows, NR columns, KC, NC), leading
// dimensions wider than the matrices (whose padding must stay untouched), alpha and beta, and
// each instruction set this CPU has, on one thread and on two.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/isa.hpp"

namespace {

using attn::kernels::gemm_args;

struct problem {
  bool ta, tb;
  int64_t m, n, k;
  float alpha, beta;
};

// The kernels this CPU can run, each as a function of (args, threads).
std::vector<std::pair<const char*, void (*)(const gemm_args&, int)>> kernels_here() {
  std::vector<std::pair<const char*, void (*)(const gemm_args&, int)>> ks;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    ks.emplace_back("avx512", attn::kernels::gemm_avx512);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    ks.emplace_back("avx2", attn::kernels::gemm_avx2);
#endif
  return ks;
}

// Runs one kernel on p and checks every element of C (and that the padding is untouched).
void check(const problem& p, void (*kernel)(const gemm_args&, int), int threads, std::mt19937& rng,
           const char* name) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t pad = 3;  // leading dimensions wider than the rows
  const int64_t a_rows = p.ta ? p.k : p.m, a_cols = p.ta ? p.m : p.k;
  const int64_t b_rows = p.tb ? p.n : p.k, b_cols = p.tb ? p.k : p.n;
  const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = p.n + pad;
  std::vector<float> a(static_cast<size_t>(a_rows * lda)), b(static_cast<size_t>(b_rows * ldb));
  std::vector<float> c(static_cast<size_t>(p.m * ldc));
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  const float guard = 12345.0f;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < ldc; ++j)
      // beta == 0 must not read C: NaN there would otherwise spread.
      c[static_cast<size_t>(i * ldc + j)] =
          j >= p.n ? guard : (p.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : normal(rng));
  const std::vector<float> c0 = c;

  gemm_args g;
  g.trans_a = p.ta, g.trans_b = p.tb, g.m = p.m, g.n = p.n, g.k = p.k, g.alpha = p.alpha;
  g.a = a.data(), g.lda = lda, g.b = b.data(), g.ldb = ldb, g.beta = p.beta, g.c = c.data(), g.ldc = ldc;
  kernel(g, threads);

  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[static_cast<size_t>(i * ldc + j)];
      if (j >= p.n) {
        ASSERT_EQ(got, guard) << name << ": padding of C written at " << i << "," << j;
        continue;
      }
      long double sum = 0, magnitude = 0;
      for (int64_t q = 0; q < p.k; ++q) {
        const long double x = p.ta ? a[static_cast<size_t>(q * lda + i)] : a[static_cast<size_t>(i * lda + q)];
        const long double y = p.tb ? b[static_cast<size_t>(j * ldb + q)] : b[static_cast<size_t>(q * ldb + j)];
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      const long double before = p.beta == 0.0f ? 0.0L : static_cast<long double>(p.beta) * c0[static_cast<size_t>(i * ldc + j)];
      const long double want = p.alpha * sum + before;
      // Float sums in any order: the classic bound (k + 2)·ε·(Σ|terms|).
      const double bound = static_cast<double>(p.k + 2) * FLT_EPSILON *
                           static_cast<double>(std::fabs(p.alpha) * magnitude + std::fabs(before));
      ASSERT_NEAR(got, static_cast<double>(want), bound)
          << name << " threads=" << threads << " ta=" << p.ta << " tb=" << p.tb << " m=" << p.m
          << " n=" << p.n << " k=" << p.k << " at " << i << "," << j;
    }
}

TEST(gemm, every_transpose_and_odd_sizes_against_long_double) {
  const auto kernels = kernels_here();
  if (kernels.empty()) GTEST_SKIP() << "no AVX2 on this CPU: gemm runs the reference";
  std::mt19937 rng(11);
  for (const auto& [name, kernel] : kernels)
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int64_t m : {1, 7, 13, 65})
          for (int64_t n : {1, 31, 33, 530})
            for (int64_t k : {1, 7, 257})
              for (int threads : {1, 2}) check({ta, tb, m, n, k, 1.0f, 0.0f}, kernel, threads, rng, name);
}

TEST(gemm, alpha_and_beta) {
  const auto kernels = kernels_here();
  if (kernels.empty()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(12);
  for (const auto& [name, kernel] : kernels)
    for (float alpha : {2.0f, -0.5f})
      for (float beta : {1.0f, 0.25f})
        for (int threads : {1, 2}) check({false, true, 29, 47, 300, alpha, beta}, kernel, threads, rng, name);
}

TEST(gemm, same_bits_on_any_thread_count) {
  // Each element is summed in the same order whichever thread computes it.
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t m = 300, n = 600, k = 300;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(n * k));
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  for (const auto& [name, kernel] : kernels_here()) {
    std::vector<float> c1(static_cast<size_t>(m * n)), c2(c1.size());
    gemm_args g;
    g.trans_b = true, g.m = m, g.n = n, g.k = k, g.a = a.data(), g.lda = k, g.b = b.data(), g.ldb = k,
    g.ldc = n;
    g.c = c1.data();
    kernel(g, 1);
    g.c = c2.data();
    kernel(g, 2);
    EXPECT_EQ(c1, c2) << name;
  }
}

TEST(gemm, dispatcher_and_reference_agree_and_empty_sums_scale_c) {
  std::mt19937 rng(14);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t m = 70, n = 90, k = 80;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  std::vector<float> c(static_cast<size_t>(m * n)), r(c.size());
  gemm_args g;
  g.m = m, g.n = n, g.k = k, g.a = a.data(), g.lda = k, g.b = b.data(), g.ldb = n, g.ldc = n;
  g.c = c.data();
  attn::kernels::gemm(g);
  g.c = r.data();
  attn::kernels::ref::gemm(g);
  for (size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], r[i], 1e-4 * (1.0 + std::fabs(r[i])));

  // k = 0: C = beta·C, and beta = 0 clears C even where it held NaN.
  std::vector<float> z = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  gemm_args e;
  e.m = 1, e.n = 2, e.k = 0, e.c = z.data(), e.ldc = 2;
  attn::kernels::gemm(e);
  EXPECT_EQ(z, (std::vector<float>{0.0f, 0.0f}));
}

}  // namespace
