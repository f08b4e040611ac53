// Finite-difference gradient checks in double: each value is nudged by ±h and the central
// difference (f(x+h) − f(x−h)) / 2h compared with the analytic gradient. Its error is
// O(h²·f''') from truncation plus O(ε·|f|/h) from rounding; h = 1e-5 keeps both near 1e-10
// for the O(1) functions checked here, so 1e-6 relative (plus 1e-8 absolute) is a wide margin
// that a wrong backward line still misses by orders of magnitude.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace attn::testing {

inline std::vector<double> random_values(size_t n, std::mt19937& rng, double scale = 1.0) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

// Checks every value of x (or an even sample of at most `limit`) against grad.
inline void expect_gradient(std::vector<double>& x, const std::vector<double>& grad,
                            const std::function<double()>& loss, const std::string& name,
                            size_t limit = 400) {
  ASSERT_EQ(x.size(), grad.size()) << name;
  constexpr double h = 1e-5;
  const size_t stride = std::max<size_t>(1, x.size() / limit);
  int failures = 0;
  double worst = 0;
  for (size_t i = 0; i < x.size(); i += stride) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = loss();
    x[i] = saved - h;
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2 * h);
    const double error = std::fabs(numeric - grad[i]);
    worst = std::max(worst, error);
    if (error > 1e-6 * std::fabs(numeric) + 1e-8 && failures++ < 5)
      ADD_FAILURE() << name << "[" << i << "]: analytic " << grad[i] << ", numeric " << numeric
                    << " (of " << x.size() << " values)";
  }
  EXPECT_EQ(failures, 0) << name << ": " << failures << " values off; largest error " << worst;
}

// Σ y ⊙ r: a scalar loss whose gradient with respect to y is r, so one backward call with
// dy = r gives the gradient of every input.
inline double weighted_sum(const std::vector<double>& y, const std::vector<double>& r) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * r[i];
  return s;
}

}  // namespace attn::testing
