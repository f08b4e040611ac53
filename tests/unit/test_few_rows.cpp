// kernels::few_rows_product (decoding's products of a few rows by fixed weights) against its
// double reference on awkward shapes, on every instruction set this CPU runs; each row's bits
// the same alone as among others; and nn::rows_linear's stacked parts.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/few_rows.hpp"
#include "nn/rows_linear.hpp"

namespace {

using product_fn = void (*)(const float*, const float*, const float*, int64_t, int64_t, int64_t, float*, int64_t);

// The dispatcher and each kernel this CPU can run.
std::vector<std::pair<const char*, product_fn>> products_here() {
  std::vector<std::pair<const char*, product_fn>> ps{{"dispatched", attn::kernels::few_rows_product}};
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    ps.emplace_back("avx512", attn::kernels::few_rows_product_avx512);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    ps.emplace_back("avx2", attn::kernels::few_rows_product_avx2);
#endif
  return ps;
}

std::vector<float> normal_values(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(few_rows, every_kernel_against_the_double_reference_on_awkward_shapes) {
  std::mt19937 rng(31);
  int checked = 0;
  for (const auto& [name, product] : products_here())
    for (int64_t rows : {1, 2, 3, 5, 8, 9, 13, 40})
      for (int64_t in : {1, 7, 63, 65, 129, 1025})  // 1025: the weights swept in stretches of one panel
        for (int64_t out : {1, 7, 31, 33, 65, 129})
          for (bool with_bias : {false, true}) {
            const std::vector<float> w = normal_values(static_cast<size_t>(out * in), rng);
            const std::vector<float> x = normal_values(static_cast<size_t>(rows * in), rng);
            const std::vector<float> b = normal_values(static_cast<size_t>(out), rng);
            std::vector<float> panels(static_cast<size_t>(attn::kernels::few_rows_packed_size(out, in)));
            attn::kernels::pack_few_rows(w.data(), out, in, panels.data());
            // y rows ldy = out + 3 apart: the gaps must stay as they were
            const int64_t ldy = out + 3;
            std::vector<float> y(static_cast<size_t>(rows * ldy), -7.0f), expected(y.size(), -7.0f);
            const float* bias = with_bias ? b.data() : nullptr;
            product(panels.data(), bias, x.data(), rows, in, out, y.data(), ldy);
            attn::kernels::ref::few_rows_product(w.data(), bias, x.data(), rows, in, out, expected.data(), ldy);
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t o = 0; o < ldy; ++o) {
                const auto i = static_cast<size_t>(r * ldy + o);
                double magnitude = 1;
                for (int64_t k = 0; o < out && k < in; ++k)
                  magnitude += std::fabs(static_cast<double>(x[static_cast<size_t>(r * in + k)]) * w[static_cast<size_t>(o * in + k)]);
                ASSERT_NEAR(y[i], expected[i], 2e-6 * magnitude)
                    << name << " rows " << rows << " in " << in << " out " << out << " at " << r << "," << o;
              }
            ++checked;
          }
  EXPECT_GE(checked, 8 * 6 * 6 * 2);
}

TEST(few_rows, a_rows_bits_are_the_same_alone_as_among_others) {
  std::mt19937 rng(32);
  // 41 × 1030 × 77: more rows than a group, the weights swept in stretches of a panel
  for (const auto& [rows, in, out] : {std::tuple<int64_t, int64_t, int64_t>{11, 70, 77}, {41, 1030, 77}}) {
    const std::vector<float> w = normal_values(static_cast<size_t>(out * in), rng);
    const std::vector<float> x = normal_values(static_cast<size_t>(rows * in), rng);
    const std::vector<float> b = normal_values(static_cast<size_t>(out), rng);
    std::vector<float> panels(static_cast<size_t>(attn::kernels::few_rows_packed_size(out, in)));
    attn::kernels::pack_few_rows(w.data(), out, in, panels.data());
    for (const auto& [name, product] : products_here()) {
      std::vector<float> together(static_cast<size_t>(rows * out)), alone(static_cast<size_t>(out));
      product(panels.data(), b.data(), x.data(), rows, in, out, together.data(), out);
      for (int64_t r = 0; r < rows; ++r) {
        product(panels.data(), b.data(), x.data() + r * in, 1, in, out, alone.data(), out);
        for (int64_t o = 0; o < out; ++o)
          ASSERT_EQ(together[static_cast<size_t>(r * out + o)], alone[static_cast<size_t>(o)])
              << name << " " << r << "," << o;
      }
    }
  }
}

TEST(few_rows, rows_linear_stacks_its_parts_side_by_side) {
  std::mt19937 rng(33);
  const int64_t in = 40, rows = 4;
  const std::vector<float> w1 = normal_values(static_cast<size_t>(24 * in), rng), b1 = normal_values(24, rng);
  const std::vector<float> w2 = normal_values(static_cast<size_t>(9 * in), rng);
  const std::vector<float> x = normal_values(static_cast<size_t>(rows * in), rng);
  const attn::nn::rows_linear_part parts[] = {{w1.data(), b1.data(), 24}, {w2.data(), nullptr, 9}};
  const attn::nn::rows_linear stacked(parts, in), first(w1.data(), b1.data(), 24, in), second(w2.data(), nullptr, 9, in);
  ASSERT_EQ(stacked.out(), 33);
  std::vector<float> y(static_cast<size_t>(rows * 33)), y1(static_cast<size_t>(rows * 24)), y2(static_cast<size_t>(rows * 9));
  stacked.apply(x.data(), rows, y.data());
  first.apply(x.data(), rows, y1.data());
  second.apply(x.data(), rows, y2.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < 24; ++o) EXPECT_EQ(y[static_cast<size_t>(r * 33 + o)], y1[static_cast<size_t>(r * 24 + o)]);
    for (int64_t o = 0; o < 9; ++o) EXPECT_EQ(y[static_cast<size_t>(r * 33 + 24 + o)], y2[static_cast<size_t>(r * 9 + o)]);
  }
}

}  // namespace
