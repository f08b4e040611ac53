// The pre-norm decoder layer (nn/decoder_block.hpp): every gradient (weights, the target's input
// and the memory) against finite differences in double, with a source sentence shorter than the
// memory; the padded memory rows change nothing and get no gradient; causality (a target
// position's output ignores later positions); the float path against the double one.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gradient_check.hpp"
#include "nn/decoder_block.hpp"

namespace {

using attn::nn::decoder_block_cache;
using attn::nn::decoder_block_shape;
using attn::nn::decoder_parameters;
using attn::nn::make_decoder_parameters;
using vec = std::vector<double>;

template <class T>
decoder_parameters<T> random_parameters(const decoder_block_shape& s, std::mt19937& rng) {
  decoder_parameters<T> w = make_decoder_parameters<T>("layers.0.", s.width, s.feedforward);
  std::vector<attn::nn::parameter<T>*> all;
  w.append_to(all);
  for (auto* p : all) {
    const bool norm_weight = p->name.find("norm") != std::string::npos && p->name.ends_with("weight");
    for (T& v : p->value) v = static_cast<T>((norm_weight ? 1.0 : 0.0) + attn::testing::random_values(1, rng, 0.4)[0]);
  }
  return w;
}

const decoder_block_shape shape{.batch = 2, .target = 3, .source = 4, .width = 8, .heads = 2, .feedforward = 12};
const std::vector<int64_t> lengths{4, 2};  // the second sentence has two real memory rows of four

TEST(decoder_block, every_gradient_matches_finite_differences) {
  std::mt19937 rng(5);
  decoder_parameters<double> w = random_parameters<double>(shape, rng);
  vec x = attn::testing::random_values(static_cast<size_t>(shape.batch * shape.target * shape.width), rng);
  vec memory = attn::testing::random_values(static_cast<size_t>(shape.batch * shape.source * shape.width), rng);
  const vec r = attn::testing::random_values(x.size(), rng);  // loss = Σ y ⊙ r
  vec y(x.size());
  decoder_block_cache<double> cache;
  const auto loss = [&] {
    decoder_block_forward(x.data(), memory.data(), lengths, w, y.data(), cache, shape);
    return attn::testing::weighted_sum(y, r);
  };
  loss();
  vec dx(x.size(), 0.0), dmemory(memory.size(), 0.0);
  decoder_block_backward(r.data(), x.data(), memory.data(), lengths, w, cache, dx.data(), dmemory.data(), shape);
  attn::testing::expect_gradient(x, dx, loss, "x");
  attn::testing::expect_gradient(memory, dmemory, loss, "memory");
  std::vector<attn::nn::parameter<double>*> all;
  w.append_to(all);
  EXPECT_EQ(all.size(), 26u);  // two attentions of 8, two linears, three norms
  for (auto* p : all) attn::testing::expect_gradient(p->value, p->grad, loss, p->name, 150);
  // the second sentence's padded memory rows: no gradient
  for (int64_t t = lengths[1]; t < shape.source; ++t)
    for (int64_t j = 0; j < shape.width; ++j)
      EXPECT_EQ(dmemory[static_cast<size_t>((shape.source + t) * shape.width + j)], 0.0);
}

TEST(decoder_block, padded_memory_and_later_targets_change_nothing) {
  std::mt19937 rng(6);
  const decoder_parameters<double> w = random_parameters<double>(shape, rng);
  vec x = attn::testing::random_values(static_cast<size_t>(shape.batch * shape.target * shape.width), rng);
  vec memory = attn::testing::random_values(static_cast<size_t>(shape.batch * shape.source * shape.width), rng);
  vec y(x.size()), y2(x.size());
  decoder_block_cache<double> cache;
  decoder_block_forward(x.data(), memory.data(), lengths, w, y.data(), cache, shape);
  // the second sentence's padded memory rows and the last target position of each sequence
  for (int64_t j = 0; j < shape.width; ++j) {
    memory[static_cast<size_t>((shape.source + 3) * shape.width + j)] += 5.0;
    x[static_cast<size_t>((shape.target - 1) * shape.width + j)] += 3.0;
  }
  decoder_block_forward(x.data(), memory.data(), lengths, w, y2.data(), cache, shape);
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t t = 0; t + 1 < shape.target; ++t)  // every position before the changed one
      for (int64_t j = 0; j < shape.width; ++j) {
        const auto i = static_cast<size_t>((b * shape.target + t) * shape.width + j);
        EXPECT_EQ(y[i], y2[i]) << b << "," << t;
      }
}

TEST(decoder_block, float_path_matches_double) {
  for (const decoder_block_shape s : {shape, decoder_block_shape{.batch = 3, .target = 7, .source = 65, .width = 16,
                                                                 .heads = 4, .feedforward = 20},
                                      decoder_block_shape{.batch = 1, .target = 65, .source = 1, .width = 8,
                                                          .heads = 1, .feedforward = 8}}) {
    std::mt19937 rng(7);
    decoder_parameters<double> wd = random_parameters<double>(s, rng);
    decoder_parameters<float> wf = make_decoder_parameters<float>("layers.0.", s.width, s.feedforward);
    std::vector<attn::nn::parameter<double>*> pd;
    std::vector<attn::nn::parameter<float>*> pf;
    wd.append_to(pd);
    wf.append_to(pf);
    for (size_t i = 0; i < pd.size(); ++i) pf[i]->value.assign(pd[i]->value.begin(), pd[i]->value.end());
    const vec x = attn::testing::random_values(static_cast<size_t>(s.batch * s.target * s.width), rng);
    const vec memory = attn::testing::random_values(static_cast<size_t>(s.batch * s.source * s.width), rng);
    const vec r = attn::testing::random_values(x.size(), rng);
    std::vector<int64_t> lens(static_cast<size_t>(s.batch), s.source);
    lens[0] = (s.source + 1) / 2;
    vec yd(x.size());
    std::vector<float> yf(x.size());
    const std::vector<float> xf(x.begin(), x.end()), mf(memory.begin(), memory.end()), rf(r.begin(), r.end());
    decoder_block_cache<double> cd;
    decoder_block_cache<float> cf;
    decoder_block_forward(x.data(), memory.data(), lens, wd, yd.data(), cd, s);
    decoder_block_forward(xf.data(), mf.data(), lens, wf, yf.data(), cf, s);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < yd.size(); ++i) {
      diff += (yf[i] - yd[i]) * (yf[i] - yd[i]);
      norm += yd[i] * yd[i];
    }
    EXPECT_LT(std::sqrt(diff / norm), 1e-5) << s.target << "x" << s.source;
    vec dxd(x.size(), 0.0), dmd(memory.size(), 0.0);
    std::vector<float> dxf(x.size(), 0.0f), dmf(memory.size(), 0.0f);
    decoder_block_backward(r.data(), x.data(), memory.data(), lens, wd, cd, dxd.data(), dmd.data(), s);
    decoder_block_backward(rf.data(), xf.data(), mf.data(), lens, wf, cf, dxf.data(), dmf.data(), s);
    attn::testing::expect_gradients_match(pf, pd, 1e-4, "decoder_block");
  }
}

}  // namespace
