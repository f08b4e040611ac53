// Shapes a tensor refuses, whatever their element count: sizes come from files, and a shape whose
// strides do not fit in int64 must be an error, not an overflow (found by fuzz_npy).
#include <gtest/gtest.h>

#include <cstdint>

#include "attn/error.hpp"
#include "attn/tensor.hpp"

namespace {

using attn::shape_t;
using attn::tensor;

constexpr int64_t two_to_32 = int64_t{1} << 32;

void expect_usage_error(const shape_t& shape) {
  try {
    tensor t(shape);
    FAIL() << attn::shape_to_string(shape) << " was accepted";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage) << e.what();
  }
  try {
    const tensor t = tensor::uninitialized(shape);
    FAIL() << attn::shape_to_string(shape) << " was accepted by uninitialized";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage) << e.what();
  }
}

TEST(tensor_shapes, strides_that_overflow_are_refused_even_with_no_elements) {
  expect_usage_error({0, two_to_32, two_to_32});
  expect_usage_error({two_to_32, two_to_32});
  expect_usage_error({3, -1});
}

TEST(tensor_shapes, empty_shapes_whose_strides_fit_are_fine) {
  const tensor t({0, two_to_32, 4});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.strides(), (shape_t{two_to_32 * 4, 4, 1}));
  const tensor u({5, 0, 3});
  EXPECT_EQ(u.strides(), (shape_t{0, 3, 1}));
  // A 0 before the large dimensions: every stride is 0 or small.
  const tensor v({two_to_32, 0, two_to_32, 2});
  EXPECT_EQ(v.strides(), (shape_t{0, two_to_32 * 2, 2, 1}));
}

// torch.empty's counterpart: the filled constructor's shape and strides, storage of its own.
TEST(tensor_shapes, uninitialized_tensors_are_dense_and_writable) {
  tensor t = tensor::uninitialized({3, 5, 7});
  EXPECT_EQ(t.shape(), (shape_t{3, 5, 7}));
  EXPECT_EQ(t.strides(), (shape_t{35, 7, 1}));
  EXPECT_TRUE(t.is_contiguous());
  ASSERT_EQ(t.values().size(), 105u);
  for (size_t i = 0; i < 105; ++i) t.values()[i] = static_cast<float>(i);
  EXPECT_EQ(t.at({2, 4, 6}), 104.0f);
  const tensor copy = t;  // copies share storage, as every tensor's do
  t.at({0, 0, 0}) = -1.0f;
  EXPECT_EQ(copy.at({0, 0, 0}), -1.0f);
  const tensor none = tensor::uninitialized({4, 0});
  EXPECT_EQ(none.numel(), 0);
  EXPECT_FALSE(none.empty());
}

}  // namespace
