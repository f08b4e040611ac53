// The fused tied output (nn/fused_output.hpp): its loss and three gradients against a direct
// double computation (logits, log-sum-exp, softmax − onehot, the three products as plain
// loops), on row counts and vocabularies that straddle its blocks and the kernels' tiles; the
// same bits on one thread, two or three, and from one run to the next.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "nn/fused_output.hpp"

namespace {

struct expected {
  double loss = 0;
  std::vector<double> dhidden, dtable, dbias;
};

expected reference(const std::vector<float>& h, const std::vector<float>& t, const std::vector<float>& bias,
                   const std::vector<int64_t>& targets, int64_t rows, int64_t width, int64_t classes) {
  expected e;
  e.dhidden.assign(static_cast<size_t>(rows * width), 0.0);
  e.dtable.assign(static_cast<size_t>(classes * width), 0.0);
  e.dbias.assign(static_cast<size_t>(classes), 0.0);
  std::vector<double> z(static_cast<size_t>(classes));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < classes; ++c) {
      double s = bias[static_cast<size_t>(c)];
      for (int64_t k = 0; k < width; ++k) s += static_cast<double>(h[r * width + k]) * t[c * width + k];
      z[static_cast<size_t>(c)] = s;
    }
    const double top = *std::max_element(z.begin(), z.end());
    double sum = 0;
    for (double x : z) sum += std::exp(x - top);
    const double lse = top + std::log(sum);
    e.loss += (lse - z[static_cast<size_t>(targets[r])]) / static_cast<double>(rows);
    for (int64_t c = 0; c < classes; ++c) {
      const double d = (std::exp(z[c] - lse) - (c == targets[r] ? 1.0 : 0.0)) / static_cast<double>(rows);
      e.dbias[c] += d;
      for (int64_t k = 0; k < width; ++k) {
        e.dhidden[r * width + k] += d * t[c * width + k];
        e.dtable[c * width + k] += d * h[r * width + k];
      }
    }
  }
  return e;
}

// ‖got − want‖ / ‖want‖
double relative_l2(const std::vector<float>& got, const std::vector<double>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

TEST(fused_output, loss_and_gradients_match_the_double_computation) {
  struct shape { int64_t rows, width, classes; };
  // 1 row; fewer rows than a block; blocks of 16–256 rows with ragged ends; one product small
  // enough for one thread and others shared among threads; vocabularies off the 16-wide tiles.
  for (const auto& [rows, width, classes] :
       {shape{1, 5, 7}, shape{7, 63, 65}, shape{129, 20, 1000}, shape{300, 100, 3001}, shape{65, 129, 63},
        shape{513, 32, 4097}}) {
    std::mt19937 rng(static_cast<unsigned>(rows * 31 + classes));
    std::normal_distribution<float> normal(0.0f, 0.5f);
    std::vector<float> h(static_cast<size_t>(rows * width)), t(static_cast<size_t>(classes * width)),
        bias(static_cast<size_t>(classes));
    for (float& x : h) x = normal(rng);
    for (float& x : t) x = normal(rng);
    for (float& x : bias) x = normal(rng);
    std::vector<int64_t> targets(static_cast<size_t>(rows));
    std::uniform_int_distribution<int64_t> id(0, classes - 1);
    for (int64_t& y : targets) y = id(rng);
    const expected want = reference(h, t, bias, targets, rows, width, classes);

    std::vector<float> one_thread;  // loss, dhidden, dtable, dbias on one thread
    for (int threads : {1, 2, 3}) {
      const int before = omp_get_max_threads();
      omp_set_num_threads(threads);
      std::vector<float> dh(h.size(), 7.0f), dt(t.size(), 7.0f), db(bias.size(), 0.0f);  // overwritten, overwritten, added to
      attn::nn::fused_output_scratch scratch;
      const float loss = attn::nn::fused_output_loss_and_gradients(h.data(), t.data(), bias.data(), targets.data(),
                                                                   rows, width, classes, dh.data(), dt.data(),
                                                                   db.data(), scratch);
      // again with the scratch reused, and without the table's gradient (frozen rows)
      std::vector<float> dh2(h.size()), db2 = db;
      const float loss2 = attn::nn::fused_output_loss_and_gradients(h.data(), t.data(), bias.data(), targets.data(),
                                                                    rows, width, classes, dh2.data(), nullptr,
                                                                    db2.data(), scratch);
      omp_set_num_threads(before);

      const std::string where = std::to_string(rows) + " x " + std::to_string(width) + " x " +
                                std::to_string(classes) + ", " + std::to_string(threads) + " threads";
      EXPECT_NEAR(loss, want.loss, 1e-5 * want.loss) << where;
      EXPECT_EQ(loss, loss2) << where;
      EXPECT_LT(relative_l2(dh, want.dhidden), 1e-5) << where;
      EXPECT_LT(relative_l2(dt, want.dtable), 1e-5) << where;
      EXPECT_LT(relative_l2(db, want.dbias), 1e-5) << where;
      EXPECT_EQ(dh, dh2) << where;  // the same bits from the same inputs
      for (size_t j = 0; j < db.size(); ++j)  // added to
        EXPECT_NEAR(db2[j], 2 * db[j], 1e-6 * std::fabs(db[j]) + 1e-12) << where;
      std::vector<float> all{loss};
      for (const auto* v : {&dh, &dt, &db}) all.insert(all.end(), v->begin(), v->end());
      if (threads == 1) one_thread = all;
      EXPECT_TRUE(all == one_thread) << where << ": not the one thread's bits";
    }
  }
}

TEST(fused_output, a_block_holds_whole_tiles_of_rows_and_about_half_an_l2_cache) {
  EXPECT_EQ(attn::nn::fused_output_block_rows(3932), 32);  // the book's vocabulary: 503 KB
  EXPECT_EQ(attn::nn::fused_output_block_rows(7), 256);
  EXPECT_EQ(attn::nn::fused_output_block_rows(1000000), 16);
}

TEST(fused_output, the_network_fuses_where_it_measured_faster) {
  EXPECT_TRUE(attn::nn::fused_output_pays(3932, 100));  // the book's shape
  EXPECT_TRUE(attn::nn::fused_output_pays(6000, 100));
  EXPECT_FALSE(attn::nn::fused_output_pays(16384, 100));  // measured slower
  EXPECT_FALSE(attn::nn::fused_output_pays(3932, 256));
}

}  // namespace
