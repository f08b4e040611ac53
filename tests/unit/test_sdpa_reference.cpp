// ref::sdpa against a naive float64 attention written here, on awkward shapes, GQA, causal,
// every mask broadcast, fully masked rows, strided views and shape errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/mask.hpp"
#include "attn/sdpa.hpp"
#include "sdpa_test_support.hpp"

namespace {

using namespace sdpa_test;  // NOLINT: the shared test helpers

using attn::shape_t;
using attn::tensor;

// Row-major doubles of any tensor, strided or not.
std::vector<double> doubles(const tensor& t) {
  tensor dense = t.clone();
  return {dense.values().begin(), dense.values().end()};
}

struct naive_result {
  std::vector<double> out;      // [B, H, L, Dv]
  std::vector<double> weights;  // [B, H, L, S]
};

// The textbook formula, written independently of ref::sdpa: the mask is expanded to
// [B, H, L, S] by NumPy's broadcasting rule, `allowed` (when given) is a keep-flag per element
// of that same shape, and the softmax is exp(s) / Σ exp(s) without the max shift (the test
// data keeps |s| far below exp's overflow). A row with no key left gives zeros.
naive_result naive_sdpa(const tensor& q, const tensor& k, const tensor& v, const tensor* mask,
                        bool causal, double scale) {
  const int64_t B = q.dim(0), H = q.dim(1), L = q.dim(2), D = q.dim(3);
  const int64_t Hkv = k.dim(1), S = k.dim(2), Dv = v.dim(3);
  const std::vector<double> qd = doubles(q), kd = doubles(k), vd = doubles(v);
  std::vector<double> md;
  shape_t mshape;
  if (mask != nullptr) {
    md = doubles(*mask);
    mshape = mask->shape();
  }
  // Index of target element (b, h, i, j) in the dense mask, dims aligned from the right.
  const auto mask_at = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    const int64_t idx[4] = {b, h, i, j};
    const int r = static_cast<int>(mshape.size());
    int64_t at = 0;
    for (int a = 0; a < r; ++a) {
      const int64_t size = mshape[static_cast<size_t>(a)];
      at = at * size + (size == 1 ? 0 : idx[4 - r + a]);
    }
    return md[static_cast<size_t>(at)];
  };

  naive_result r{std::vector<double>(static_cast<size_t>(B * H * L * Dv)),
                 std::vector<double>(static_cast<size_t>(B * H * L * S))};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h * Hkv / H;  // the K/V head whose group h belongs to
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> e(static_cast<size_t>(S), 0.0);
        double total = 0.0;
        for (int64_t j = 0; j < S; ++j) {
          if (causal && j > i) continue;
          double s = 0.0;
          for (int64_t d = 0; d < D; ++d)
            s += qd[static_cast<size_t>(((b * H + h) * L + i) * D + d)] *
                 kd[static_cast<size_t>(((b * Hkv + hk) * S + j) * D + d)];
          s *= scale;
          if (mask != nullptr) s += mask_at(b, h, i, j);
          e[static_cast<size_t>(j)] = std::exp(s);
          total += std::exp(s);
        }
        for (int64_t j = 0; j < S; ++j) {
          const double p = total > 0.0 ? e[static_cast<size_t>(j)] / total : 0.0;
          r.weights[static_cast<size_t>(((b * H + h) * L + i) * S + j)] = p;
          for (int64_t d = 0; d < Dv; ++d)
            r.out[static_cast<size_t>(((b * H + h) * L + i) * Dv + d)] +=
                p * vd[static_cast<size_t>(((b * Hkv + hk) * S + j) * Dv + d)];
        }
      }
    }
  return r;
}

double max_abs(const tensor& t) {
  double m = 0.0;
  for (double x : doubles(t)) m = std::max(m, std::abs(x));
  return m;
}

// Compares got against want elementwise; on a miss prints the case, the max difference and the
// first values, and returns false.
bool expect_close(const tensor& got, const std::vector<double>& want, double tol,
                  const std::string& label) {
  const std::vector<double> g = doubles(got);
  if (g.size() != want.size()) {
    ADD_FAILURE() << label << ": " << g.size() << " values, expected " << want.size();
    return false;
  }
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double diff = std::abs(g[i] - want[i]);
    // A NaN anywhere is a miss, whatever the tolerance.
    if (std::isnan(diff) || diff > worst) {
      worst = std::isnan(diff) ? inf : diff;
      at = i;
    }
  }
  if (worst <= tol) return true;
  std::ostringstream first;
  first.precision(9);
  for (size_t i = 0; i < std::min<size_t>(g.size(), 6); ++i)
    first << "\n  [" << i << "] got " << g[i] << " want " << want[i];
  ADD_FAILURE() << label << ": max |diff| " << worst << " at flat index " << at << " (got "
                << g[at] << ", want " << want[at] << "), tolerance " << tol
                << "; first values:" << first.str();
  return false;
}

// The reference accumulates in double and rounds each output once to float, and the naive
// version is double throughout, so they differ by that one rounding (≤ FLT_EPSILON/2 · |o|)
// plus double-precision noise (≈ S · DBL_EPSILON · max|v|, below 1e-13 here). An output is a
// convex combination of rows of v, so |o| ≤ max|v|: FLT_EPSILON · max|v| is twice the bound.
// Weights are at most 1, hence FLT_EPSILON for them.
bool check_against_naive(const tensor& q, const tensor& k, const tensor& v,
                         const attn::sdpa_options& options, const std::string& label) {
  tensor weights;
  const tensor out = attn::ref::sdpa(q, k, v, options, &weights);
  const shape_t want_out = {q.dim(0), q.dim(1), q.dim(2), v.dim(3)};
  const shape_t want_w = {q.dim(0), q.dim(1), q.dim(2), k.dim(2)};
  EXPECT_EQ(out.shape(), want_out) << label;
  EXPECT_EQ(weights.shape(), want_w) << label;
  const naive_result want = naive_sdpa(q, k, v, options.attn_mask, options.causal,
                                       options.scale.resolve(q.dim(3)));
  const double tol_out = FLT_EPSILON * max_abs(v), tol_w = FLT_EPSILON;
  const bool ok_out = expect_close(out, want.out, tol_out, label + " output");
  const bool ok_w = expect_close(weights, want.weights, tol_w, label + " weights");
  return ok_out && ok_w;
}

std::string shape_text(const shape_t& s) { return attn::shape_to_string(s); }

// Values of the awkward-size grid (FlashAttention's habit: odd sizes, and one past a power of 2).
const std::vector<int64_t> sizes = {1, 2, 3, 7, 63, 65, 129};

TEST(sdpa_reference, matches_naive_on_random_odd_shapes) {
  std::mt19937 rng(20240601);
  const auto pick = [&](const std::vector<int64_t>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  int cases = 0;
  while (cases < 60) {
    const int64_t B = pick(sizes), H = pick(sizes), L = pick(sizes), S = pick(sizes),
                  D = pick(sizes), Dv = pick(sizes);
    // Keep each case to a couple of million multiply-adds so the whole test stays ~1 s.
    if (B * H * L * S * (D + Dv) > 2'000'000) continue;
    ++cases;
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d <= H; ++d)
      if (H % d == 0) divisors.push_back(d);
    const int64_t Hkv = pick(divisors);

    attn::sdpa_options options;
    options.causal = std::bernoulli_distribution(0.4)(rng);
    const int scale_kind = std::uniform_int_distribution<int>(0, 2)(rng);
    if (scale_kind == 1) options.scale = attn::scale_spec::parse("none");
    if (scale_kind == 2) options.scale = attn::scale_spec::parse("0.37");

    // A mask of random rank (-1: none), each dim either broadcast (1) or full; about one key
    // in eight is -inf so that some small rows end up fully masked.
    const int mask_rank = std::uniform_int_distribution<int>(-1, 4)(rng);
    const shape_t full = {B, H, L, S};
    shape_t mshape;
    for (int a = 4 - std::max(mask_rank, 0); a < 4; ++a)
      mshape.push_back(std::bernoulli_distribution(0.5)(rng) ? full[static_cast<size_t>(a)] : 1);
    tensor mask = random_tensor(mshape, rng, -3.0f, 1.0f);
    for (float& x : mask.values())
      if (std::bernoulli_distribution(0.125)(rng)) x = -inf;
    if (mask_rank >= 0) options.attn_mask = &mask;

    const tensor q = random_tensor({B, H, L, D}, rng);
    const tensor k = random_tensor({B, Hkv, S, D}, rng);
    const tensor v = random_tensor({B, Hkv, S, Dv}, rng, -2.0f, 2.0f);
    std::ostringstream label;
    label << "case B=" << B << " H=" << H << " Hkv=" << Hkv << " L=" << L << " S=" << S
          << " D=" << D << " Dv=" << Dv << " causal=" << options.causal
          << " scale=" << options.scale.to_string()
          << " mask=" << (mask_rank >= 0 ? shape_text(mshape) : "none");
    if (!check_against_naive(q, k, v, options, label.str())) return;  // one report is enough
  }
}

TEST(sdpa_reference, grouped_query_heads_read_their_group) {
  std::mt19937 rng(7);
  const tensor q = random_tensor({2, 6, 5, 7}, rng);
  const tensor k = random_tensor({2, 2, 9, 7}, rng);
  const tensor v = random_tensor({2, 2, 9, 3}, rng);
  check_against_naive(q, k, v, {}, "gqa H=6 Hkv=2");
  // Repeating each K/V head H/Hkv times (PyTorch's enable_gqa) must give the same bits.
  tensor k_rep({2, 6, 9, 7}), v_rep({2, 6, 9, 3});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 6; ++h)
      for (int64_t s = 0; s < 9; ++s) {
        for (int64_t d = 0; d < 7; ++d) k_rep.at({b, h, s, d}) = k.at({b, h / 3, s, d});
        for (int64_t d = 0; d < 3; ++d) v_rep.at({b, h, s, d}) = v.at({b, h / 3, s, d});
      }
  const tensor grouped = attn::ref::sdpa(q, k, v);
  const tensor repeated = attn::ref::sdpa(q, k_rep, v_rep);
  ASSERT_EQ(grouped.shape(), repeated.shape());
  EXPECT_EQ(std::memcmp(grouped.data(), repeated.data(), sizeof(float) * grouped.numel()), 0);
}

TEST(sdpa_reference, causal_is_top_left_for_more_queries_than_keys_and_fewer) {
  std::mt19937 rng(11);
  for (const auto& [L, S] : std::vector<std::pair<int64_t, int64_t>>{{7, 3}, {3, 7}, {5, 5}}) {
    const tensor q = random_tensor({1, 2, L, 4}, rng);
    const tensor k = random_tensor({1, 2, S, 4}, rng);
    const tensor v = random_tensor({1, 2, S, 3}, rng);
    attn::sdpa_options options;
    options.causal = true;
    const std::string label = "causal L=" + std::to_string(L) + " S=" + std::to_string(S);
    check_against_naive(q, k, v, options, label);
    tensor w;
    attn::ref::sdpa(q, k, v, options, &w);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < L; ++i) {
        double sum = 0.0;
        for (int64_t j = 0; j < S; ++j) {
          const float p = w.at({0, h, i, j});
          if (j > i) EXPECT_EQ(p, 0.0f) << label << " query " << i << " sees key " << j;
          else EXPECT_GT(p, 0.0f) << label << " query " << i << " misses key " << j;
          sum += p;
        }
        // Top-left alignment: every query sees key 0, so no row is empty.
        EXPECT_NEAR(sum, 1.0, 1e-6) << label << " row " << i;
      }
  }
}

TEST(sdpa_reference, float_masks_of_every_broadcast_rank) {
  std::mt19937 rng(3);
  const int64_t B = 2, H = 3, L = 4, S = 5;
  const tensor q = random_tensor({B, H, L, 6}, rng);
  const tensor k = random_tensor({B, H, S, 6}, rng);
  const tensor v = random_tensor({B, H, S, 2}, rng);
  const std::vector<shape_t> shapes = {
      {},           {S},           {1},          {L, S},       {L, 1},       {1, S},
      {H, L, S},    {H, 1, S},     {1, L, S},    {B, H, L, S}, {B, 1, L, S}, {1, H, 1, S},
      {B, 1, 1, 1}, {1, 1, 1, 1}, {B, H, L, 1}};
  for (const shape_t& shape : shapes) {
    tensor mask = random_tensor(shape, rng, -4.0f, 2.0f);
    attn::sdpa_options options;
    options.attn_mask = &mask;
    check_against_naive(q, k, v, options, "mask " + shape_text(shape));
  }
}

TEST(additive_mask_from_bool, maps_flags_by_convention) {
  const tensor flags({2, 2}, {1.0f, 0.0f, 0.0f, 1.0f});
  const tensor keep_true = attn::additive_mask_from_bool(flags, true);    // sdpa's convention
  const tensor keep_false = attn::additive_mask_from_bool(flags, false);  // MHA's convention
  ASSERT_EQ(keep_true.shape(), flags.shape());
  EXPECT_EQ(keep_true.at({0, 0}), 0.0f);
  EXPECT_EQ(keep_true.at({0, 1}), -inf);
  EXPECT_EQ(keep_true.at({1, 0}), -inf);
  EXPECT_EQ(keep_true.at({1, 1}), 0.0f);
  EXPECT_EQ(keep_false.at({0, 0}), -inf);
  EXPECT_EQ(keep_false.at({0, 1}), 0.0f);
  // A strided view reads its own elements, not the storage order.
  const tensor transposed = attn::additive_mask_from_bool(flags.transpose(0, 1), true);
  EXPECT_EQ(transposed.at({0, 1}), -inf);
  EXPECT_EQ(transposed.at({1, 0}), -inf);
}

TEST(additive_mask_from_bool, rejects_values_other_than_zero_and_one) {
  const tensor flags({3}, {1.0f, 0.5f, 0.0f});
  try {
    attn::additive_mask_from_bool(flags, true);
    FAIL() << "expected an error";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
    EXPECT_NE(std::string(e.what()).find("0.5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(attn::additive_mask_from_bool(tensor(), true), attn::error);
}

TEST(sdpa_reference, bool_masks_select_keys) {
  std::mt19937 rng(5);
  const int64_t B = 2, H = 2, L = 3, S = 6;
  const tensor q = random_tensor({B, H, L, 4}, rng);
  const tensor k = random_tensor({B, H, S, 4}, rng);
  const tensor v = random_tensor({B, H, S, 5}, rng);
  // A per-batch keep-flag [B, 1, 1, S], as PyTorch's sdpa takes it (True = takes part).
  tensor keep({B, 1, 1, S});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < S; ++j) keep.at({b, 0, 0, j}) = (j + b) % 3 != 0 ? 1.0f : 0.0f;
  const tensor additive = attn::additive_mask_from_bool(keep, true);
  attn::sdpa_options options;
  options.attn_mask = &additive;
  tensor w;
  const tensor out = attn::ref::sdpa(q, k, v, options, &w);

  // The same attention over only the kept keys, gathered by hand into shorter K and V.
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int64_t> kept;
    for (int64_t j = 0; j < S; ++j)
      if (keep.at({b, 0, 0, j}) == 1.0f) kept.push_back(j);
    const auto n = static_cast<int64_t>(kept.size());
    tensor qb = q.slice(0, b, b + 1), kb({1, H, n, 4}), vb({1, H, n, 5});
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < n; ++s) {
        for (int64_t d = 0; d < 4; ++d) kb.at({0, h, s, d}) = k.at({b, h, kept[s], d});
        for (int64_t d = 0; d < 5; ++d) vb.at({0, h, s, d}) = v.at({b, h, kept[s], d});
      }
    const naive_result want = naive_sdpa(qb, kb, vb, nullptr, false, 0.5);
    expect_close(out.slice(0, b, b + 1), want.out, FLT_EPSILON * max_abs(v),
                 "bool mask batch " + std::to_string(b));
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j)
          if (keep.at({b, 0, 0, j}) == 0.0f) {
            EXPECT_EQ(w.at({b, h, i, j}), 0.0f);
          }
  }
}

// Bits of a float, so that +0 and -0 (and NaN) are told apart.
uint32_t bits(float x) {
  uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

TEST(sdpa_reference, fully_masked_rows_are_exactly_zero) {
  std::mt19937 rng(9);
  const int64_t L = 4, S = 5;
  const tensor q = random_tensor({1, 2, L, 3}, rng);
  const tensor k = random_tensor({1, 2, S, 3}, rng);
  const tensor v = random_tensor({1, 2, S, 4}, rng);
  tensor mask({L, S}, 0.0f);
  for (int64_t j = 0; j < S; ++j) mask.at({1, j}) = -inf;  // row 1: every key masked
  mask.at({0, 0}) = -inf;  // row 0 under causal sees key 0 only, so it is empty too
  attn::sdpa_options options;
  options.attn_mask = &mask;
  options.causal = true;
  tensor w;
  const tensor out = attn::ref::sdpa(q, k, v, options, &w);
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t i : {0, 1}) {
      for (int64_t d = 0; d < 4; ++d) EXPECT_EQ(bits(out.at({0, h, i, d})), 0u) << "row " << i;
      for (int64_t j = 0; j < S; ++j) EXPECT_EQ(bits(w.at({0, h, i, j})), 0u) << "row " << i;
    }
    for (int64_t i : {2, 3})
      for (int64_t d = 0; d < 4; ++d) EXPECT_TRUE(std::isfinite(out.at({0, h, i, d})));
  }
  check_against_naive(q, k, v, options, "fully masked rows");
}

TEST(sdpa_reference, no_keys_gives_zeros) {
  const tensor q({2, 1, 3, 4}, 0.5f), k({2, 1, 0, 4}), v({2, 1, 0, 6});
  tensor w;
  const tensor out = attn::ref::sdpa(q, k, v, {}, &w);
  ASSERT_EQ(out.shape(), (shape_t{2, 1, 3, 6}));
  EXPECT_EQ(w.shape(), (shape_t{2, 1, 3, 0}));
  for (float x : out.values()) EXPECT_EQ(bits(x), 0u);
}

TEST(sdpa_reference, strided_views_give_the_same_bits_as_contiguous_copies) {
  std::mt19937 rng(13);
  const int64_t B = 2, H = 4, Hkv = 2, L = 7, S = 65, D = 9, Dv = 5;
  // Each input is a transposed view of a tensor stored in another layout; q is also a slice
  // with an offset and a row stride wider than D.
  const tensor q_store = random_tensor({B, L, H, D + 3}, rng);
  const tensor q = q_store.slice(3, 2, 2 + D).transpose(1, 2);  // [B, H, L, D]
  const tensor k = random_tensor({B, S, Hkv, D}, rng).transpose(1, 2);
  const tensor v = random_tensor({B, Hkv, Dv, S}, rng).transpose(2, 3);
  tensor mask_store = random_tensor({B, 1, S, L}, rng, -2.0f, 1.0f);
  mask_store.at({1, 0, 3, 2}) = -inf;
  const tensor mask = mask_store.transpose(2, 3);  // [B, 1, L, S]
  ASSERT_FALSE(q.is_contiguous());
  ASSERT_FALSE(k.is_contiguous());
  ASSERT_FALSE(v.is_contiguous());
  ASSERT_FALSE(mask.is_contiguous());

  for (bool causal : {false, true}) {
    attn::sdpa_options strided_options, dense_options;
    strided_options.causal = dense_options.causal = causal;
    strided_options.attn_mask = &mask;
    const tensor dense_mask = mask.clone();
    dense_options.attn_mask = &dense_mask;
    tensor w_strided, w_dense;
    const tensor strided = attn::ref::sdpa(q, k, v, strided_options, &w_strided);
    const tensor dense =
        attn::ref::sdpa(q.clone(), k.clone(), v.clone(), dense_options, &w_dense);
    ASSERT_EQ(strided.shape(), dense.shape());
    EXPECT_EQ(std::memcmp(strided.data(), dense.data(), sizeof(float) * dense.numel()), 0)
        << "causal=" << causal;
    EXPECT_EQ(std::memcmp(w_strided.data(), w_dense.data(), sizeof(float) * w_dense.numel()), 0)
        << "causal=" << causal;
    check_against_naive(q, k, v, strided_options, "strided causal=" + std::to_string(causal));
  }
}

TEST(sdpa_reference, scale_options) {
  std::mt19937 rng(17);
  const tensor q = random_tensor({1, 1, 3, 16}, rng);
  const tensor k = random_tensor({1, 1, 4, 16}, rng);
  const tensor v = random_tensor({1, 1, 4, 2}, rng);
  for (const char* text : {"sqrt", "none", "2.5", "0"}) {
    attn::sdpa_options options;
    options.scale = attn::scale_spec::parse(text);
    check_against_naive(q, k, v, options, std::string("scale ") + text);
  }
  // Scale 0 makes every weight equal: the output is the mean of the values.
  attn::sdpa_options zero;
  zero.scale = attn::scale_spec::parse("0");
  tensor w;
  attn::ref::sdpa(q, k, v, zero, &w);
  for (float p : w.values()) EXPECT_FLOAT_EQ(p, 0.25f);
}

// Expects a usage error whose message is exactly `message` (or contains it when !exact).
void expect_usage_error(const tensor& q, const tensor& k, const tensor& v, const tensor* mask,
                        const std::string& message, bool exact = true) {
  attn::sdpa_options options;
  options.attn_mask = mask;
  try {
    attn::ref::sdpa(q, k, v, options);
    ADD_FAILURE() << "expected an error: " << message;
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
    if (exact) EXPECT_EQ(std::string(e.what()), message);
    else EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(sdpa_reference, shape_errors_name_the_tensor) {
  const tensor q({2, 3, 5, 16}), k({2, 3, 5, 16}), v({2, 3, 5, 4});
  expect_usage_error(q, tensor({2, 3, 5, 8}), v, nullptr,
                     "k [2, 3, 5, 8]: head size 8 does not match q's 16");
  expect_usage_error(tensor({3, 5, 16}), k, v, nullptr, "q [3, 5, 16]: expected rank 4", false);
  expect_usage_error(q, tensor({2, 3, 5}), v, nullptr, "k [2, 3, 5]: expected rank 4", false);
  expect_usage_error(q, k, tensor({2, 3, 5, 4, 1}), nullptr, "v [2, 3, 5, 4, 1]: expected rank 4",
                     false);
  expect_usage_error(q, tensor({1, 3, 5, 16}), v, nullptr,
                     "k [1, 3, 5, 16]: batch 1 does not match q's 2");
  expect_usage_error(q, k, tensor({1, 3, 5, 4}), nullptr,
                     "v [1, 3, 5, 4]: batch 1 does not match q's 2");
  expect_usage_error(q, k, tensor({2, 1, 5, 4}), nullptr, "v [2, 1, 5, 4]: 1 heads do not match k's 3");
  expect_usage_error(q, k, tensor({2, 3, 6, 4}), nullptr, "v [2, 3, 6, 4]: 6 keys do not match k's 5");
  expect_usage_error(q, tensor({2, 2, 5, 16}), tensor({2, 2, 5, 4}), nullptr,
                     "k [2, 2, 5, 16]: 2 key/value heads do not divide q's 3 heads");

  for (const shape_t& bad : std::vector<shape_t>{{4}, {4, 5}, {2, 5, 5}, {3, 3, 5, 5},
                                                 {1, 2, 3, 5, 5}}) {
    const tensor mask(bad);
    expect_usage_error(q, k, v, &mask,
                       "attn_mask " + shape_text(bad) +
                           ": does not broadcast to [B, H, L, S] = [2, 3, 5, 5]");
  }
  // The shapes alone, without running anything.
  EXPECT_NO_THROW(attn::check_sdpa_shapes(q, k, v, nullptr));
  const tensor ok_mask({3, 1, 5});
  EXPECT_NO_THROW(attn::check_sdpa_shapes(q, k, v, &ok_mask));
}

}  // namespace
