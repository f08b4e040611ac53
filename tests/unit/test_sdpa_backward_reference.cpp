// The reference sdpa backward against finite differences in double: the loss Σ grad_o ∘ o is
// recomputed by an independent float64 forward (written here, not the library's) at inputs
// nudged by ±h, and (loss(x+h) − loss(x−h)) / 2h is held against every element of dq, dk, dv.
// Central differences err by O(h²) (≈1e-10 at h = 1e-5) and by rounding of O(ε/h) (≈1e-11),
// so the only error that matters is the reference's one rounding to float: a few float ulps of
// the largest gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/mask.hpp"
#include "attn/sdpa_backward.hpp"
#include "sdpa_test_support.hpp"

namespace {

using namespace sdpa_test;  // NOLINT: the shared test helpers

using attn::shape_t;
using attn::tensor;

struct problem {
  int64_t B, H, Hkv, L, S, D, Dv;
  bool causal = false;
  bool mask = false;  // an [L, S] additive mask with some −inf and finite values
  bool masked_row = false;  // row 1 of the mask entirely −inf
};

// Σ_{b,h,i,e} g[b,h,i,e] · o[b,h,i,e] in double, o the textbook sdpa of double inputs.
struct double_sdpa {
  problem p;
  std::vector<double> q, k, v, g, mask;
  double scale;

  double loss() const {
    const int64_t group = p.H / p.Hkv;
    double total = 0.0;
    std::vector<double> s(static_cast<size_t>(p.S));
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t h = 0; h < p.H; ++h)
        for (int64_t i = 0; i < p.L; ++i) {
          const int64_t hk = h / group;
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < p.S; ++j) {
            double dot = 0.0;
            for (int64_t d = 0; d < p.D; ++d)
              dot += q[static_cast<size_t>(((b * p.H + h) * p.L + i) * p.D + d)] *
                     k[static_cast<size_t>(((b * p.Hkv + hk) * p.S + j) * p.D + d)];
            double x = dot * scale + (p.mask ? mask[static_cast<size_t>(i * p.S + j)] : 0.0);
            if (p.causal && j > i) x = -std::numeric_limits<double>::infinity();
            s[static_cast<size_t>(j)] = x;
            mx = std::max(mx, x);
          }
          if (std::isinf(mx)) continue;  // fully masked: o = 0
          double sum = 0.0;
          for (double& x : s) sum += (x = std::exp(x - mx));
          for (int64_t e = 0; e < p.Dv; ++e) {
            double o = 0.0;
            for (int64_t j = 0; j < p.S; ++j)
              o += s[static_cast<size_t>(j)] / sum * v[static_cast<size_t>(((b * p.Hkv + hk) * p.S + j) * p.Dv + e)];
            total += g[static_cast<size_t>(((b * p.H + h) * p.L + i) * p.Dv + e)] * o;
          }
        }
    return total;
  }
};

std::vector<double> to_double(const tensor& t) {
  const auto v = t.values();
  return {v.begin(), v.end()};
}

// Checks every element of `analytic` against the central difference of the loss in `x`.
void check_gradient(double_sdpa& f, std::vector<double>& x, const tensor& analytic, const char* name) {
  SCOPED_TRACE(name);
  const double h = 1e-5;
  const auto a = analytic.values();
  ASSERT_EQ(a.size(), x.size());
  double largest = 0.0;
  for (float g : a) largest = std::max(largest, static_cast<double>(std::fabs(g)));
  // The reference rounds each gradient once to float: half an ulp of it, plus room for the
  // finite difference's own O(h²) error.
  const double tol = 4.0 * FLT_EPSILON * std::max(largest, 1.0) + 1e-8;
  int shown = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = f.loss();
    x[i] = saved - h;
    const double down = f.loss();
    x[i] = saved;
    const double fd = (up - down) / (2.0 * h);
    const double err = std::fabs(fd - static_cast<double>(a[i]));
    if (err > tol && shown++ < 5)
      ADD_FAILURE() << "element " << i << ": analytic " << a[i] << ", finite difference " << fd
                    << ", |diff| " << err << " > " << tol;
  }
}

void check_problem(const problem& p, uint32_t seed) {
  SCOPED_TRACE("B " + std::to_string(p.B) + " H " + std::to_string(p.H) + " Hkv " +
               std::to_string(p.Hkv) + " L " + std::to_string(p.L) + " S " + std::to_string(p.S) +
               " D " + std::to_string(p.D) + " Dv " + std::to_string(p.Dv) +
               (p.causal ? " causal" : "") + (p.mask ? " mask" : "") + (p.masked_row ? " masked row" : ""));
  std::mt19937 rng(seed);
  const tensor q = random_tensor({p.B, p.H, p.L, p.D}, rng), k = random_tensor({p.B, p.Hkv, p.S, p.D}, rng);
  const tensor v = random_tensor({p.B, p.Hkv, p.S, p.Dv}, rng), g = random_tensor({p.B, p.H, p.L, p.Dv}, rng);
  tensor mask = random_tensor({p.L, p.S}, rng, -1.5f, 1.5f);
  std::bernoulli_distribution hide(0.25);
  for (float& x : mask.values())
    if (hide(rng)) x = -inf;
  if (p.masked_row)
    for (int64_t j = 0; j < p.S; ++j) mask.at({1, j}) = -inf;
  attn::sdpa_options options;
  options.causal = p.causal;
  options.scale = attn::scale_spec::parse("0.37");
  if (p.mask) options.attn_mask = &mask;

  const attn::sdpa_gradients grads = attn::ref::sdpa_backward(q, k, v, g, options);
  double_sdpa f{p, to_double(q), to_double(k), to_double(v), to_double(g), to_double(mask), 0.37};
  check_gradient(f, f.q, grads.dq, "dq");
  check_gradient(f, f.k, grads.dk, "dk");
  check_gradient(f, f.v, grads.dv, "dv");

  if (p.masked_row) {  // the fully masked row's dq is exactly zero
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t h = 0; h < p.H; ++h)
        for (int64_t d = 0; d < p.D; ++d) EXPECT_EQ(grads.dq.at({b, h, 1, d}), 0.0f);
  }
}

TEST(sdpa_backward_reference, finite_differences_plain) {
  check_problem({1, 2, 2, 3, 4, 5, 5}, 1);
}

TEST(sdpa_backward_reference, finite_differences_causal_with_fewer_and_more_queries) {
  check_problem({1, 1, 1, 5, 3, 4, 3, true}, 2);
  check_problem({1, 1, 1, 3, 6, 4, 4, true}, 3);
}

TEST(sdpa_backward_reference, finite_differences_grouped_query_heads) {
  check_problem({2, 4, 2, 3, 5, 4, 6}, 4);
}

TEST(sdpa_backward_reference, finite_differences_masks_and_a_fully_masked_row) {
  check_problem({1, 2, 1, 4, 5, 3, 3, false, true, false}, 5);
  check_problem({1, 2, 2, 4, 5, 3, 2, true, true, true}, 6);
}

TEST(sdpa_backward_reference, forward_lse_is_the_log_of_the_softmax_denominator) {
  std::mt19937 rng(7);
  const tensor q = random_tensor({1, 2, 4, 8}, rng), k = random_tensor({1, 1, 6, 8}, rng);
  const tensor v = random_tensor({1, 1, 6, 8}, rng);
  tensor mask({4, 6}, 0.0f);
  for (int64_t j = 0; j < 6; ++j) mask.at({2, j}) = -inf;
  attn::sdpa_options o;
  o.attn_mask = &mask;
  o.kernel = attn::sdpa_kernel::reference;
  tensor lse;
  const tensor out = attn::sdpa_forward(q, k, v, o, lse);
  ASSERT_EQ(lse.shape(), (shape_t{1, 2, 4}));
  const double scale = 1.0 / std::sqrt(8.0);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 4; ++i) {
      if (i == 2) {
        EXPECT_EQ(lse.at({0, h, i}), -inf);
        continue;
      }
      double sum = 0.0;
      for (int64_t j = 0; j < 6; ++j) {
        double dot = 0.0;
        for (int64_t d = 0; d < 8; ++d) dot += double(q.at({0, h, i, d})) * double(k.at({0, 0, j, d}));
        sum += std::exp(dot * scale);
      }
      EXPECT_NEAR(lse.at({0, h, i}), std::log(sum), 1e-6);
    }
  const tensor plain = attn::ref::sdpa(q, k, v, o);
  EXPECT_EQ(out.values().size(), plain.values().size());
  for (size_t i = 0; i < plain.values().size(); ++i) EXPECT_EQ(out.values()[i], plain.values()[i]);
}

TEST(sdpa_backward, shapes_of_o_lse_and_grad_o_are_checked) {
  std::mt19937 rng(8);
  const tensor q = random_tensor({1, 2, 4, 8}, rng), k = random_tensor({1, 2, 6, 8}, rng);
  const tensor v = random_tensor({1, 2, 6, 8}, rng);
  tensor lse;
  const tensor o = attn::sdpa_forward(q, k, v, {}, lse);
  EXPECT_THROW(attn::sdpa_backward(q, k, v, o, lse, tensor({1, 2, 4, 7})), attn::error);
  EXPECT_THROW(attn::sdpa_backward(q, k, v, o, tensor({1, 2, 5}), o), attn::error);
  EXPECT_THROW(attn::sdpa_backward(q, k, v, tensor({1, 2, 4}), lse, o), attn::error);
  EXPECT_NO_THROW(attn::sdpa_backward(q, k, v, o, lse, o));
}

TEST(sdpa_backward, lowest_float_mask_hides_keys_as_minus_infinity_does) {
  // A mask written with −FLT_MAX (no infinities) gives the gradients of −inf, bit for bit, in
  // the reference and the fused kernel; a row hidden that way has zero gradients.
  std::mt19937 rng(9);
  const tensor q = random_tensor({1, 2, 5, 8}, rng), k = random_tensor({1, 2, 70, 8}, rng);
  const tensor v = random_tensor({1, 2, 70, 8}, rng), g = random_tensor({1, 2, 5, 8}, rng);
  tensor with_inf({5, 70}, 0.0f), with_lowest({5, 70}, 0.0f);
  for (int64_t j = 0; j < 70; ++j)
    for (int64_t i = 0; i < 5; ++i)
      if (i == 3 || j % 3 == 0) {
        with_inf.at({i, j}) = -inf;
        with_lowest.at({i, j}) = -FLT_MAX;
      }
  for (const auto kernel : {attn::sdpa_kernel::reference, attn::sdpa_kernel::fused}) {
    attn::sdpa_options a, b;
    a.attn_mask = &with_inf, b.attn_mask = &with_lowest;
    a.kernel = b.kernel = kernel;
    tensor lse_a, lse_b;
    const tensor o_a = attn::sdpa_forward(q, k, v, a, lse_a), o_b = attn::sdpa_forward(q, k, v, b, lse_b);
    const attn::sdpa_gradients ga = attn::sdpa_backward(q, k, v, o_a, lse_a, g, a);
    const attn::sdpa_gradients gb = attn::sdpa_backward(q, k, v, o_b, lse_b, g, b);
    for (const auto& [x, y] : {std::pair{&ga.dq, &gb.dq}, {&ga.dk, &gb.dk}, {&ga.dv, &gb.dv}})
      EXPECT_EQ(std::memcmp(x->data(), y->data(), x->values().size() * sizeof(float)), 0);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t d = 0; d < 8; ++d) EXPECT_EQ(gb.dq.at({0, h, 3, d}), 0.0f);
  }
}

}  // namespace
