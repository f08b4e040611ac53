// Linear layers and multi-head attention: the fast paths against an independent float64
// computation, and the checks on weights and shapes. The PyTorch comparison lives in
// tests/oracle/ (it needs python3-torch).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/linear.hpp"
#include "attn/multihead_attention.hpp"
#include "attn/sdpa.hpp"
#include "attn/tensor.hpp"

namespace {

using attn::shape_t;
using attn::tensor;

tensor random_tensor(const shape_t& shape, std::mt19937& rng) {
  tensor t(shape);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& x : t.values()) x = normal(rng);
  return t;
}

TEST(linear, matches_float64_on_odd_shapes_with_and_without_bias) {
  std::mt19937 rng(7);
  for (int64_t rows : {1, 7, 63, 65, 129})
    for (int64_t in : {1, 7, 65})
      for (int64_t out : {1, 63, 129}) {
        const tensor x = random_tensor({rows, in}, rng), w = random_tensor({out, in}, rng);
        const tensor b = random_tensor({out}, rng);
        for (const tensor* bias : {static_cast<const tensor*>(nullptr), &b}) {
          const tensor y = attn::linear(x, w, bias);
          const tensor yr = attn::ref::linear(x, w, bias);
          ASSERT_EQ(y.shape(), (shape_t{rows, out}));
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < out; ++o) {
              long double want = bias ? b.at({o}) : 0.0f, magnitude = bias ? std::fabs(b.at({o})) : 0.0f;
              for (int64_t i = 0; i < in; ++i) {
                want += static_cast<long double>(x.at({r, i})) * w.at({o, i});
                magnitude += std::fabs(static_cast<long double>(x.at({r, i})) * w.at({o, i}));
              }
              // The reference: one double sum rounded once, so within half an ulp.
              EXPECT_NEAR(yr.at({r, o}), static_cast<double>(want),
                          0.5 * FLT_EPSILON * std::fabs(static_cast<double>(want)) +
                              1e-12 * static_cast<double>(magnitude));
              // sgemm accumulates in float, in any order: the classic bound (in + 1)·ε·Σ|x·w|.
              EXPECT_NEAR(y.at({r, o}), static_cast<double>(want),
                          static_cast<double>(in + 1) * FLT_EPSILON * static_cast<double>(magnitude));
            }
        }
      }
}

TEST(linear, keeps_leading_dimensions_and_reads_strided_views) {
  std::mt19937 rng(3);
  const tensor x = random_tensor({2, 3, 5}, rng), w = random_tensor({4, 5}, rng);
  const tensor y = attn::linear(x, w);
  EXPECT_EQ(y.shape(), (shape_t{2, 3, 4}));
  // x·(Wᵀ)ᵀ through a transposed view gives the same bits.
  const tensor wt = w.transpose(0, 1).contiguous();
  const tensor y2 = attn::linear(x, wt.transpose(0, 1));
  for (size_t i = 0; i < y.values().size(); ++i) EXPECT_EQ(y.values()[i], y2.values()[i]);
}

TEST(linear, shape_errors_are_usage_errors) {
  const tensor x({2, 5}), w({4, 6}), b({3});
  EXPECT_THROW(attn::linear(x, w), attn::error);
  EXPECT_THROW(attn::linear(x, tensor({4, 5}), &b), attn::error);
  EXPECT_THROW(attn::linear(x, tensor({20})), attn::error);
  try {
    attn::linear(x, w);
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
    EXPECT_NE(std::string(e.what()).find("input size 5"), std::string::npos) << e.what();
  }
}

std::map<std::string, tensor> random_state(int64_t E, std::mt19937& rng, bool bias = true) {
  std::map<std::string, tensor> s;
  s["in_proj_weight"] = random_tensor({3 * E, E}, rng);
  s["out_proj.weight"] = random_tensor({E, E}, rng);
  if (bias) {
    s["in_proj_bias"] = random_tensor({3 * E}, rng);
    s["out_proj.bias"] = random_tensor({E}, rng);
  }
  return s;
}

// Multi-head attention written out with loops in double, from the state dict directly.
std::vector<double> naive_mha(const std::map<std::string, tensor>& s, const tensor& x, int64_t H,
                              bool causal) {
  const int64_t L = x.dim(1), E = x.dim(2), D = E / H;
  const tensor& w = s.at("in_proj_weight");
  const tensor& bi = s.at("in_proj_bias");
  std::vector<double> qkv(3 * L * E), heads(L * E), out(L * E);
  for (int64_t p = 0; p < 3; ++p)
    for (int64_t l = 0; l < L; ++l)
      for (int64_t o = 0; o < E; ++o) {
        double acc = bi.at({p * E + o});
        for (int64_t i = 0; i < E; ++i) acc += double(x.at({0, l, i})) * w.at({p * E + o, i});
        qkv[(p * L + l) * E + o] = acc;
      }
  const double scale = 1.0 / std::sqrt(double(D));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> p(L, 0.0);
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < L; ++j) {
        if (causal && j > i) continue;
        double d = 0;
        for (int64_t k = 0; k < D; ++k) d += qkv[i * E + h * D + k] * qkv[(L + j) * E + h * D + k];
        p[j] = d * scale;
        mx = std::max(mx, p[j]);
      }
      for (int64_t j = 0; j < L; ++j) {
        p[j] = (causal && j > i) ? 0.0 : std::exp(p[j] - mx);
        sum += p[j];
      }
      for (int64_t k = 0; k < D; ++k) {
        double acc = 0;
        for (int64_t j = 0; j < L; ++j) acc += p[j] / sum * qkv[(2 * L + j) * E + h * D + k];
        heads[i * E + h * D + k] = acc;
      }
    }
  const tensor& wo = s.at("out_proj.weight");
  const tensor& bo = s.at("out_proj.bias");
  for (int64_t l = 0; l < L; ++l)
    for (int64_t o = 0; o < E; ++o) {
      double acc = bo.at({o});
      for (int64_t i = 0; i < E; ++i) acc += heads[l * E + i] * wo.at({o, i});
      out[l * E + o] = acc;
    }
  return out;
}

TEST(multihead_attention, matches_float64_loops_on_odd_shapes) {
  std::mt19937 rng(11);
  for (int64_t L : {1, 7, 33})
    for (auto [E, H] : std::vector<std::pair<int64_t, int64_t>>{{7, 1}, {12, 3}, {16, 4}})
      for (bool causal : {false, true}) {
        auto s = random_state(E, rng);
        for (auto& [name, t] : s)
          for (float& v : t.values()) v *= 0.3f;  // keep the softmax away from one-hot
        const tensor x = random_tensor({1, L, E}, rng);
        const auto m = attn::multihead_attention::from_state_dict(s, H, "random");
        EXPECT_EQ(m.head_dim(), E / H);
        attn::mha_options o;
        o.causal = causal;
        const tensor y = m.forward(x, x, x, o);
        const std::vector<double> want = naive_mha(s, x, H, causal);
        ASSERT_EQ(y.shape(), (shape_t{1, L, E}));
        for (int64_t i = 0; i < L * E; ++i)
          EXPECT_NEAR(y.values()[i], want[i], 1e-5 * (1.0 + std::fabs(want[i])))
              << "L " << L << " E " << E << " H " << H << " causal " << causal;
      }
}

// The layer spelled out with the public pieces, linear and sdpa, one projection at a time.
tensor composed_mha(const std::map<std::string, tensor>& s, const tensor& q_in, const tensor& k_in,
                    const tensor& v_in, int64_t H, bool causal) {
  const int64_t B = q_in.dim(0), L = q_in.dim(1), S = k_in.dim(1), E = q_in.dim(2), D = E / H;
  const tensor& w = s.at("in_proj_weight");
  const tensor& b = s.at("in_proj_bias");
  const auto project = [&](const tensor& x, int64_t p, int64_t n) {
    const tensor wp = w.slice(0, p * E, (p + 1) * E), bp = b.slice(0, p * E, (p + 1) * E);
    return attn::linear(x, wp, &bp).reshape({B, n, H, D}).transpose(1, 2);
  };
  attn::sdpa_options o;
  o.causal = causal;
  const tensor heads = attn::sdpa(project(q_in, 0, L), project(k_in, 1, S), project(v_in, 2, S), o);
  const tensor concat = heads.transpose(1, 2).contiguous().reshape({B, L, E});
  return attn::linear(concat, s.at("out_proj.weight"), &s.at("out_proj.bias"));
}

TEST(multihead_attention, packed_and_fused_projections_give_the_bits_of_linear_and_sdpa) {
  // Self-attention takes one product x·[Wq; Wk; Wv]ᵀ on weights packed when the layer is built;
  // a copy of x (another tensor) goes projection by projection. Both must give exactly the
  // bits of linear + sdpa + linear, on one thread and on two.
  std::mt19937 rng(21);
  const int threads = omp_get_max_threads();
  for (int64_t L : {1, 7, 63, 65, 129})
    // Head sizes 7 and 16: Q|K|V as rows; 32 and 64: written straight as heads.
    for (auto [E, H] : std::vector<std::pair<int64_t, int64_t>>{{7, 1}, {64, 4}, {96, 3}, {128, 2}})
      for (bool causal : {false, true}) {
        const int64_t B = L > 64 ? 1 : 2;
        const auto s = random_state(E, rng);
        const auto m = attn::multihead_attention::from_state_dict(s, H, "random");
        const tensor x = random_tensor({B, L, E}, rng);
        const tensor x_copy = x.clone();
        attn::mha_options o;
        o.causal = causal;
        const tensor want = composed_mha(s, x, x, x, H, causal);
        for (int t : {1, 2}) {
          omp_set_num_threads(t);
          const tensor fused = m.forward(x, x, x, o);
          const tensor separate = m.forward(x, x_copy, x_copy.contiguous(), o);
          omp_set_num_threads(threads);
          const auto same = [&](const tensor& got) {
            return std::equal(got.values().begin(), got.values().end(), want.values().begin());
          };
          EXPECT_TRUE(same(fused)) << "fused L " << L << " E " << E << " threads " << t;
          EXPECT_TRUE(same(separate)) << "separate L " << L << " E " << E << " threads " << t;
        }
      }
}

TEST(multihead_attention, cross_attention_with_kdim_and_vdim_matches_linear_and_sdpa) {
  // Separate q/k/v weights of other input sizes: each projection packed on its own.
  std::mt19937 rng(22);
  const int64_t B = 2, L = 9, S = 65, E = 64, H = 4, kdim = 33, vdim = 129;
  std::map<std::string, tensor> s;
  s["q_proj_weight"] = random_tensor({E, E}, rng);
  s["k_proj_weight"] = random_tensor({E, kdim}, rng);
  s["v_proj_weight"] = random_tensor({E, vdim}, rng);
  s["in_proj_bias"] = random_tensor({3 * E}, rng);
  s["out_proj.weight"] = random_tensor({E, E}, rng);
  s["out_proj.bias"] = random_tensor({E}, rng);
  for (auto& [name, t] : s)
    for (float& v : t.values()) v *= 0.2f;
  const auto m = attn::multihead_attention::from_state_dict(s, H, "random");
  const tensor q = random_tensor({B, L, E}, rng), k = random_tensor({B, S, kdim}, rng),
               v = random_tensor({B, S, vdim}, rng);
  const tensor& b = s.at("in_proj_bias");
  const auto project = [&](const tensor& x, const char* w, int64_t p, int64_t n) {
    const tensor bp = b.slice(0, p * E, (p + 1) * E);
    return attn::linear(x, s.at(w), &bp).reshape({B, n, H, E / H}).transpose(1, 2);
  };
  const tensor heads = attn::sdpa(project(q, "q_proj_weight", 0, L), project(k, "k_proj_weight", 1, S),
                                  project(v, "v_proj_weight", 2, S));
  const tensor want = attn::linear(heads.transpose(1, 2).contiguous().reshape({B, L, E}),
                                   s.at("out_proj.weight"), &s.at("out_proj.bias"));
  const tensor got = m.forward(q, k, v);
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_TRUE(std::equal(got.values().begin(), got.values().end(), want.values().begin()));
}

std::string input_error(const std::map<std::string, tensor>& s, int64_t heads) {
  try {
    attn::multihead_attention::from_state_dict(s, heads, "w.safetensors");
  } catch (const attn::error& e) {
    return std::string(e.what());
  }
  return "no error";
}

TEST(multihead_attention, state_dict_errors_name_the_tensor) {
  std::mt19937 rng(5);
  auto s = random_state(8, rng);
  EXPECT_EQ(input_error(s, 2), "no error");

  auto missing = s;
  missing.erase("out_proj.weight");
  EXPECT_NE(input_error(missing, 2).find("'out_proj.weight'"), std::string::npos);

  auto wrong = s;
  wrong["in_proj_weight"] = tensor({23, 8});
  EXPECT_NE(input_error(wrong, 2).find("in_proj_weight"), std::string::npos);

  auto half_bias = s;
  half_bias.erase("out_proj.bias");
  EXPECT_NE(input_error(half_bias, 2).find("all or none"), std::string::npos);

  EXPECT_NE(input_error(s, 3).find("not divisible by num_heads 3"), std::string::npos);
  EXPECT_NE(input_error(s, 0).find("num_heads must be positive"), std::string::npos);

  auto bias_kv = s;
  bias_kv["bias_k"] = tensor({1, 1, 8});
  EXPECT_NE(input_error(bias_kv, 2).find("add_bias_kv"), std::string::npos);
}

TEST(multihead_attention, forward_shape_errors_are_usage_errors) {
  std::mt19937 rng(9);
  const auto m = attn::multihead_attention::from_state_dict(random_state(8, rng), 2);
  const tensor x({2, 3, 8});
  const auto usage = [&](const tensor& q, const tensor& k, const tensor& v,
                         const attn::mha_options& o) {
    try {
      m.forward(q, k, v, o);
    } catch (const attn::error& e) {
      return e.kind() == attn::error_kind::usage;
    }
    return false;
  };
  EXPECT_TRUE(usage(tensor({2, 3, 7}), x, x, {}));
  EXPECT_TRUE(usage(x, tensor({1, 3, 8}), x, {}));
  EXPECT_TRUE(usage(x, x, tensor({2, 4, 8}), {}));
  const tensor bad_kpm({2, 4});
  attn::mha_options o;
  o.key_padding_mask = &bad_kpm;
  EXPECT_TRUE(usage(x, x, x, o));
  const tensor bad_mask({3, 4});
  attn::mha_options o2;
  o2.attn_mask = &bad_mask;
  EXPECT_TRUE(usage(x, x, x, o2));
}

}  // namespace
