// The log-sum-exp merge against a softmax over all the keys at once, in double.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "distributed/block_merge.hpp"

namespace attn::dist {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// One row's attention over `scores` and values [S, Dv] (double): the output and its lse.
std::vector<double> attend(const std::vector<double>& scores, const std::vector<double>& values,
                           int64_t Dv, double& lse) {
  double m = -inf;
  for (double s : scores) m = std::max(m, s);
  std::vector<double> out(static_cast<size_t>(Dv), 0.0);
  if (m == -inf) {
    lse = -inf;
    return out;
  }
  double sum = 0;
  for (size_t j = 0; j < scores.size(); ++j) {
    const double p = std::exp(scores[j] - m);
    sum += p;
    for (int64_t d = 0; d < Dv; ++d) out[static_cast<size_t>(d)] += p * values[j * Dv + d];
  }
  for (double& x : out) x /= sum;
  lse = m + std::log(sum);
  return out;
}

// A one-row block's output and lse as the kernel would hand them over (float32).
void add_block(block_merge& merged, const std::vector<double>& scores,
               const std::vector<double>& values, int64_t Dv) {
  double lse = 0;
  const std::vector<double> o = attend(scores, values, Dv, lse);
  tensor o_b({1, 1, 1, Dv}), lse_b({1, 1, 1});
  for (int64_t d = 0; d < Dv; ++d) o_b.data()[d] = static_cast<float>(o[static_cast<size_t>(d)]);
  lse_b.data()[0] = static_cast<float>(lse);
  merged.add(o_b, lse_b, 0);
}

TEST(block_merge, three_blocks_equal_one_softmax) {
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0.0, 3.0);
  const int64_t Dv = 7;
  std::vector<double> scores(30), values(30 * Dv);
  for (double& s : scores) s = normal(rng);
  for (double& v : values) v = normal(rng);
  block_merge merged(1, 1, 1, Dv);
  for (int64_t b = 0; b < 3; ++b)  // keys [0,10), [10,20), [20,30)
    add_block(merged, std::vector<double>(scores.begin() + b * 10, scores.begin() + (b + 1) * 10),
              std::vector<double>(values.begin() + b * 10 * Dv, values.begin() + (b + 1) * 10 * Dv),
              Dv);
  double lse = 0;
  const std::vector<double> want = attend(scores, values, Dv, lse);
  const tensor got = merged.output();
  // Each block's output and lse are rounded to float32 once: a few float32 ulps of the values.
  for (int64_t d = 0; d < Dv; ++d)
    EXPECT_NEAR(got.data()[d], want[static_cast<size_t>(d)],
                1e-5 * std::abs(want[static_cast<size_t>(d)]) + 1e-6)
        << "element " << d;
}

TEST(block_merge, a_fully_masked_block_adds_nothing) {
  const int64_t Dv = 3;
  const std::vector<double> values = {1, 2, 3, 4, 5, 6};
  block_merge alone(1, 1, 1, Dv), with_masked(1, 1, 1, Dv);
  add_block(alone, {0.5, -1.0}, values, Dv);
  add_block(with_masked, {-inf, -inf}, values, Dv);
  add_block(with_masked, {0.5, -1.0}, values, Dv);
  add_block(with_masked, {-inf, -inf}, values, Dv);
  const tensor a = alone.output(), b = with_masked.output();
  for (int64_t d = 0; d < Dv; ++d) EXPECT_EQ(a.data()[d], b.data()[d]);
}

TEST(block_merge, a_row_no_key_reaches_stays_zero) {
  const int64_t Dv = 4;
  block_merge merged(1, 1, 1, Dv);
  add_block(merged, {-inf}, {1, 2, 3, 4}, Dv);
  add_block(merged, {-inf, -inf}, {1, 2, 3, 4, 5, 6, 7, 8}, Dv);
  const tensor out = merged.output();
  for (int64_t d = 0; d < Dv; ++d) EXPECT_EQ(out.data()[d], 0.0f);
}

}  // namespace
}  // namespace attn::dist
