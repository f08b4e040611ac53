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

// Every trainable parameter's gradient in a network (double) against finite differences of
// loss(); frozen ones must have received none.
template <class Network, class Loss>
void expect_network_gradients(Network& net, const Loss& loss) {
  for (auto* p : net.parameters()) {
    if (!p->trainable) {
      for (double g : p->grad) ASSERT_EQ(g, 0.0) << p->name << " is frozen";
      continue;
    }
    expect_gradient(p->value, p->grad, loss, p->name, 150);
  }
}

// float32 gradients against the float64 specification's, parameter by parameter (two networks'
// parameters() in the same order): each one's relative L2 error, measured against the larger of
// its own gradient's norm and 1e-3 of all of them — a gradient that is exactly zero in exact
// arithmetic (K's bias: adding b_k to every key adds q·b_k to a whole row of scores, which
// softmax ignores) is rounding noise in both.
template <class Params32, class Params64>
void expect_gradients_match(const Params32& params, const Params64& ref_params, double tolerance,
                            const std::string& where) {
  ASSERT_EQ(params.size(), ref_params.size()) << where;
  double all = 0;
  for (const auto* p : ref_params)
    for (double g : p->grad) all += g * g;
  for (size_t i = 0; i < params.size(); ++i) {
    double diff = 0, norm = 0;
    for (size_t j = 0; j < params[i]->grad.size(); ++j) {
      const double want = ref_params[i]->grad[j];
      const double got = params[i]->grad[j];
      diff += (got - want) * (got - want);
      norm += want * want;
    }
    const double relative = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-3 * std::sqrt(all));
    EXPECT_LT(relative, tolerance) << params[i]->name << " (" << where << "): relative L2 error " << relative;
  }
}

// Σ y ⊙ r: a scalar loss whose gradient with respect to y is r, so one backward call with
// dy = r gives the gradient of every input.
inline double weighted_sum(const std::vector<double>& y, const std::vector<double>& r) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * r[i];
  return s;
}

}  // namespace attn::testing
