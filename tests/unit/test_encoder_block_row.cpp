// The encoder block's one-row path (generation) against its batched forward: a pre-norm block
// with causal attention run over a whole sequence, and the same block fed the sequence one
// token at a time with its key/value cache, give each position's output to float rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "nn/encoder_block.hpp"

namespace {

std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Awkward sizes: a head width of 3, an odd length, a capacity past the length.
void check_rows_match_forward(int64_t e, int64_t heads, int64_t f, int64_t l, int64_t capacity,
                              unsigned seed) {
  std::mt19937 rng(seed);
  const float w_scale = 1.0f / std::sqrt(static_cast<float>(e));
  std::vector<std::vector<float>> p;
  for (int64_t n : {e * e, e, e * e, e, e * e, e, e * e, e})  // wq bq wk bk wv bv wo bo
    p.push_back(random_floats(static_cast<size_t>(n), rng, w_scale));
  for (int64_t n : {e, e, f * e, f, e * f, e, e, e})  // norm1, linear1, linear2, norm2
    p.push_back(random_floats(static_cast<size_t>(n), rng, w_scale));
  for (size_t i : {8u, 14u}) std::transform(p[i].begin(), p[i].end(), p[i].begin(), [](float g) { return 1 + g; });
  const attn::nn::encoder_block_weights<float> w{
      {p[0].data(), p[1].data(), p[2].data(), p[3].data(), p[4].data(), p[5].data(), p[6].data(), p[7].data()},
      p[8].data(), p[9].data(), p[10].data(), p[11].data(), p[12].data(), p[13].data(), p[14].data(), p[15].data()};
  const std::vector<float> x = random_floats(static_cast<size_t>(l * e), rng, 1.0f);

  const attn::nn::encoder_block_shape whole{{1, l, e, e, heads}, f, true};
  attn::nn::attention_mask_spec causal;
  causal.causal = true;
  std::vector<float> y(x.size());
  attn::nn::encoder_block_cache<float> cache;
  attn::nn::encoder_block_forward(x.data(), w, y.data(), cache, whole, causal);

  attn::nn::self_attention_kv kv;
  kv.reset(e, capacity);
  attn::nn::encoder_block_row_scratch scratch;
  const attn::nn::encoder_block_shape row{{1, 1, e, e, heads}, f, true};
  for (int64_t t = 0; t < l; ++t) {
    std::vector<float> stream(x.begin() + t * e, x.begin() + (t + 1) * e);
    attn::nn::encoder_block_row_forward(stream.data(), w, kv, t, row, scratch);
    for (int64_t j = 0; j < e; ++j) {
      const float want = y[static_cast<size_t>(t * e + j)];
      EXPECT_NEAR(stream[static_cast<size_t>(j)], want, 2e-5f * (1 + std::fabs(want)))
          << "position " << t << ", dimension " << j << " (E " << e << ", H " << heads << ")";
    }
  }
}

TEST(encoder_block_row, rows_match_the_causal_forward) {
  check_rows_match_forward(12, 4, 20, 7, 9, 1);
  check_rows_match_forward(16, 1, 32, 33, 33, 2);
  check_rows_match_forward(30, 5, 7, 19, 64, 3);
}

TEST(encoder_block_row, post_norm_has_no_row_path) {
  std::vector<float> zero(64, 0.0f);
  const float* z = zero.data();
  const attn::nn::encoder_block_weights<float> w{{z, z, z, z, z, z, z, z}, z, z, z, z, z, z, z, z};
  attn::nn::self_attention_kv kv;
  kv.reset(4, 2);
  attn::nn::encoder_block_row_scratch scratch;
  std::vector<float> x(4, 0.0f);
  EXPECT_THROW(attn::nn::encoder_block_row_forward(x.data(), w, kv, 0, {{1, 1, 4, 4, 1}, 4, false}, scratch),
               std::exception);
}

}  // namespace
