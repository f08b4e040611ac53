// What the sdpa kernel tests share: random inputs, output buffers with guard zones, error
// measures, and the randomised sweep's cases and masks (forward and backward sweep the same).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attn/mask.hpp"
#include "attn/tensor.hpp"
#include "kernels/flash_problem.hpp"
#include "kernels/sdpa_problem.hpp"

namespace sdpa_test {

using attn::shape_t;
using attn::tensor;

constexpr float inf = std::numeric_limits<float>::infinity();

inline tensor random_tensor(const shape_t& shape, std::mt19937& rng, float lo = -1.0f,
                            float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  tensor t(shape);
  for (float& x : t.values()) x = dist(rng);
  return t;
}

// Output buffers with guard zones on both sides, filled with a pattern the kernel never writes.
struct guarded {
  static constexpr size_t guard = 67;
  static constexpr uint32_t pattern = 0x7fc0dead;  // a quiet NaN with a payload
  std::vector<float> buf;
  size_t n;
  explicit guarded(size_t count) : buf(count + 2 * guard), n(count) {
    for (float& x : buf) std::memcpy(&x, &pattern, sizeof x);
  }
  float* data() { return buf.data() + guard; }
  std::vector<float> values() const { return {buf.begin() + guard, buf.begin() + guard + n}; }
  bool guards_intact() const {
    for (size_t i = 0; i < buf.size(); ++i) {
      if (i >= guard && i < guard + n) continue;
      uint32_t u = 0;
      std::memcpy(&u, &buf[i], sizeof u);
      if (u != pattern) return false;
    }
    return true;
  }
};

// The largest |got − want|; infinite when any difference is NaN.
inline double max_abs_error(const std::vector<float>& got, const tensor& want) {
  double err = 0.0;
  const auto w = want.values();
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - static_cast<double>(w[i]));
    if (std::isnan(e)) return inf;
    err = std::max(err, e);
  }
  return err;
}

inline double max_abs(const tensor& t) {
  double m = 0.0;
  for (float x : t.values()) m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}

enum class mask_kind { none, additive_ls, bool_per_key, additive_full };

struct sweep_case {
  int64_t B, H, Hkv, L, S, D, Dv;
  bool causal;
  mask_kind mask;
};

// The randomised sweeps' case number `tries`: L, S, D (and a third of the time a different Dv)
// drawn from the lists, the rest cycling through batches of 1-2, 1-2 K/V heads, GQA groups of
// 1-3, causal two times in five and every mask kind.
inline sweep_case random_case(int tries, std::mt19937& rng, const std::vector<int64_t>& lengths,
                              const std::vector<int64_t>& dims) {
  std::uniform_int_distribution<size_t> pick_len(0, lengths.size() - 1), pick_dim(0, dims.size() - 1);
  sweep_case sc{};
  sc.L = lengths[pick_len(rng)];
  sc.S = lengths[pick_len(rng)];
  sc.D = dims[pick_dim(rng)];
  sc.Dv = (tries % 3 == 0) ? dims[pick_dim(rng)] : sc.D;
  sc.B = 1 + tries % 2;
  sc.Hkv = 1 + (tries / 2) % 2;
  sc.H = sc.Hkv * (1 + (tries / 4) % 3);
  sc.causal = tries % 5 < 2;
  sc.mask = static_cast<mask_kind>(tries % 4);
  return sc;
}

inline std::string describe(const sweep_case& c) {
  const char* masks[] = {"none", "additive [L,S]", "bool [B,1,1,S]", "additive [B,H,L,S]"};
  return "B " + std::to_string(c.B) + " H " + std::to_string(c.H) + " Hkv " + std::to_string(c.Hkv) +
         " L " + std::to_string(c.L) + " S " + std::to_string(c.S) + " D " + std::to_string(c.D) +
         " Dv " + std::to_string(c.Dv) + (c.causal ? " causal" : "") + " mask " +
         masks[static_cast<int>(c.mask)];
}

// A random mask of the case's kind, about 30% of its entries hiding their key.
inline tensor make_mask(mask_kind kind, const sweep_case& sc, std::mt19937& rng) {
  std::bernoulli_distribution hide(0.3);
  tensor mask;
  switch (kind) {
    case mask_kind::none: break;
    case mask_kind::additive_ls:
      mask = random_tensor({sc.L, sc.S}, rng, -2.0f, 2.0f);
      for (float& x : mask.values())
        if (hide(rng)) x = -inf;
      break;
    case mask_kind::bool_per_key: {
      tensor keep({sc.B, 1, 1, sc.S});
      for (float& x : keep.values()) x = hide(rng) ? 0.0f : 1.0f;
      mask = attn::additive_mask_from_bool(keep, /*keep_when=*/true);
      break;
    }
    case mask_kind::additive_full:
      mask = random_tensor({sc.B, sc.H, sc.L, sc.S}, rng, -1.0f, 1.0f);
      for (float& x : mask.values())
        if (hide(rng)) x = -inf;
      break;
  }
  return mask;
}

// One fused kernel entry point (an instruction set, or a bf16 path) and a call of it on guarded
// output buffers.
using attn::kernels::flash_problem;

struct isa {
  std::string name;
  std::function<void(const flash_problem&)> run;
};

struct call {
  tensor q, k, v;
  const tensor* mask = nullptr;
  bool causal = false;
  float scale = 0.0f;  // resolved
};

// Runs one kernel directly on guarded buffers.
struct fused_result {
  std::vector<float> out, weights;
  bool guards_ok = false;
};

// A kernel's view of q, k, v (and mask): shapes, pointers and strides, as attn::sdpa fills it
// (the same function); the scale exactly this float.
inline flash_problem problem_of(const tensor& q, const tensor& k, const tensor& v, const tensor* mask,
                                bool causal, float scale) {
  attn::sdpa_options options;
  options.attn_mask = mask;
  options.causal = causal;
  options.scale = {attn::scale_spec::mode::value, scale};
  return attn::kernels::describe_problem(q, k, v, options);
}

inline fused_result run_fused(const isa& kernel, const call& c, bool want_weights) {
  flash_problem p = problem_of(c.q, c.k, c.v, c.mask, c.causal, c.scale);
  guarded out(static_cast<size_t>(p.B * p.H * p.L * p.Dv));
  guarded weights(want_weights ? static_cast<size_t>(p.B * p.H * p.L * p.S) : 0);
  p.out = out.data();
  p.weights = want_weights ? weights.data() : nullptr;
  kernel.run(p);
  fused_result r;
  r.out.assign(out.data(), out.data() + out.n);
  if (want_weights) r.weights.assign(weights.data(), weights.data() + weights.n);
  r.guards_ok = out.guards_intact() && weights.guards_intact();
  return r;
}

}  // namespace sdpa_test
