// The one-row attention's cache (keys in blocks of 16 positions, values position-major) and
// attend_cached against a double softmax(q·K·scale)·V written from the definition, on lengths
// either side of a block and head widths below, at and past 16.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "attn/error.hpp"
#include "nn/self_attention_layer.hpp"

namespace {

using attn::nn::keys_values;

void check_against_reference(int64_t n, int64_t heads, int64_t d, unsigned seed) {
  const int64_t e = heads * d;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::vector<float> k(static_cast<size_t>(n * e)), v(k.size()), q(static_cast<size_t>(e));
  for (float& x : k) x = normal(rng);
  for (float& x : v) x = normal(rng);
  for (float& x : q) x = normal(rng);
  keys_values kv;
  kv.reset(e, 3);  // grows past the room it was given
  for (int64_t j = 0; j < n; ++j) kv.append(k.data() + j * e, v.data() + j * e);
  ASSERT_EQ(kv.length, n);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<float> scores(static_cast<size_t>((n + 15) / 16 * 16)), out(static_cast<size_t>(d));
  for (int64_t h = 0; h < heads; ++h) {
    attn::nn::attend_cached(q.data() + h * d, kv, h, d, scale, out.data(), scores.data());
    std::vector<double> p(static_cast<size_t>(n));
    double top = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t c = 0; c < d; ++c)
        s += static_cast<double>(q[static_cast<size_t>(h * d + c)]) * k[static_cast<size_t>(j * e + h * d + c)];
      p[static_cast<size_t>(j)] = s * scale;
      top = std::max(top, s * scale);
    }
    for (double& x : p) sum += x = std::exp(x - top);
    for (int64_t c = 0; c < d; ++c) {
      double want = 0;
      for (int64_t j = 0; j < n; ++j) want += p[static_cast<size_t>(j)] * v[static_cast<size_t>(j * e + h * d + c)];
      want /= sum;
      EXPECT_NEAR(out[static_cast<size_t>(c)], want, 2e-5 * (1 + std::fabs(want)))
          << "n " << n << ", head " << h << " of " << heads << ", d " << d << ", dimension " << c;
    }
  }
}

TEST(keys_values, attend_cached_matches_the_definition) {
  for (const int64_t n : {1, 7, 15, 16, 17, 33, 63, 65, 129})
    for (const int64_t d : {1, 7, 16, 20, 64})
      check_against_reference(n, d == 64 ? 4 : 3, d, static_cast<unsigned>(n * 100 + d));
}

TEST(keys_values, keep_forgets_the_later_positions_and_a_copy_holds_only_what_was_read) {
  const int64_t e = 6;
  keys_values kv;
  kv.reset(e, 40);
  std::vector<float> row(static_cast<size_t>(e));
  for (int64_t j = 0; j < 20; ++j) {
    for (int64_t c = 0; c < e; ++c) row[static_cast<size_t>(c)] = static_cast<float>(j * 10 + c);
    kv.append(row.data(), row.data());
  }
  const keys_values copy = kv;
  EXPECT_EQ(copy.values.size(), static_cast<size_t>(20 * e));
  EXPECT_EQ(copy.keys.size(), static_cast<size_t>(32 * e));  // two blocks of 16
  kv.keep(17);
  EXPECT_EQ(kv.length, 17);
  EXPECT_EQ(kv.values.size(), static_cast<size_t>(17 * e));
  EXPECT_EQ(kv.keys.size(), static_cast<size_t>(32 * e));
  // position 16's dimension 2: block 1, row 2, lane 0
  EXPECT_EQ(kv.keys[static_cast<size_t>((1 * e + 2) * 16 + 0)], 162.0f);
  kv.keep(3);
  EXPECT_EQ(kv.keys.size(), static_cast<size_t>(16 * e));
  EXPECT_EQ(kv.values[static_cast<size_t>(2 * e + 5)], 25.0f);
  EXPECT_THROW(kv.keep(4), attn::error);  // no position 3 to keep
  EXPECT_THROW(kv.keep(-1), attn::error);
}

}  // namespace
