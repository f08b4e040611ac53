// The attention layer with queries and keys/values from different sequences (L ≠ S): the float
// path (attn's fused kernels, called directly) against the double path (the plain formula, itself
// checked by finite differences in test_train_layers.cpp), forward and every gradient, on awkward
// shapes: L and S in 1, 7, 63, 65, 129 (a tile and one past it), both ways round, 1 and 3 heads
// of odd size, key padding and the causal mask. The float path runs on the double inputs rounded
// to float, so the difference is float32 arithmetic alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gradient_check.hpp"
#include "nn/attention_layer.hpp"
#include "nn/self_attention_layer.hpp"

namespace {

using attn::nn::attention_mask_spec;
using attn::nn::attention_shape;
using vec = std::vector<double>;

// Inputs, weights and the upstream gradient of one case, in double (values already float's).
struct layer_inputs {
  vec x_q, x_kv, dy;
  vec wq, bq, wk, bk, wv, bv, wo, bo;
};

// What the layer gives: y and every gradient, in double.
struct layer_outputs {
  vec y, dx_q, dx_kv, dwq, dbq, dwk, dbk, dwv, dbv, dwo, dbo;
};

vec float_valued(size_t n, std::mt19937& rng, double scale = 1.0) {
  vec v = attn::testing::random_values(n, rng, scale);
  for (double& x : v) x = static_cast<float>(x);
  return v;
}

layer_inputs random_inputs(const attention_shape& s, std::mt19937& rng) {
  const auto e = static_cast<size_t>(s.width);
  const auto nq = static_cast<size_t>(s.batch * s.queries),
             nk = static_cast<size_t>(s.batch * s.keys);
  const double wscale_q = 1.0 / std::sqrt(static_cast<double>(s.query_input));
  const double wscale_kv = 1.0 / std::sqrt(static_cast<double>(s.key_input));
  const double wscale_o = 1.0 / std::sqrt(static_cast<double>(s.width));
  // Weights larger than PyTorch's initial ones, so the softmax is far from uniform.
  return {float_valued(nq * static_cast<size_t>(s.query_input), rng),
          float_valued(nk * static_cast<size_t>(s.key_input), rng),
          float_valued(nq * e, rng),
          float_valued(e * static_cast<size_t>(s.query_input), rng, 3 * wscale_q),
          float_valued(e, rng, 0.1),
          float_valued(e * static_cast<size_t>(s.key_input), rng, 3 * wscale_kv),
          float_valued(e, rng, 0.1),
          float_valued(e * static_cast<size_t>(s.key_input), rng, wscale_kv),
          float_valued(e, rng, 0.1),
          float_valued(e * e, rng, wscale_o),
          float_valued(e, rng, 0.1)};
}

template <class T>
std::vector<T> as(const vec& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <class T>
vec as_double(const std::vector<T>& v) {
  return vec(v.begin(), v.end());
}

template <class T>
layer_outputs run_layer(const layer_inputs& in, const attention_shape& s,
                        const attention_mask_spec& mask) {
  const std::vector<T> x_q = as<T>(in.x_q), x_kv = as<T>(in.x_kv), dy = as<T>(in.dy);
  const std::vector<T> wq = as<T>(in.wq), bq = as<T>(in.bq), wk = as<T>(in.wk), bk = as<T>(in.bk),
                       wv = as<T>(in.wv), bv = as<T>(in.bv), wo = as<T>(in.wo), bo = as<T>(in.bo);
  const attn::nn::attention_weights<T> w{wq.data(), bq.data(), wk.data(), bk.data(),
                                         wv.data(), bv.data(), wo.data(), bo.data()};
  std::vector<T> y(in.dy.size());
  attn::nn::attention_cache<T> cache;
  attn::nn::attention_forward(x_q.data(), x_kv.data(), w, y.data(), cache, s, mask);
  // Backward adds into its gradients: start them at zero.
  std::vector<T> dx_q(x_q.size()), dx_kv(x_kv.size()), dwq(wq.size()), dbq(bq.size()),
      dwk(wk.size()), dbk(bk.size()), dwv(wv.size()), dbv(bv.size()), dwo(wo.size()),
      dbo(bo.size());
  attn::nn::attention_backward(dy.data(), x_q.data(), x_kv.data(), w, cache, dx_q.data(),
                               dx_kv.data(),
                               {dwq.data(), dbq.data(), dwk.data(), dbk.data(), dwv.data(),
                                dbv.data(), dwo.data(), dbo.data()},
                               s, mask);
  return {as_double(y),   as_double(dx_q), as_double(dx_kv), as_double(dwq),
          as_double(dbq), as_double(dwk),  as_double(dbk),   as_double(dwv),
          as_double(dbv), as_double(dwo),  as_double(dbo)};
}

double norm(const vec& v) {
  double sum = 0;
  for (double x : v) sum += x * x;
  return std::sqrt(sum);
}

double norm_of_difference(const vec& got, const vec& want) {
  double sum = 0;
  for (size_t i = 0; i < want.size(); ++i) sum += (got[i] - want[i]) * (got[i] - want[i]);
  return std::sqrt(sum);
}

std::string describe(const attention_shape& s, const attention_mask_spec& mask) {
  std::string lengths;
  for (int64_t n : mask.lengths) lengths += (lengths.empty() ? "" : ",") + std::to_string(n);
  return "B=" + std::to_string(s.batch) + " L=" + std::to_string(s.queries) +
         " S=" + std::to_string(s.keys) + " E=" + std::to_string(s.width) +
         " H=" + std::to_string(s.heads) + (mask.causal ? " causal" : "") +
         (lengths.empty() ? "" : " key lengths " + lengths);
}

// The float path's error, relative, of every output against the double path's.
void expect_float_matches_double(const attention_shape& s, const attention_mask_spec& mask,
                                 unsigned seed) {
  std::mt19937 rng(seed);
  const layer_inputs in = random_inputs(s, rng);
  const layer_outputs fast = run_layer<float>(in, s, mask), exact = run_layer<double>(in, s, mask);
  // Float32 rounds each of the n terms of a sum with error ≤ ε (2⁻²⁴) relative; over random
  // signs these add up like a random walk, ε·√n relative to the sum's norm. The longest sums here
  // are the weight gradients' (over B·max(L, S) rows, each the end of a chain of three products
  // and a softmax): 8·ε·√(B·max(L, S)·E) leaves room for that chain (the largest seen over the
  // 200 cases is 0.37 of it), and a wrong line misses it by orders of magnitude (relative errors
  // near 1).
  const double eps = std::numeric_limits<float>::epsilon() / 2;
  const double tolerance =
      8 * eps * std::sqrt(static_cast<double>(s.batch * std::max(s.queries, s.keys) * s.width));
  // The gradients through the scores (to q, k and their inputs) vanish in exact arithmetic where
  // a row sees one key (S = 1, a causal first row, padding down to one key), and db_k always
  // does (a bias on every key adds the same q·b_k to a row's scores, which the softmax cancels).
  // Their float values are then the rounding left of sums whose terms are as large as the value
  // path's gradients, so each is judged against the larger of its own norm and its value-path
  // counterpart's.
  const struct {
    const char* name;
    const vec *got, *want, *counterpart;
  } checks[] = {{"y", &fast.y, &exact.y, nullptr},
                {"dx_q", &fast.dx_q, &exact.dx_q, &exact.dx_kv},
                {"dx_kv", &fast.dx_kv, &exact.dx_kv, nullptr},
                {"dW_q", &fast.dwq, &exact.dwq, &exact.dwv},
                {"db_q", &fast.dbq, &exact.dbq, &exact.dbv},
                {"dW_k", &fast.dwk, &exact.dwk, &exact.dwv},
                {"db_k", &fast.dbk, &exact.dbk, &exact.dbv},
                {"dW_v", &fast.dwv, &exact.dwv, nullptr},
                {"db_v", &fast.dbv, &exact.dbv, nullptr},
                {"dW_o", &fast.dwo, &exact.dwo, nullptr},
                {"db_o", &fast.dbo, &exact.dbo, nullptr}};
  for (const auto& c : checks) {
    const double scale = std::max(norm(*c.want), c.counterpart ? norm(*c.counterpart) : 0.0);
    const double error = scale == 0 ? norm_of_difference(*c.got, *c.want)
                                    : norm_of_difference(*c.got, *c.want) / scale;
    if (error <= tolerance) continue;
    std::string first;
    for (size_t i = 0; i < std::min<size_t>(4, c.want->size()); ++i)
      first += " " + std::to_string((*c.got)[i]) + "/" + std::to_string((*c.want)[i]);
    ADD_FAILURE() << describe(s, mask) << ": " << c.name << " relative error " << error << " > "
                  << tolerance << " (float/double:" << first << ")";
  }
}

attention_shape cross_shape(int64_t l, int64_t s, int64_t heads) {
  // Three sequences; query and key inputs of different widths (5, 7), and a width of 15, so the
  // head size is odd (15 or 5) and no vector loop ends on a full register.
  return {.batch = 3,
          .queries = l,
          .keys = s,
          .query_input = 5,
          .key_input = 7,
          .width = 15,
          .heads = heads};
}

constexpr int64_t awkward_lengths[] = {1, 7, 63, 65, 129};

TEST(attention_layer, float_path_matches_double_on_awkward_shapes) {
  unsigned seed = 100;
  for (int64_t l : awkward_lengths)
    for (int64_t s : awkward_lengths)
      for (int64_t heads : {1, 3})
        for (bool causal : {false, true})
          for (bool padded : {false, true}) {
            attention_mask_spec mask{.causal = causal, .lengths = {}};
            // Sequence 0 whole, 1 about half, 2 a single key.
            if (padded) mask.lengths = {s, (s + 1) / 2, 1};
            expect_float_matches_double(cross_shape(l, s, heads), mask, ++seed);
          }
}

// A sequence with no key at all: its queries get output 0 (y = b_o) and send no gradient to
// the keys, in both paths.
TEST(attention_layer, a_sequence_without_keys_attends_to_nothing) {
  const attention_shape s = cross_shape(7, 65, 3);
  const attention_mask_spec mask{.causal = false, .lengths = {65, 0, 9}};
  expect_float_matches_double(s, mask, 7);
  std::mt19937 rng(7);
  const layer_inputs in = random_inputs(s, rng);
  const layer_outputs fast = run_layer<float>(in, s, mask);
  for (int64_t t = 0; t < s.queries; ++t)
    for (int64_t c = 0; c < s.width; ++c)
      ASSERT_EQ(fast.y[static_cast<size_t>((s.queries + t) * s.width + c)],
                static_cast<float>(in.bo[static_cast<size_t>(c)]));
  for (int64_t i = s.keys * s.key_input; i < 2 * s.keys * s.key_input; ++i)
    ASSERT_EQ(fast.dx_kv[static_cast<size_t>(i)], 0.0);
}

// The decoder's use: keys and values projected once from the encoder's output, then the queries
// one row at a time (as a decoder generating word by word) give the rows of the whole forward.
TEST(attention_layer, keys_values_once_then_one_query_row_at_a_time) {
  const attention_shape s = cross_shape(9, 63, 3);
  const attention_mask_spec mask{.causal = false, .lengths = {63, 20, 1}};
  std::mt19937 rng(11);
  const layer_inputs in = random_inputs(s, rng);
  const std::vector<float> x_q = as<float>(in.x_q), x_kv = as<float>(in.x_kv);
  const std::vector<float> wq = as<float>(in.wq), bq = as<float>(in.bq), wk = as<float>(in.wk),
                           bk = as<float>(in.bk), wv = as<float>(in.wv), bv = as<float>(in.bv),
                           wo = as<float>(in.wo), bo = as<float>(in.bo);
  const attn::nn::attention_weights<float> w{wq.data(), bq.data(), wk.data(), bk.data(),
                                             wv.data(), bv.data(), wo.data(), bo.data()};
  std::vector<float> whole(in.dy.size());
  attn::nn::attention_cache<float> cache;
  attn::nn::attention_forward(x_q.data(), x_kv.data(), w, whole.data(), cache, s, mask);

  attention_shape step = s;
  step.queries = 1;
  attn::nn::attention_keys_values_forward(x_kv.data(), w, cache, step);
  std::vector<float> row_in(static_cast<size_t>(s.batch * s.query_input)),
      row_out(static_cast<size_t>(s.batch * s.width));
  for (int64_t t = 0; t < s.queries; ++t) {
    for (int64_t b = 0; b < s.batch; ++b)
      std::copy_n(x_q.begin() + (b * s.queries + t) * s.query_input, s.query_input,
                  row_in.begin() + b * s.query_input);
    attn::nn::attention_queries_forward(row_in.data(), w, row_out.data(), cache, step, mask);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t c = 0; c < s.width; ++c)
        ASSERT_NEAR(row_out[static_cast<size_t>(b * s.width + c)],
                    whole[static_cast<size_t>((b * s.queries + t) * s.width + c)], 1e-5)
            << "row " << t << " of sequence " << b;
  }
}

// Self-attention is the layer with one input: the same bits as passing x twice.
TEST(attention_layer, self_attention_is_the_layer_with_one_input) {
  const attn::nn::self_attention_shape self{
      .batch = 2, .length = 65, .input = 7, .width = 15, .heads = 3};
  const attention_shape s = self.as_attention();
  const attention_mask_spec mask{.causal = false, .lengths = {65, 30}};
  std::mt19937 rng(12);
  layer_inputs in = random_inputs(s, rng);
  in.x_q = in.x_kv;
  const layer_outputs two_inputs = run_layer<float>(in, s, mask);
  const std::vector<float> x = as<float>(in.x_kv), dy = as<float>(in.dy);
  const std::vector<float> wq = as<float>(in.wq), bq = as<float>(in.bq), wk = as<float>(in.wk),
                           bk = as<float>(in.bk), wv = as<float>(in.wv), bv = as<float>(in.bv),
                           wo = as<float>(in.wo), bo = as<float>(in.bo);
  const attn::nn::self_attention_weights<float> w{wq.data(), bq.data(), wk.data(), bk.data(),
                                                  wv.data(), bv.data(), wo.data(), bo.data()};
  std::vector<float> y(dy.size()), dx(x.size()), dwq(wq.size()), dbq(bq.size()), dwk(wk.size()),
      dbk(bk.size()), dwv(wv.size()), dbv(bv.size()), dwo(wo.size()), dbo(bo.size());
  attn::nn::self_attention_cache<float> cache;
  attn::nn::self_attention_forward(x.data(), w, y.data(), cache, self, mask);
  attn::nn::self_attention_backward(dy.data(), x.data(), w, cache, dx.data(),
                                    {dwq.data(), dbq.data(), dwk.data(), dbk.data(), dwv.data(),
                                     dbv.data(), dwo.data(), dbo.data()},
                                    self, mask);
  EXPECT_EQ(as_double(y), two_inputs.y);
  vec summed(two_inputs.dx_q.size());
  for (size_t i = 0; i < summed.size(); ++i)  // dx = dx_q + dx_kv, in float as the layer sums
    summed[i] = static_cast<float>(static_cast<float>(two_inputs.dx_q[i]) +
                                   static_cast<float>(two_inputs.dx_kv[i]));
  for (size_t i = 0; i < summed.size(); ++i) EXPECT_NEAR(dx[i], summed[i], 1e-5) << i;
  EXPECT_EQ(as_double(dwk), two_inputs.dwk);
  EXPECT_EQ(as_double(dwo), two_inputs.dwo);
}

}  // namespace
