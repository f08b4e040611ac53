// attn::cuda from the host: in a build without CUDA (CI's), every call but built() and
// available() is one usage error that says how to build it; in a CUDA build on a machine with a
// GPU, the host-tensor API against the float64 reference on awkward shapes (the device tests
// against PyTorch are tests/cuda/, run by scripts/gpu_check.sh). A CUDA build without a GPU skips.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <tuple>

#include "attn/cuda.hpp"
#include "attn/error.hpp"
#include "attn/mask.hpp"
#include "attn/multihead_attention.hpp"
#include "attn/sdpa.hpp"
#include "attn/sdpa_backward.hpp"

namespace {

using attn::tensor;

tensor random_tensor(const attn::shape_t& shape, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  tensor t(shape);
  for (float& x : t.values()) x = dist(rng);
  return t;
}

double norm_of(const tensor& t) {
  double sum = 0;
  const auto c = t.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) sum += std::pow(static_cast<double>(c.values()[i]), 2);
  return std::sqrt(sum);
}

// ||got - want|| / ||want||; with `floor`, over at least that: a gradient that is exactly 0 (dQ
// and dK where one key is seen) is met by rounding noise, not by an error of 1e140.
double relative_error(const tensor& got, const tensor& want, double floor = 0) {
  double diff = 0;
  const auto g = got.contiguous(), w = want.contiguous();
  for (int64_t i = 0; i < w.numel(); ++i) diff += std::pow(static_cast<double>(g.values()[i]) - w.values()[i], 2);
  return std::sqrt(diff) / std::max({norm_of(want), floor, 1e-300});
}

TEST(cuda, without_cuda_every_call_says_how_to_build_it) {
  if (attn::cuda::built()) GTEST_SKIP() << "a CUDA build";
  EXPECT_FALSE(attn::cuda::available());
  std::mt19937 rng(1);
  const tensor q = random_tensor({1, 1, 4, 8}, rng);
  try {
    attn::cuda::sdpa(q, q, q, {}, attn::cuda::precision::bf16);
    FAIL() << "no error";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
    EXPECT_NE(std::string(e.what()).find("-DATTN_CUDA=ON"), std::string::npos) << e.what();
  }
  EXPECT_THROW(attn::cuda::device_name(), attn::error);
  std::map<std::string, tensor> state{{"in_proj_weight", random_tensor({24, 8}, rng)},
                                      {"out_proj.weight", random_tensor({8, 8}, rng)}};
  const auto layer = attn::multihead_attention::from_state_dict(state, 2);
  const tensor x = random_tensor({1, 3, 8}, rng);
  EXPECT_THROW(attn::cuda::mha(layer, x, x, x, {}, attn::cuda::precision::bf16), attn::error);
  EXPECT_THROW(attn::cuda::time_sdpa(1, 1, 64, 64, false, attn::cuda::precision::bf16, 1, false), attn::error);
}

// What the GPU cannot take is a usage error before any device work (a CUDA build; no GPU needed).
TEST(cuda, limits_are_usage_errors) {
  if (!attn::cuda::built()) GTEST_SKIP() << "built without CUDA";
  const tensor wide({1, 1, 2, 257}), many({256, 256, 1, 4}), q({1, 2, 3, 8}), k({1, 2, 3, 8});
  for (auto [qq, kk, what] : {std::tuple{&wide, &wide, "head sizes above 256"}, std::tuple{&many, &many, "above 65535"}}) {
    try {
      attn::cuda::check_shapes(*qq, *kk, *kk, nullptr);
      FAIL() << what;
    } catch (const attn::error& e) {
      EXPECT_EQ(e.kind(), attn::error_kind::usage);
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(attn::cuda::check_shapes(q, k, k, nullptr));
  attn::sdpa_options reference;
  reference.kernel = attn::sdpa_kernel::reference;
  EXPECT_THROW(attn::cuda::sdpa(q, k, k, reference, attn::cuda::precision::bf16), attn::error);
  tensor huge({1, 2, 3, 8}, 70000.0f);  // past float16's largest value
  if (attn::cuda::available()) {
    EXPECT_THROW(attn::cuda::sdpa(huge, k, k, {}, attn::cuda::precision::float16), attn::error);
  }
}

struct cuda_case {
  int64_t B, H, Hkv, L, S, D, Dv;
  bool causal, mask;
};

class cuda_device : public ::testing::TestWithParam<cuda_case> {
 protected:
  void SetUp() override {
    if (!attn::cuda::available()) GTEST_SKIP() << "no CUDA build or no GPU here";
  }
};

// Both precisions against the float64 reference on the rounded inputs (ref::sdpa with dtype
// bf16 rounds them as the device does): float32 within float32's rounding, bf16 within bf16's.
TEST_P(cuda_device, forward_and_backward_against_float64) {
  const cuda_case c = GetParam();
  std::mt19937 rng(static_cast<unsigned>(c.L * 131 + c.S * 7 + c.D));
  const tensor q = random_tensor({c.B, c.H, c.L, c.D}, rng), k = random_tensor({c.B, c.Hkv, c.S, c.D}, rng),
               v = random_tensor({c.B, c.Hkv, c.S, c.Dv}, rng), go = random_tensor({c.B, c.H, c.L, c.Dv}, rng);
  tensor mask;
  attn::sdpa_options options;
  options.causal = c.causal;
  if (c.mask) {
    mask = random_tensor({c.L, c.S}, rng);
    options.attn_mask = &mask;
  }
  for (auto p : {attn::cuda::precision::float32, attn::cuda::precision::bf16}) {
    const bool bf16 = p == attn::cuda::precision::bf16;
    attn::sdpa_options ref_options = options;
    ref_options.dtype = bf16 ? attn::sdpa_dtype::bf16 : attn::sdpa_dtype::float32;
    const tensor qr = bf16 ? attn::round_to_bf16(q) : q, kr = bf16 ? attn::round_to_bf16(k) : k,
                 vr = bf16 ? attn::round_to_bf16(v) : v, gor = bf16 ? attn::round_to_bf16(go) : go;
    tensor lse;
    const tensor o = attn::cuda::sdpa(q, k, v, options, p, &lse);
    const tensor want = attn::ref::sdpa(qr, kr, vr, ref_options);
    EXPECT_LT(relative_error(o, want), bf16 ? 1e-2 : 1e-6) << attn::cuda::precision_name(p);
    const attn::sdpa_gradients g = attn::cuda::sdpa_backward(q, k, v, o, lse, go, options, p);
    attn::sdpa_options exact = options;  // the reference's gradients on the rounded inputs
    const attn::sdpa_gradients w = attn::ref::sdpa_backward(qr, kr, vr, gor, exact);
    const double floor = 1e-3 * norm_of(gor);  // the gradients' size where they are not 0 (as tests/cuda/ does)
    EXPECT_LT(relative_error(g.dq, w.dq, floor), bf16 ? 3e-2 : 1e-5) << "dq " << attn::cuda::precision_name(p);
    EXPECT_LT(relative_error(g.dk, w.dk, floor), bf16 ? 3e-2 : 1e-5) << "dk " << attn::cuda::precision_name(p);
    EXPECT_LT(relative_error(g.dv, w.dv, floor), bf16 ? 3e-2 : 1e-5) << "dv " << attn::cuda::precision_name(p);
  }
}

INSTANTIATE_TEST_SUITE_P(shapes, cuda_device,
                         ::testing::Values(cuda_case{1, 1, 1, 1, 1, 64, 64, false, false},
                                           cuda_case{1, 2, 2, 7, 7, 64, 64, true, false},
                                           cuda_case{2, 4, 2, 63, 65, 128, 128, true, true},
                                           cuda_case{1, 2, 1, 129, 65, 32, 32, false, true},
                                           cuda_case{1, 1, 1, 65, 129, 7, 5, true, false}));

// The layer on the GPU against the same layer on the CPU (float32 projections both; the
// attention float32 or bf16 on the GPU, float32 on the CPU): self-attention with a packed
// in_proj, cross-attention with kdim and vdim of their own, head sizes on the tensor cores (32,
// 128) and off them (7), a key padding mask, a per-head or shared attention mask, both, causal.
struct mha_case {
  int64_t B, L, S, E, H, kdim, vdim;
  bool causal, padding, per_head_mask, bias;
  bool shared_mask = false;  // one attn_mask [L, S] for every batch and head
};

class cuda_mha : public ::testing::TestWithParam<mha_case> {
 protected:
  void SetUp() override {
    if (!attn::cuda::available()) GTEST_SKIP() << "no CUDA build or no GPU here";
  }
};

TEST_P(cuda_mha, matches_the_cpu_layer) {
  const mha_case c = GetParam();
  std::mt19937 rng(static_cast<unsigned>(c.L * 31 + c.E));
  const auto scaled = [&](const attn::shape_t& shape, float by) {
    tensor t = random_tensor(shape, rng);
    for (float& x : t.values()) x *= by;
    return t;
  };
  std::map<std::string, tensor> state;
  const bool packed = c.kdim == c.E && c.vdim == c.E;
  if (packed) {
    state["in_proj_weight"] = scaled({3 * c.E, c.E}, 0.3f);
  } else {
    state["q_proj_weight"] = scaled({c.E, c.E}, 0.3f);
    state["k_proj_weight"] = scaled({c.E, c.kdim}, 0.3f);
    state["v_proj_weight"] = scaled({c.E, c.vdim}, 0.3f);
  }
  state["out_proj.weight"] = scaled({c.E, c.E}, 0.3f);
  if (c.bias) {
    state["in_proj_bias"] = scaled({3 * c.E}, 0.3f);
    state["out_proj.bias"] = scaled({c.E}, 0.3f);
  }
  const auto layer = attn::multihead_attention::from_state_dict(state, c.H);
  const tensor query = random_tensor({c.B, c.L, c.E}, rng);
  const tensor key = packed ? query : random_tensor({c.B, c.S, c.kdim}, rng);
  const tensor value = packed ? query : random_tensor({c.B, c.S, c.vdim}, rng);
  const int64_t S = packed ? c.L : c.S;
  tensor padding({c.B, S}, 0.0f), mask;
  padding.values()[static_cast<size_t>(S - 1)] = -INFINITY;  // batch 0 never sees its last key
  if (c.per_head_mask) mask = scaled({c.B * c.H, c.L, S}, 0.5f);
  if (c.shared_mask) mask = scaled({c.L, S}, 0.5f);
  attn::mha_options options;
  options.causal = c.causal;
  if (c.padding) options.key_padding_mask = &padding;
  if (c.per_head_mask || c.shared_mask) options.attn_mask = &mask;
  const tensor want = layer.forward(query, key, value, options);
  for (auto p : {attn::cuda::precision::float32, attn::cuda::precision::bf16}) {
    const tensor got = attn::cuda::mha(layer, query, key, value, options, p);
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_LT(relative_error(got, want), p == attn::cuda::precision::bf16 ? 2e-2 : 1e-5)
        << attn::cuda::precision_name(p);
  }
}

// float16 holds ±65504: projections past it would turn to inf in the heads, so they are a usage
// error naming the projection (bf16 takes them).
TEST(cuda_mha_range, float16_refuses_projections_past_its_range) {
  if (!attn::cuda::available()) GTEST_SKIP() << "no CUDA build or no GPU here";
  std::mt19937 rng(5);
  std::map<std::string, tensor> state{{"in_proj_weight", random_tensor({24, 8}, rng)},
                                      {"out_proj.weight", random_tensor({8, 8}, rng)}};
  for (float& x : state["in_proj_weight"].values()) x *= 1e5f;
  const auto layer = attn::multihead_attention::from_state_dict(state, 2);
  const tensor x = random_tensor({1, 5, 8}, rng);
  try {
    attn::cuda::mha(layer, x, x, x, {}, attn::cuda::precision::float16);
    FAIL() << "no error";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
    EXPECT_NE(std::string(e.what()).find("past float16's largest value"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(attn::cuda::mha(layer, x, x, x, {}, attn::cuda::precision::bf16));
}

INSTANTIATE_TEST_SUITE_P(layers, cuda_mha,
                         ::testing::Values(mha_case{2, 65, 65, 64, 2, 64, 64, false, true, false, true},
                                           mha_case{1, 33, 47, 96, 3, 40, 24, true, false, true, false},
                                           mha_case{2, 7, 130, 21, 3, 20, 21, false, true, true, true},
                                           mha_case{1, 129, 129, 256, 2, 256, 256, true, false, false, true, true}));

}  // namespace
