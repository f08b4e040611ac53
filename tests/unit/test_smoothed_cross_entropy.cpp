// Label-smoothed cross-entropy: the float path (float exponentials, rows among the threads) held
// to the double path on awkward shapes, its bits the same on one thread as on two, and ε = 0 the
// plain cross-entropy; the gradient written over the logits (the translator's) equals it written
// apart.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "nn/smoothed_cross_entropy.hpp"

namespace {

using attn::nn::smoothed_cross_entropy_backward;
using attn::nn::smoothed_cross_entropy_forward;

TEST(smoothed_cross_entropy, float_path_against_the_double_path_on_awkward_shapes) {
  std::mt19937 rng(51);
  std::normal_distribution<double> normal(0.0, 3.0);
  for (int64_t rows : {1, 3, 65})
    for (int64_t classes : {1, 7, 63, 129, 8000})
      for (double smoothing : {0.0, 0.1}) {
        std::vector<double> zd(static_cast<size_t>(rows * classes));
        for (double& z : zd) z = static_cast<float>(normal(rng));  // values a float holds exactly
        std::vector<float> zf(zd.begin(), zd.end());
        std::vector<int64_t> targets(static_cast<size_t>(rows));
        for (int64_t& t : targets) t = std::uniform_int_distribution<int64_t>(0, classes - 1)(rng);
        std::vector<double> lse_d(static_cast<size_t>(rows)), dd(zd.size());
        std::vector<float> lse_f(static_cast<size_t>(rows)), df(zf.size());
        const double loss_d = smoothed_cross_entropy_forward(zd.data(), targets.data(), rows, classes, smoothing, lse_d.data());
        const float loss_f = smoothed_cross_entropy_forward(zf.data(), targets.data(), rows, classes, smoothing, lse_f.data());
        EXPECT_NEAR(loss_f, loss_d, 2e-6 * (1 + std::fabs(loss_d))) << rows << "x" << classes;
        for (int64_t r = 0; r < rows; ++r)
          EXPECT_NEAR(lse_f[static_cast<size_t>(r)], lse_d[static_cast<size_t>(r)], 2e-6 * (1 + std::fabs(lse_d[static_cast<size_t>(r)])));
        smoothed_cross_entropy_backward(zd.data(), targets.data(), lse_d.data(), dd.data(), rows, classes, smoothing);
        smoothed_cross_entropy_backward(zf.data(), targets.data(), lse_f.data(), df.data(), rows, classes, smoothing);
        for (size_t i = 0; i < dd.size(); ++i) ASSERT_NEAR(df[i], dd[i], 1e-6 / static_cast<double>(rows)) << i;
        if (smoothing == 0.0 && rows == 1) {  // plain cross-entropy: lse − z_target
          EXPECT_NEAR(loss_d, lse_d[0] - zd[static_cast<size_t>(targets[0])], 1e-12);
        }
      }
}

TEST(smoothed_cross_entropy, the_same_bits_on_one_thread_as_on_two) {
  std::mt19937 rng(52);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int64_t rows = 37, classes = 3001;
  std::vector<float> z(static_cast<size_t>(rows * classes));
  for (float& v : z) v = normal(rng);
  std::vector<int64_t> targets(static_cast<size_t>(rows));
  for (int64_t& t : targets) t = std::uniform_int_distribution<int64_t>(0, classes - 1)(rng);
  const auto run = [&](int threads, std::vector<float>& lse, std::vector<float>& d) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    lse.assign(static_cast<size_t>(rows), 0.0f);
    d.assign(z.size(), 0.0f);
    const float loss = smoothed_cross_entropy_forward(z.data(), targets.data(), rows, classes, 0.1, lse.data());
    smoothed_cross_entropy_backward(z.data(), targets.data(), lse.data(), d.data(), rows, classes, 0.1);
    omp_set_num_threads(before);
    return loss;
  };
  std::vector<float> lse1, d1, lse2, d2;
  EXPECT_EQ(run(1, lse1, d1), run(2, lse2, d2));
  EXPECT_EQ(lse1, lse2);
  EXPECT_EQ(d1, d2);
}

TEST(smoothed_cross_entropy, the_gradient_written_over_the_logits_has_the_bits_of_one_written_apart) {
  std::mt19937 rng(53);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int64_t classes : {1, 7, 65, 8000}) {
    const int64_t rows = 33;
    std::vector<float> z(static_cast<size_t>(rows * classes)), lse(static_cast<size_t>(rows));
    for (float& v : z) v = normal(rng);
    std::vector<int64_t> targets(static_cast<size_t>(rows));
    for (int64_t& t : targets) t = std::uniform_int_distribution<int64_t>(0, classes - 1)(rng);
    smoothed_cross_entropy_forward(z.data(), targets.data(), rows, classes, 0.1, lse.data());
    std::vector<float> apart(z.size());
    smoothed_cross_entropy_backward(z.data(), targets.data(), lse.data(), apart.data(), rows, classes, 0.1);
    smoothed_cross_entropy_backward(z.data(), targets.data(), lse.data(), z.data(), rows, classes, 0.1);
    EXPECT_EQ(z, apart) << classes;
  }
}

}  // namespace
