// The worked examples of the notes in ../shared/seeds/, recomputed by attn. Where a note's
// arithmetic is wrong, the test holds the true value and the comment says what the note printed.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "attn/linear.hpp"
#include "attn/multihead_attention.hpp"
#include "attn/scale.hpp"
#include "attn/self_attention.hpp"
#include "attn/tensor.hpp"

namespace {

using attn::tensor;

// Seed 000: Money, Bank, Grows, River, Flows as 3-d embeddings.
tensor seed000_embeddings() {
  return tensor({5, 3}, std::vector<float>{0.1f, 0.2f, 0.3f,    // Money
                                           0.4f, 0.5f, 0.6f,    // Bank
                                           0.7f, 0.8f, 0.9f,    // Grows
                                           0.2f, 0.1f, 0.4f,    // River
                                           0.5f, 0.3f, 0.2f});  // Flows
}

void expect_row(const tensor& m, int64_t row, const std::vector<double>& want, double tol) {
  ASSERT_EQ(m.shape().back(), static_cast<int64_t>(want.size()));
  for (size_t j = 0; j < want.size(); ++j)
    EXPECT_NEAR(m.at({row, static_cast<int64_t>(j)}), want[j], tol) << "row " << row << " col " << j;
}

TEST(seed_000, scores_are_e_times_e_transposed) {
  // The note prints S rounded to two decimals; every entry agrees.
  const auto steps = attn::self_attention(seed000_embeddings(), attn::scale_spec::parse("none"));
  const std::vector<std::vector<double>> printed = {{0.14, 0.32, 0.50, 0.16, 0.17},
                                                    {0.32, 0.77, 1.22, 0.37, 0.47},
                                                    {0.50, 1.22, 1.94, 0.58, 0.77},
                                                    {0.16, 0.37, 0.58, 0.21, 0.21},
                                                    {0.17, 0.47, 0.77, 0.21, 0.38}};
  for (int64_t i = 0; i < 5; ++i) expect_row(steps.scores, i, printed[i], 0.005 + 1e-6);
  EXPECT_NEAR(steps.scores.at({2, 2}), 1.94, 1e-6);  // 0.49 + 0.64 + 0.81
  EXPECT_DOUBLE_EQ(steps.scale, 1.0);
}

TEST(seed_000, softmax_of_row_one_and_its_context_vector) {
  const auto steps = attn::self_attention(seed000_embeddings(), attn::scale_spec::parse("none"));
  // True softmax of [0.14, 0.32, 0.50, 0.16, 0.17]. The note prints 0.1761 and 0.2522 for the
  // first and third weights; to four places they are 0.1760 and 0.2523.
  expect_row(steps.weights, 0, {0.176019, 0.210733, 0.252293, 0.179575, 0.181380}, 2e-6);
  expect_row(steps.weights, 0, {0.1761, 0.2107, 0.2522, 0.1796, 0.1814}, 1.5e-4);  // the note
  // The note's C1 = [0.40505, 0.41471, 0.51435] comes from its rounded weights; the weights
  // above give [0.405105, 0.414776, 0.514415].
  expect_row(steps.context, 0, {0.405105, 0.414776, 0.514415}, 2e-6);
  expect_row(steps.context, 0, {0.40505, 0.41471, 0.51435}, 1e-4);  // the note, to its precision
  for (int64_t i = 0; i < 5; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < 5; ++j) sum += steps.weights.at({i, j});
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
}

TEST(seed_000, query_key_value_for_bank) {
  // Q = E_bank · W_q with the note's row-major W (input dimension on the rows). attn::linear
  // follows PyTorch (weight [out, in], y = x·Wᵀ + b), so the note's W goes in transposed.
  const tensor bank({1, 3}, std::vector<float>{0.4f, 0.5f, 0.6f});
  const tensor wq({3, 3}, std::vector<float>{0.3f, 0.6f, 0.9f, 0.1f, 0.4f, 0.7f, 0.2f, 0.5f, 0.8f});
  const tensor wk({3, 3}, std::vector<float>{0.5f, 0.2f, 0.1f, 0.4f, 0.3f, 0.6f, 0.7f, 0.8f, 0.9f});
  const tensor wv({3, 3}, std::vector<float>{0.6f, 0.1f, 0.4f, 0.3f, 0.5f, 0.2f, 0.8f, 0.7f, 0.9f});
  // The note prints Q = [0.32, 0.59, 0.86]; the product is [0.29, 0.74, 1.19]
  // (0.4·0.3 + 0.5·0.1 + 0.6·0.2 = 0.29).
  expect_row(attn::linear(bank, wq.transpose(0, 1).contiguous()), 0, {0.29, 0.74, 1.19}, 1e-6);
  // The note prints K = [0.62, 0.71, 0.88]; the first entry is 0.2 + 0.2 + 0.42 = 0.82.
  expect_row(attn::linear(bank, wk.transpose(0, 1).contiguous()), 0, {0.82, 0.71, 0.88}, 1e-6);
  // The note prints V = [0.74, 0.67, 0.88]; the product is [0.87, 0.71, 0.80].
  expect_row(attn::linear(bank, wv.transpose(0, 1).contiguous()), 0, {0.87, 0.71, 0.80}, 1e-6);
  // A bias is added after the product: Q = E·W_q + b_q.
  const tensor bq({3}, std::vector<float>{0.01f, -0.74f, 1.0f});
  expect_row(attn::linear(bank, wq.transpose(0, 1).contiguous(), &bq), 0, {0.30, 0.0, 2.19}, 1e-6);
}

TEST(seed_001, dot_products_of_it_with_three_keys) {
  // Q(it) · K for "The", "animal", "tired": one row of Q·Kᵀ, i.e. a linear layer whose weight
  // rows are the keys.
  const tensor q_it({1, 3}, std::vector<float>{0.6f, 0.5f, 0.4f});
  const tensor keys({3, 3}, std::vector<float>{0.2f, 0.1f, 0.0f,    // The
                                               0.6f, 0.5f, 0.4f,    // animal
                                               0.9f, 0.8f, 0.7f});  // tired
  expect_row(attn::linear(q_it, keys), 0, {0.17, 0.77, 1.22}, 1e-6);
}

TEST(seed_002, scaled_similarities_of_apple) {
  // apple = [5, 2, 0], phone = [0, 5, 0], divided by √3.
  const tensor e({2, 3}, std::vector<float>{5, 2, 0, 0, 5, 0});
  const auto steps = attn::self_attention(e, attn::scale_spec::parse("sqrt"));
  EXPECT_NEAR(steps.scaled.at({0, 0}), 16.74, 0.005);  // 29 / √3 = 16.743
  EXPECT_NEAR(steps.scaled.at({0, 1}), 5.77, 0.005);   // 10 / √3 = 5.774
  EXPECT_NEAR(steps.scale, 1.0 / std::sqrt(3.0), 1e-12);
}

TEST(seed_004, the_cat_sat_with_identity_weights) {
  // E: The = [1 0 1 0], cat = [0 1 0 1], sat = [1 1 1 1]; W_Q = W_K = W_V = I, scale 1/√4.
  // Run through multi-head attention (one head, identity projections and output, no bias) so
  // the whole projected path is exercised.
  std::vector<float> eye(16, 0.0f), in_proj(48, 0.0f);
  for (int i = 0; i < 4; ++i) eye[i * 4 + i] = 1.0f;
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < 4; ++i) in_proj[(p * 4 + i) * 4 + i] = 1.0f;
  std::map<std::string, tensor> state;
  state["in_proj_weight"] = tensor({12, 4}, in_proj);
  state["out_proj.weight"] = tensor({4, 4}, eye);
  const auto mha = attn::multihead_attention::from_state_dict(state, 1, "seed 004");
  const tensor e({1, 3, 4}, std::vector<float>{1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 1, 1});
  tensor weights;
  const tensor out = mha.forward(e, e, e, {}, &weights);
  // Scores /2 for "The": [1, 0, 1] → weights [0.42232, 0.15536, 0.42232].
  EXPECT_NEAR(weights.at({0, 0, 0, 0}), 0.4223188, 1e-6);
  EXPECT_NEAR(weights.at({0, 0, 0, 1}), 0.1553624, 1e-6);
  EXPECT_NEAR(weights.at({0, 0, 0, 2}), 0.4223188, 1e-6);
  // The note says "The" becomes [1.2669, 0.9999, 1.2669, 0.9999]. Those weights sum the values
  // to [0.84464, 0.57768, 0.84464, 0.57768]: a convex mix of 0/1 vectors cannot exceed 1.
  const std::vector<double> the = {0.8446376, 0.5776812, 0.8446376, 0.5776812};
  const std::vector<double> cat = {0.5776812, 0.8446376, 0.5776812, 0.8446376};
  const std::vector<double> sat = {0.7880584, 0.7880584, 0.7880584, 0.7880584};
  for (int64_t j = 0; j < 4; ++j) {
    EXPECT_NEAR(out.at({0, 0, j}), the[j], 1e-6);
    EXPECT_NEAR(out.at({0, 1, j}), cat[j], 1e-6);
    EXPECT_NEAR(out.at({0, 2, j}), sat[j], 1e-6);
  }
}

TEST(seed_004, softmax_of_unscaled_scores_six_and_four) {
  // Q = [2 3 4 1] against K1 = [1 0 1 0], K2 = [0 1 0 1]: scores [6, 4], softmax [0.88, 0.12].
  const tensor scores({1, 2}, std::vector<float>{6, 4});
  const tensor p = attn::softmax_rows(scores);
  EXPECT_NEAR(p.at({0, 0}), 0.8807971, 1e-6);
  EXPECT_NEAR(p.at({0, 1}), 0.1192029, 1e-6);
}

}  // namespace
