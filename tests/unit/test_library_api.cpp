// The library-facing additions of issue 6: tensors viewing the caller's memory without a copy,
// and multi-head attention loaded straight from a safetensors file.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/multihead_attention.hpp"
#include "attn/safetensors.hpp"
#include "attn/sdpa.hpp"
#include "attn/tensor.hpp"

namespace {

using attn::shape_t;
using attn::tensor;

TEST(tensor_view, reads_and_writes_the_callers_memory_without_a_copy) {
  std::vector<float> memory = {1, 2, 3, 4, 5, 6};
  tensor t = tensor::view(memory.data(), {2, 3});
  EXPECT_EQ(t.data(), memory.data());
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_FALSE(t.empty());
  EXPECT_EQ(t.at({1, 2}), 6.0f);
  memory[4] = 50.0f;
  EXPECT_EQ(t.at({1, 1}), 50.0f);
  t.at({0, 0}) = -1.0f;
  EXPECT_EQ(memory[0], -1.0f);
  // Views of the view still point into the caller's memory; clone() copies out of it.
  const tensor column = t.transpose(0, 1).slice(0, 1, 2);
  EXPECT_EQ(column.at({0, 1}), 50.0f);
  const tensor copy = t.clone();
  memory[0] = 7.0f;
  EXPECT_EQ(copy.at({0, 0}), -1.0f);
}

TEST(tensor_view, const_memory_and_zero_elements) {
  const std::vector<float> memory = {1, 2, 3, 4};
  const tensor t = tensor::view(memory.data(), {4});
  EXPECT_EQ(t.data(), memory.data());
  const tensor none = tensor::view(static_cast<const float*>(nullptr), {0, 3});
  EXPECT_FALSE(none.empty());
  EXPECT_EQ(none.numel(), 0);
  EXPECT_THROW(tensor::view(static_cast<float*>(nullptr), {2}), attn::error);
}

TEST(tensor_view, sdpa_on_views_equals_sdpa_on_owned_tensors) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> q(2 * 3 * 5 * 4), kv(2 * 3 * 7 * 4);
  for (float& x : q) x = normal(rng);
  for (float& x : kv) x = normal(rng);
  const tensor out_view =
      attn::sdpa(tensor::view(q.data(), {2, 3, 5, 4}), tensor::view(kv.data(), {2, 3, 7, 4}),
                 tensor::view(kv.data(), {2, 3, 7, 4}));
  const tensor out_owned =
      attn::sdpa(tensor({2, 3, 5, 4}, q), tensor({2, 3, 7, 4}, kv), tensor({2, 3, 7, 4}, kv));
  ASSERT_EQ(out_view.shape(), out_owned.shape());
  for (int64_t i = 0; i < out_view.numel(); ++i)
    ASSERT_EQ(out_view.data()[i], out_owned.data()[i]) << i;
}

// A temporary file removed when the test ends.
struct temp_file {
  std::filesystem::path path;
  explicit temp_file(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             (name + "-" + std::to_string(std::random_device{}()))) {}
  ~temp_file() { std::filesystem::remove(path); }
};

TEST(multihead_attention_load, equals_from_state_dict_and_names_the_file_on_errors) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  const auto random = [&](const shape_t& shape) {
    tensor t(shape);
    for (float& x : t.values()) x = normal(rng);
    return t;
  };
  const int64_t E = 8, H = 2;
  attn::safetensors_file file;
  file.tensors = {{"in_proj_weight", random({3 * E, E})},
                  {"in_proj_bias", random({3 * E})},
                  {"out_proj.weight", random({E, E})},
                  {"out_proj.bias", random({E})}};
  temp_file weights("attn-mha.safetensors");
  std::ofstream(weights.path, std::ios::binary) << attn::encode_safetensors(file);

  const auto loaded = attn::MultiheadAttention::load(weights.path.string(), H);
  const auto direct = attn::multihead_attention::from_state_dict(file.tensors, H);
  EXPECT_EQ(loaded.embed_dim(), E);
  EXPECT_EQ(loaded.num_heads(), H);
  const tensor x = random({2, 3, E});
  const tensor a = loaded.forward(x, x, x), b = direct.forward(x, x, x);
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data()[i], b.data()[i]) << i;

  file.tensors.erase("out_proj.weight");
  std::ofstream(weights.path, std::ios::binary | std::ios::trunc) << attn::encode_safetensors(file);
  try {
    attn::MultiheadAttention::load(weights.path.string(), H);
    FAIL() << "a missing tensor must throw";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::input);
    EXPECT_EQ(e.file(), weights.path.string());
    EXPECT_NE(e.problem().find("out_proj.weight"), std::string::npos) << e.what();
  }
}

}  // namespace
