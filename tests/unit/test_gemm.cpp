// kernels::gemm, the projections' sgemm, against a long-double computation: every transpose,
// odd sizes on both sides of the kernel's blocks (MR rows, NR columns, KC, NC), leading
// dimensions wider than the matrices (whose padding must stay untouched), alpha and beta, and
// each instruction set this CPU has, on one thread and on two; the bias epilogue, and B packed
// once (a layer's weights) against B packed per call, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/gemm_packed_b.hpp"
#include "kernels/isa.hpp"

namespace {

using attn::kernels::b_panels;
using attn::kernels::gemm_args;
using kernel_fn = void (*)(const gemm_args&, int, const b_panels&);

struct problem {
  bool ta, tb;
  int64_t m, n, k;
  float alpha, beta;
};

// The kernels this CPU can run, each as a function of (args, threads).
std::vector<std::pair<const char*, kernel_fn>> kernels_here() {
  std::vector<std::pair<const char*, kernel_fn>> ks;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    ks.emplace_back("avx512", attn::kernels::gemm_avx512);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    ks.emplace_back("avx2", attn::kernels::gemm_avx2);
#endif
  return ks;
}

// Runs one kernel on p and checks every element of C (and that the padding is untouched).
void check(const problem& p, kernel_fn kernel, int threads, std::mt19937& rng,
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
  kernel(g, threads, {});

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
            for (int64_t k : {1, 7, 513})  // 513: three blocks of the inner dimension
              for (int threads : {1, 2}) check({ta, tb, m, n, k, 1.0f, 0.0f}, kernel, threads, rng, name);
}

TEST(gemm, transposed_a_across_its_blocks_of_rows) {
  // A stored [k, m] is packed up to 512 rows at a time: several such blocks per thread, the last
  // one short, with a short panel at its end (1,031 = 2·512 + 7), a block and a panel (520), and
  // less than a block (129).
  const auto kernels = kernels_here();
  if (kernels.empty()) GTEST_SKIP() << "no AVX2 on this CPU: gemm runs the reference";
  std::mt19937 rng(12);
  for (const auto& [name, kernel] : kernels)
    for (bool tb : {false, true})
      for (int64_t m : {129, 520, 1031})
        for (int64_t k : {7, 513})
          for (int threads : {1, 2}) check({true, tb, m, 33, k, 1.0f, 0.5f}, kernel, threads, rng, name);
}

TEST(gemm, a_narrow_last_panel_across_blocks_of_columns) {
  // A last panel of one vector (n = 100: three panels of 32 and one of 16 on AVX-512, six of 16
  // and one of 8 on AVX2), alone or after more than one block of NC = 1,024 columns (1,100),
  // against a remainder that takes a whole panel (n = 50, 1,074 on AVX-512), with beta = 1 so
  // that the second block of the inner dimension adds to what the first one stored.
  const auto kernels = kernels_here();
  if (kernels.empty()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(15);
  for (const auto& [name, kernel] : kernels)
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int64_t n : {50, 100, 1074, 1100})
          for (int64_t m : {7, 65})
            for (int64_t k : {100, 300})
              for (int threads : {1, 2}) check({ta, tb, m, n, k, 1.0f, 1.0f}, kernel, threads, rng, name);
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
  const int64_t m = 300, n = 600, k = 700;  // two blocks of the inner dimension
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(n * k));
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  for (const auto& [name, kernel] : kernels_here()) {
    std::vector<float> c1(static_cast<size_t>(m * n)), c2(c1.size());
    gemm_args g;
    g.trans_b = true, g.m = m, g.n = n, g.k = k, g.a = a.data(), g.lda = k, g.b = b.data(), g.ldb = k,
    g.ldc = n;
    g.c = c1.data();
    kernel(g, 1, {});
    g.c = c2.data();
    kernel(g, 2, {});
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

namespace {

// Each kernel with its whole-B packer and the width of its packed panels.
struct packing_kernel {
  const char* name;
  kernel_fn run;
  void (*pack)(const gemm_args&, float*);
  int64_t (*width)(int64_t);
  int64_t (*panel_columns)();
};

std::vector<packing_kernel> packing_kernels_here() {
  std::vector<packing_kernel> ks;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    ks.push_back({"avx512", attn::kernels::gemm_avx512, attn::kernels::pack_b_avx512,
                  attn::kernels::avx512_panel_width, attn::kernels::avx512_panel_columns});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    ks.push_back({"avx2", attn::kernels::gemm_avx2, attn::kernels::pack_b_avx2,
                  attn::kernels::avx2_panel_width, attn::kernels::avx2_panel_columns});
#endif
  return ks;
}

std::vector<float> normal_values(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

}  // namespace

TEST(gemm, bias_epilogue_gives_the_bits_of_bias_copied_into_c_first) {
  // What linear layers did before the epilogue: C = bias on every row, then beta = 1.
  std::mt19937 rng(15);
  for (const auto& [name, kernel] : kernels_here())
    for (int64_t m : {1, 7, 65})
      for (int64_t n : {1, 33, 129})
        for (int64_t k : {7, 257})
          for (int threads : {1, 2}) {
            const auto a = normal_values(static_cast<size_t>(m * k), rng);
            const auto b = normal_values(static_cast<size_t>(n * k), rng);
            const auto bias = normal_values(static_cast<size_t>(n), rng);
            std::vector<float> fused(static_cast<size_t>(m * n), std::numeric_limits<float>::quiet_NaN());
            std::vector<float> copied(fused.size());
            for (int64_t i = 0; i < m; ++i) std::copy(bias.begin(), bias.end(), copied.begin() + i * n);
            gemm_args g;
            g.trans_b = true, g.m = m, g.n = n, g.k = k, g.a = a.data(), g.lda = k, g.b = b.data(), g.ldb = k;
            g.ldc = n;
            g.c = copied.data(), g.beta = 1.0f;
            kernel(g, threads, {});
            g.c = fused.data(), g.beta = 0.0f, g.bias = bias.data();
            kernel(g, threads, {});
            ASSERT_EQ(fused, copied) << name << " m=" << m << " n=" << n << " k=" << k;
            // And the reference agrees within rounding.
            std::vector<float> r(fused.size());
            g.c = r.data();
            attn::kernels::ref::gemm(g);
            for (size_t i = 0; i < r.size(); ++i)
              ASSERT_NEAR(fused[i], r[i], 1e-4 * (1.0 + std::fabs(r[i]))) << name;
          }
}

TEST(gemm, packed_b_columns_give_the_bits_of_packing_per_call_on_any_thread_count) {
  std::mt19937 rng(16);
  for (const packing_kernel& kernel : packing_kernels_here())
    for (bool tb : {false, true})
      for (int64_t k : {1, 7, 257, 513})
        for (int64_t n_total : {1, 7, 65, 129}) {
          // The whole matrix packed once; products on column ranges that start a panel.
          const int64_t ldb = tb ? k + 2 : n_total + 2;
          const auto b = normal_values(static_cast<size_t>((tb ? n_total : k) * ldb), rng);
          gemm_args whole;
          whole.trans_b = tb, whole.k = k, whole.n = n_total, whole.b = b.data(), whole.ldb = ldb;
          std::vector<float> panels(static_cast<size_t>(k * kernel.width(n_total)));
          kernel.pack(whole, panels.data());
          const int64_t nr = kernel.panel_columns();
          for (int64_t first = 0; first < n_total; first += nr)
            for (int64_t n : {int64_t{1}, n_total - first})
              for (int64_t m : {1, 7, 63, 65, 129}) {
                  const bool bias = (m + n) % 2 == 0;  // half with, half without
                  const auto a = normal_values(static_cast<size_t>(m * k), rng);
                  const auto bias_values = normal_values(static_cast<size_t>(n), rng);
                  gemm_args g = whole;
                  g.m = m, g.n = n, g.a = a.data(), g.lda = k, g.ldc = n;
                  g.b = tb ? b.data() + first * ldb : b.data() + first;
                  g.bias = bias ? bias_values.data() : nullptr;
                  std::vector<float> want(static_cast<size_t>(m * n));
                  g.c = want.data();
                  kernel.run(g, 1, {});
                  for (int threads : {1, 2}) {
                    std::vector<float> got(want.size(), std::numeric_limits<float>::quiet_NaN());
                    g.c = got.data();
                    kernel.run(g, threads, {panels.data(), kernel.width(n_total), first});
                    ASSERT_EQ(got, want) << kernel.name << " tb=" << tb << " k=" << k << " n_total="
                                         << n_total << " first=" << first << " n=" << n << " m=" << m
                                         << " threads=" << threads;
                  }
                }
        }
}

TEST(gemm, packed_b_through_the_dispatcher_and_its_fallbacks) {
  // attn::kernels::gemm(g, packed, first) matches gemm(g) bit for bit: on the packed panels when
  // they fit, and by packing g.b itself when they do not (a column that does not start a panel,
  // another inner size).
  std::mt19937 rng(17);
  const int64_t k = 300, n_total = 200;
  const auto w = normal_values(static_cast<size_t>(n_total * k), rng);  // [n, k], a layer's weight
  gemm_args whole;
  whole.trans_b = true, whole.k = k, whole.n = n_total, whole.b = w.data(), whole.ldb = k;
  const attn::kernels::packed_b packed(whole);
  EXPECT_EQ(packed.k(), k);
  EXPECT_EQ(packed.n(), n_total);
  for (int64_t first : {0, 1, 64, 128, 130})
    for (int64_t m : {1, 129, 600}) {
      const int64_t n = std::min<int64_t>(64, n_total - first);
      const auto a = normal_values(static_cast<size_t>(m * k), rng);
      gemm_args g = whole;
      g.m = m, g.n = n, g.a = a.data(), g.lda = k, g.b = w.data() + first * k, g.ldc = n;
      std::vector<float> want(static_cast<size_t>(m * n)), got(want.size());
      g.c = want.data();
      attn::kernels::gemm(g);
      g.c = got.data();
      attn::kernels::gemm(g, packed, first);
      ASSERT_EQ(got, want) << "first=" << first << " m=" << m;
    }
  // Another inner size than the packing's: B is read from g.b.
  const auto a = normal_values(static_cast<size_t>(5 * 100), rng);
  gemm_args g = whole;
  g.m = 5, g.k = 100, g.n = 40, g.a = a.data(), g.lda = 100, g.ldb = 100, g.ldc = 40;
  std::vector<float> want(200), got(200);
  g.c = want.data();
  attn::kernels::gemm(g);
  g.c = got.data();
  attn::kernels::gemm(g, packed, 0);
  EXPECT_EQ(got, want);
}

TEST(gemm, c_in_row_and_column_groups_gets_the_bits_of_plain_c) {
  // A projection's [B·L, G·hd] product written as heads [B, G, L, hd]: every element lands where
  // c_at says, with the bits of the plain product, whichever kernel, packing and thread count.
  std::mt19937 rng(18);
  const auto check_groups = [&](const char* name, auto&& run) {
    for (int64_t B : {1, 3})
      for (int64_t L : {1, 7, 13, 65})
        for (int64_t hd : {32, 64})
          for (int64_t G : {1, 3})
            for (int64_t k : {7, 513}) {
              const int64_t m = B * L, n = G * hd;
              const auto a = normal_values(static_cast<size_t>(m * k), rng);
              const auto w = normal_values(static_cast<size_t>(n * k), rng);
              const auto bias = normal_values(static_cast<size_t>(n), rng);
              gemm_args g;
              g.trans_b = true, g.m = m, g.n = n, g.k = k, g.a = a.data(), g.lda = k;
              g.b = w.data(), g.ldb = k, g.bias = bias.data();
              std::vector<float> plain(static_cast<size_t>(m * n));
              g.c = plain.data(), g.ldc = n;
              run(g, 1);
              std::vector<float> heads(plain.size(), std::numeric_limits<float>::quiet_NaN());
              g.c = heads.data(), g.ldc = hd;
              g.c_rows = L, g.c_row_group_stride = G * L * hd, g.c_cols = hd, g.c_col_group_stride = L * hd;
              for (int threads : {1, 2}) {
                run(g, threads);
                for (int64_t i = 0; i < m; ++i)
                  for (int64_t j = 0; j < n; ++j) {
                    const int64_t b = i / L, l = i % L, h = j / hd, d = j % hd;
                    ASSERT_EQ(heads[static_cast<size_t>(((b * G + h) * L + l) * hd + d)],
                              plain[static_cast<size_t>(i * n + j)])
                        << name << " B=" << B << " L=" << L << " hd=" << hd << " G=" << G
                        << " k=" << k << " threads=" << threads << " at " << i << "," << j;
                  }
              }
            }
  };
  for (const packing_kernel& kernel : packing_kernels_here()) {
    check_groups(kernel.name, [&](const gemm_args& g, int threads) { kernel.run(g, threads, {}); });
    check_groups(kernel.name, [&](const gemm_args& g, int threads) {
      std::vector<float> panels(static_cast<size_t>(g.k * kernel.width(g.n)));
      kernel.pack(g, panels.data());
      kernel.run(g, threads, {panels.data(), kernel.width(g.n), 0});
    });
  }
  check_groups("reference", [](const gemm_args& g, int) { attn::kernels::ref::gemm(g); });
}
