// Every trainable layer's backward against finite differences of its forward, in double
// (issue #4: linear with bias, ReLU, embedding, positions, masked mean, cross-entropy, the
// attention core with causal and padding masks, multi-head self-attention's W_q/k/v/o and
// biases).
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gradient_check.hpp"
#include "nn/attention_core.hpp"
#include "nn/autocast.hpp"
#include "nn/cross_entropy.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear_layer.hpp"
#include "nn/mean_pool.hpp"
#include "nn/self_attention_layer.hpp"

namespace {

using attn::testing::expect_gradient;
using attn::testing::random_values;
using attn::testing::weighted_sum;
using vec = std::vector<double>;

TEST(train_layers, linear_gradients_match_finite_differences) {
  std::mt19937 rng(1);
  const int64_t n = 5, in = 7, out = 3;
  vec x = random_values(n * in, rng), w = random_values(out * in, rng), b = random_values(out, rng);
  const vec r = random_values(n * out, rng);
  const auto loss = [&] {
    vec y(n * out);
    attn::nn::linear_forward(x.data(), w.data(), b.data(), y.data(), n, in, out);
    return weighted_sum(y, r);
  };
  vec dx(x.size(), 0.0), dw(w.size(), 0.0), db(b.size(), 0.0);
  attn::nn::linear_backward(r.data(), x.data(), w.data(), dx.data(), dw.data(), db.data(), n, in,
                            out);
  expect_gradient(x, dx, loss, "dx");
  expect_gradient(w, dw, loss, "dweight");
  expect_gradient(b, db, loss, "dbias");
}

TEST(train_layers, relu_gradient_matches_finite_differences_away_from_zero) {
  std::mt19937 rng(2);
  vec x = random_values(50, rng);
  for (double& v : x)
    if (std::fabs(v) < 1e-3) v = 0.5;  // the kink: no derivative there
  const vec r = random_values(50, rng);
  const auto loss = [&] {
    vec y(x.size());
    attn::nn::relu_forward(x.data(), y.data(), 50);
    return weighted_sum(y, r);
  };
  vec dx(50, 0.0);
  attn::nn::relu_backward(r.data(), x.data(), dx.data(), 50);
  expect_gradient(x, dx, loss, "dx");
}

TEST(train_layers, embedding_and_positions_gradients_sum_repeated_rows) {
  // Ids 0-3 read the pre-trained table, 4-5 the new words' rows; repeats and padding.
  std::mt19937 rng(3);
  const int64_t split = 4, extra_rows = 2, e = 4, b = 2, l = 5;
  const std::vector<int64_t> ids{0, 3, 3, 5, -1, 2, 0, -1, 4, -1};
  vec table = random_values(split * e, rng), extra = random_values(extra_rows * e, rng);
  vec positions = random_values(l * e, rng);
  const vec r = random_values(b * l * e, rng);
  const auto loss = [&] {
    vec x(b * l * e);
    attn::nn::embedding_forward(ids.data(), table.data(), split, extra.data(), x.data(), b * l, e);
    attn::nn::positional_forward(positions.data(), x.data(), b, l, e);
    return weighted_sum(x, r);
  };
  vec dtable(table.size(), 0.0), dextra(extra.size(), 0.0), dpositions(positions.size(), 0.0);
  attn::nn::embedding_backward(ids.data(), r.data(), dtable.data(), split, dextra.data(), b * l, e);
  attn::nn::positional_backward(r.data(), dpositions.data(), b, l, e);
  expect_gradient(table, dtable, loss, "dtable");
  expect_gradient(extra, dextra, loss, "dextra");
  expect_gradient(positions, dpositions, loss, "dpositions");
  for (int64_t j = 0; j < e; ++j) EXPECT_EQ(dtable[static_cast<size_t>(1 * e + j)], 0.0);
  // A frozen table gets no gradient; the new words' rows still do.
  vec dextra_only(extra.size(), 0.0);
  attn::nn::embedding_backward(ids.data(), r.data(), static_cast<double*>(nullptr), split,
                               dextra_only.data(), b * l, e);
  EXPECT_EQ(dextra_only, dextra);
}

TEST(train_layers, masked_mean_gradient_matches_finite_differences) {
  std::mt19937 rng(4);
  const int64_t l = 4, e = 3;
  const std::vector<attn::nn::pool_row> rows{{0, 4}, {1, 1}, {1, 2}, {1, 3}, {2, 2}};
  const auto r_count = static_cast<int64_t>(rows.size());
  vec y = random_values(3 * l * e, rng);
  const vec r = random_values(r_count * e, rng);
  const auto loss = [&] {
    vec p(r_count * e);
    attn::nn::mean_pool_forward(y.data(), rows.data(), p.data(), r_count, l, e);
    return weighted_sum(p, r);
  };
  vec dy(y.size(), 0.0);
  attn::nn::mean_pool_backward(r.data(), rows.data(), dy.data(), r_count, l, e);
  expect_gradient(y, dy, loss, "dy");
  // Tokens after a row's count (sequence 2's last two) get nothing.
  for (int64_t t = 2; t < l; ++t)
    for (int64_t j = 0; j < e; ++j) EXPECT_EQ(dy[static_cast<size_t>((2 * l + t) * e + j)], 0.0);
}

TEST(train_layers, cross_entropy_gradient_matches_finite_differences) {
  std::mt19937 rng(5);
  const int64_t rows = 4, classes = 7;
  vec logits = random_values(rows * classes, rng, 3.0);
  logits[3] = 40.0;  // a large logit: the max subtraction keeps exp finite
  const std::vector<int64_t> targets{0, 6, 2, 2};
  const auto loss = [&] {
    return attn::nn::cross_entropy_forward(logits.data(), targets.data(),
                                           static_cast<double*>(nullptr), rows, classes);
  };
  vec d(logits.size());
  attn::nn::cross_entropy_backward(logits.data(), targets.data(), d.data(), rows, classes);
  expect_gradient(logits, d, loss, "dlogits");
  EXPECT_TRUE(std::isfinite(loss()));
}

// The float cross-entropy (parallel rows, a polynomial exponential) against the double one on
// awkward class counts, with logits far apart (underflowing terms) and a row's log-sum-exp
// handed from forward to backward.
TEST(train_layers, float_cross_entropy_matches_the_double_specification) {
  std::mt19937 rng(11);
  for (const int64_t classes : {1, 7, 63, 65, 129, 1000, 10003}) {
    const int64_t rows = classes > 1000 ? 9 : 37;
    vec logits = random_values(rows * classes, rng, 8.0);
    logits[0] = 95.0;  // far above the rest: their exponentials underflow
    std::uniform_int_distribution<int64_t> pick(0, classes - 1);
    std::vector<int64_t> targets(static_cast<size_t>(rows));
    for (int64_t& t : targets) t = pick(rng);
    std::vector<float> f(logits.begin(), logits.end()), lse(static_cast<size_t>(rows));
    vec dref(logits.size());
    std::vector<float> d(f.size()), d_again(f.size());
    const double ref = attn::nn::cross_entropy_forward(logits.data(), targets.data(),
                                                       static_cast<double*>(nullptr), rows, classes);
    const float got = attn::nn::cross_entropy_forward(f.data(), targets.data(), static_cast<float*>(nullptr),
                                                      rows, classes, lse.data());
    EXPECT_NEAR(got, ref, 1e-5 * std::max(1.0, std::abs(ref))) << classes;
    attn::nn::cross_entropy_backward(logits.data(), targets.data(), dref.data(), rows, classes);
    attn::nn::cross_entropy_backward(f.data(), targets.data(), d.data(), rows, classes, 1.0f, lse.data());
    attn::nn::cross_entropy_backward(f.data(), targets.data(), d_again.data(), rows, classes);
    for (size_t k = 0; k < d.size(); ++k) {
      ASSERT_NEAR(d[k], dref[k], 2e-6 / static_cast<double>(rows) + 1e-5 * std::abs(dref[k])) << classes << " " << k;
      ASSERT_EQ(d[k], d_again[k]) << k;  // the forward's lse is the one backward computes
    }
  }
}

// Layer norm in float against the double version, on row counts across its runs of 256 rows (the
// threads share them), with the same bits on one thread or two.
TEST(train_layers, float_layer_norm_matches_double_on_any_thread_count) {
  std::mt19937 rng(13);
  for (const int64_t n : {1, 7, 257, 600})
    for (const int64_t e : {7, 100}) {
      const vec x = random_values(n * e, rng, 3.0), gamma = random_values(e, rng),
                beta = random_values(e, rng), dy = random_values(n * e, rng);
      vec y(x.size()), mean(static_cast<size_t>(n)), rstd(mean.size()), dx(x.size(), 0.25),
          dgamma(static_cast<size_t>(e), 0.25), dbeta(dgamma);
      attn::nn::layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                                   rstd.data(), n, e);
      attn::nn::layer_norm_backward(dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(),
                                    dx.data(), dgamma.data(), dbeta.data(), n, e);
      const auto to_float = [](const vec& v) { return std::vector<float>(v.begin(), v.end()); };
      std::vector<std::vector<float>> runs;  // y, dx, dγ, dβ of each thread count, one after another
      for (int threads : {1, 2}) {
        const int before = omp_get_max_threads();
        omp_set_num_threads(threads);
        const std::vector<float> xf = to_float(x), gf = to_float(gamma), bf = to_float(beta),
                                 dyf = to_float(dy);
        std::vector<float> yf(xf.size()), mf(static_cast<size_t>(n)), rf(mf.size()),
            dxf(xf.size(), 0.25f), dgf(static_cast<size_t>(e), 0.25f), dbf(dgf);
        attn::nn::layer_norm_forward(xf.data(), gf.data(), bf.data(), yf.data(), mf.data(), rf.data(),
                                     n, e);
        attn::nn::layer_norm_backward(dyf.data(), xf.data(), gf.data(), mf.data(), rf.data(),
                                      dxf.data(), dgf.data(), dbf.data(), n, e);
        omp_set_num_threads(before);
        runs.insert(runs.end(), {yf, dxf, dgf, dbf});
      }
      for (size_t k = 0; k < 4; ++k) EXPECT_EQ(runs[k], runs[k + 4]) << n << " × " << e << " " << k;
      const vec* want[4] = {&y, &dx, &dgamma, &dbeta};
      for (size_t k = 0; k < 4; ++k)
        for (size_t i = 0; i < want[k]->size(); ++i) {
          const double w = (*want[k])[i];
          ASSERT_NEAR(runs[k][i], w, 1e-5 * (1.0 + std::abs(w)) * (k >= 2 ? std::sqrt(double(n)) : 1.0))
              << n << " × " << e << " output " << k << " at " << i;
        }
    }
}

// The output bias's gradient summed inside the backward (in runs of rows shared by the threads):
// the column sums of dlogits, added to what was there, the same bits on one thread or two.
TEST(train_layers, cross_entropy_backward_column_sums) {
  std::mt19937 rng(12);
  for (const int64_t rows : {1, 7, 33, 65, 129, 300})
    for (const int64_t classes : {1, 7, 300}) {
      const vec logits = random_values(rows * classes, rng, 4.0);
      std::uniform_int_distribution<int64_t> pick(0, classes - 1);
      std::vector<int64_t> targets(static_cast<size_t>(rows));
      for (int64_t& t : targets) t = pick(rng);
      vec dref(logits.size()), sums_ref(static_cast<size_t>(classes), 0.5);
      attn::nn::cross_entropy_backward(logits.data(), targets.data(), dref.data(), rows, classes, 1.0,
                                       nullptr, sums_ref.data());
      std::vector<float> f(logits.begin(), logits.end()), d(f.size());
      std::vector<std::vector<float>> sums;
      for (int threads : {1, 2}) {
        const int before = omp_get_max_threads();
        omp_set_num_threads(threads);
        sums.emplace_back(static_cast<size_t>(classes), 0.5f);
        attn::nn::cross_entropy_backward(f.data(), targets.data(), d.data(), rows, classes, 1.0f,
                                         nullptr, sums.back().data());
        omp_set_num_threads(before);
      }
      EXPECT_EQ(sums[0], sums[1]) << rows << " × " << classes;
      for (int64_t j = 0; j < classes; ++j) {
        double by_hand = 0.5;  // Σ_i dlogits[i, j], from the double backward's rows
        for (int64_t i = 0; i < rows; ++i) by_hand += dref[static_cast<size_t>(i * classes + j)];
        ASSERT_NEAR(sums_ref[static_cast<size_t>(j)], by_hand, 1e-12) << j;
        ASSERT_NEAR(sums[0][static_cast<size_t>(j)], by_hand, 1e-6) << rows << " × " << classes << " " << j;
      }
    }
}

// The double attention core, the specification the model's gradient checks rest on; l queries
// and s keys.
void check_attention_core(const attn::nn::attention_mask_spec& mask, int64_t b, int64_t h,
                          int64_t l, int64_t s, int64_t d, unsigned seed) {
  std::mt19937 rng(seed);
  const attn::nn::attention_core_shape shape{.batch = b, .heads = h, .queries = l, .keys = s,
                                             .head_dim = d};
  const int64_t nq = b * h * l * d, nk = b * h * s * d;
  vec q = random_values(nq, rng), k = random_values(nk, rng), v = random_values(nk, rng);
  const vec r = random_values(nq, rng);
  const auto loss = [&] {
    vec o(nq);
    attn::nn::attention_core_cache<double> cache;
    attn::nn::attention_core_forward(q.data(), k.data(), v.data(), o.data(), cache, shape, mask);
    return weighted_sum(o, r);
  };
  vec o(nq), dq(nq), dk(nk), dv(nk);
  attn::nn::attention_core_cache<double> cache;
  attn::nn::attention_core_forward(q.data(), k.data(), v.data(), o.data(), cache, shape, mask);
  attn::nn::attention_core_backward(q.data(), k.data(), v.data(), o.data(), cache, r.data(),
                                    dq.data(), dk.data(), dv.data(), shape, mask);
  expect_gradient(q, dq, loss, "dq");
  expect_gradient(k, dk, loss, "dk");
  expect_gradient(v, dv, loss, "dv");
}

TEST(train_layers, attention_core_gradients_match_finite_differences) {
  check_attention_core({}, 2, 2, 5, 5, 3, 6);
  check_attention_core({.causal = true, .lengths = {}}, 2, 3, 6, 6, 4, 7);
  // Padding: sequence 1 has 2 real keys; sequence 2 none at all (its rows are fully masked:
  // output 0 and zero gradients).
  check_attention_core({.causal = false, .lengths = {5, 2, 0}}, 3, 2, 5, 5, 3, 8);
  // Queries and keys from sequences of different lengths, both ways, with both masks.
  check_attention_core({.causal = true, .lengths = {3, 7}}, 2, 2, 4, 7, 3, 11);
  check_attention_core({.causal = true, .lengths = {2, 3}}, 2, 3, 6, 3, 2, 12);
}

TEST(train_layers, fully_masked_rows_give_zero_gradients) {
  std::mt19937 rng(9);
  const int64_t b = 1, h = 2, l = 4, d = 3, n = b * h * l * d;
  const attn::nn::attention_core_shape shape{.batch = b, .heads = h, .queries = l, .keys = l,
                                             .head_dim = d};
  const attn::nn::attention_mask_spec mask{.causal = false, .lengths = {0}};
  const vec q = random_values(n, rng), k = random_values(n, rng), v = random_values(n, rng);
  const vec r = random_values(n, rng);
  vec o(n), dq(n), dk(n), dv(n);
  attn::nn::attention_core_cache<double> cache;
  attn::nn::attention_core_forward(q.data(), k.data(), v.data(), o.data(), cache, shape, mask);
  attn::nn::attention_core_backward(q.data(), k.data(), v.data(), o.data(), cache, r.data(),
                                    dq.data(), dk.data(), dv.data(), shape, mask);
  for (const vec* t : {&o, &dq, &dk, &dv})
    for (double x : *t) EXPECT_EQ(x, 0.0);
}

TEST(train_layers, self_attention_gradients_match_finite_differences) {
  std::mt19937 rng(10);
  // Input width 5 ≠ attention width 6, three heads of 2, a padded second sequence.
  const attn::nn::self_attention_shape s{2, 4, 5, 6, 3};
  const attn::nn::attention_mask_spec mask{.causal = false, .lengths = {4, 3}};
  const int64_t rows = s.batch * s.length;
  vec x = random_values(rows * s.input, rng);
  vec wq = random_values(s.width * s.input, rng, 0.5), wk = random_values(s.width * s.input, rng, 0.5),
      wv = random_values(s.width * s.input, rng, 0.5), wo = random_values(s.width * s.width, rng, 0.5);
  vec bq = random_values(s.width, rng), bk = random_values(s.width, rng),
      bv = random_values(s.width, rng), bo = random_values(s.width, rng);
  const vec r = random_values(rows * s.width, rng);
  const auto weights = [&] {
    return attn::nn::self_attention_weights<double>{wq.data(), bq.data(), wk.data(), bk.data(),
                                                    wv.data(), bv.data(), wo.data(), bo.data()};
  };
  const auto loss = [&] {
    vec y(rows * s.width);
    attn::nn::self_attention_cache<double> cache;
    attn::nn::self_attention_forward(x.data(), weights(), y.data(), cache, s, mask);
    return weighted_sum(y, r);
  };
  vec y(rows * s.width);
  attn::nn::self_attention_cache<double> cache;
  attn::nn::self_attention_forward(x.data(), weights(), y.data(), cache, s, mask);
  vec dx(x.size(), 0.0), dwq(wq.size(), 0.0), dwk(wk.size(), 0.0), dwv(wv.size(), 0.0),
      dwo(wo.size(), 0.0), dbq(bq.size(), 0.0), dbk(bk.size(), 0.0), dbv(bv.size(), 0.0),
      dbo(bo.size(), 0.0);
  attn::nn::self_attention_backward(r.data(), x.data(), weights(), cache, dx.data(),
                                    {dwq.data(), dbq.data(), dwk.data(), dbk.data(), dwv.data(),
                                     dbv.data(), dwo.data(), dbo.data()},
                                    s, mask);
  expect_gradient(x, dx, loss, "dx");
  expect_gradient(wq, dwq, loss, "dW_q");
  expect_gradient(wk, dwk, loss, "dW_k");
  expect_gradient(wv, dwv, loss, "dW_v");
  expect_gradient(wo, dwo, loss, "dW_o");
  expect_gradient(bq, dbq, loss, "db_q");
  expect_gradient(bk, dbk, loss, "db_k");
  expect_gradient(bv, dbv, loss, "db_v");
  expect_gradient(bo, dbo, loss, "db_o");
}

// A linear layer on bf16 operands (the tied output's --dtype bf16) in float against its double
// specification (the operands rounded to bf16, exact sums), forward and backward, at a shape
// past the threshold for sharing the product; and not the float32 layer (the rounding happens).
TEST(train_layers, bf16_linear_matches_its_double_specification) {
  std::mt19937 rng(17);
  const int64_t n = 65, in = 101, out = 263;
  const vec x = random_values(n * in, rng), w = random_values(out * in, rng), b = random_values(out, rng),
            dy = random_values(n * out, rng);
  vec y(static_cast<size_t>(n * out)), dx(x.size(), 0.0), dw(w.size(), 0.0);
  attn::nn::linear_forward(x.data(), w.data(), b.data(), y.data(), n, in, out, true);
  attn::nn::linear_backward(dy.data(), x.data(), w.data(), dx.data(), dw.data(), static_cast<double*>(nullptr), n,
                            in, out, true);
  const auto to_float = [](const vec& v) { return std::vector<float>(v.begin(), v.end()); };
  const std::vector<float> xf = to_float(x), wf = to_float(w), bf = to_float(b), dyf = to_float(dy);
  std::vector<float> yf(y.size()), dxf(dx.size(), 0.0f), dwf(dw.size(), 0.0f), plain(y.size());
  attn::nn::linear_forward(xf.data(), wf.data(), bf.data(), yf.data(), n, in, out, true);
  attn::nn::linear_backward(dyf.data(), xf.data(), wf.data(), dxf.data(), dwf.data(), static_cast<float*>(nullptr), n,
                            in, out, true);
  attn::nn::linear_forward(xf.data(), wf.data(), bf.data(), plain.data(), n, in, out);
  double furthest = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_NEAR(yf[i], y[i], 1e-4 * (1.0 + std::abs(y[i]))) << "y " << i;
    furthest = std::max(furthest, std::abs(double(plain[i]) - y[i]));
  }
  for (size_t i = 0; i < dx.size(); ++i) ASSERT_NEAR(dxf[i], dx[i], 1e-4 * (1.0 + std::abs(dx[i]))) << "dx " << i;
  for (size_t i = 0; i < dw.size(); ++i) ASSERT_NEAR(dwf[i], dw[i], 1e-4 * (1.0 + std::abs(dw[i]))) << "dw " << i;
  EXPECT_GT(furthest, 1e-2);  // float32 operands land elsewhere: the bf16 path did round
}

// Inside nn::bf16_autocast (--task translate --dtype bf16) a float32 linear layer's products are
// the bf16 ones, forward and backward, bit for bit; the scope nests and ends where it was.
TEST(train_layers, autocast_runs_the_float_layers_products_on_bf16) {
  std::mt19937 rng(18);
  const int64_t n = 70, in = 96, out = 130;
  const auto values = [&rng](int64_t count) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(count));
    for (float& x : v) x = normal(rng);
    return v;
  };
  const std::vector<float> x = values(n * in), w = values(out * in), dy = values(n * out);
  struct result { std::vector<float> y, dx, dw; };
  const auto run = [&](bool bf16) {
    result r{std::vector<float>(static_cast<size_t>(n * out)), std::vector<float>(x.size(), 0.0f),
             std::vector<float>(w.size(), 0.0f)};
    attn::nn::linear_forward(x.data(), w.data(), static_cast<const float*>(nullptr), r.y.data(), n, in, out, bf16);
    attn::nn::linear_backward(dy.data(), x.data(), w.data(), r.dx.data(), r.dw.data(), static_cast<float*>(nullptr),
                              n, in, out, bf16);
    return r;
  };
  const result plain = run(false), bf16 = run(true);
  EXPECT_FALSE(attn::nn::bf16_products());
  result inside;
  {
    const attn::nn::bf16_autocast on(true);
    EXPECT_TRUE(attn::nn::bf16_products());
    {
      const attn::nn::bf16_autocast off(false);  // an inner scope that asks for nothing keeps it on
      EXPECT_TRUE(attn::nn::bf16_products());
    }
    inside = run(false);
  }
  EXPECT_FALSE(attn::nn::bf16_products());
  EXPECT_EQ(inside.y, bf16.y);
  EXPECT_EQ(inside.dx, bf16.dx);
  EXPECT_EQ(inside.dw, bf16.dw);
  EXPECT_NE(inside.y, plain.y);
  EXPECT_EQ(run(false).y, plain.y);  // and after it, float32 again
}

}  // namespace
