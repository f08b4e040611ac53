#include "decode/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "decode/greedy.hpp"

namespace attn::decode {

int64_t sample(std::span<const float> scores, banned_tokens banned, const sampling_options& o, train::rng& r) {
  const auto v = static_cast<int64_t>(scores.size());
  const int64_t best = most_likely(scores, banned);
  // Relative to the top score, so the largest weight is 1 and nothing overflows.
  const double top = scores[static_cast<size_t>(best)];
  std::vector<double> p(static_cast<size_t>(v));
  for (int64_t i = 0; i < v; ++i)
    p[static_cast<size_t>(i)] =
        banned.allows(i) ? std::exp((scores[static_cast<size_t>(i)] - top) / o.temperature) : 0.0;
  if (o.top_k == 0 && o.top_p >= 1) {  // no cut: draw in id order, with no sort of the vocabulary
    double total = 0;
    for (double x : p) total += x;
    double u = r.uniform() * total;
    for (int64_t i = 0; i < v; ++i) {
      u -= p[static_cast<size_t>(i)];
      if (u < 0) return i;  // (a banned token's p is 0: never here)
    }
    return best;  // u rounded past the sum
  }
  std::vector<int64_t> order(static_cast<size_t>(v));
  std::iota(order.begin(), order.end(), int64_t{0});
  // Most likely first, ties to the lower id, so the cut never depends on the sort.
  const auto more_likely = [&](int64_t a, int64_t b) {
    const double pa = p[static_cast<size_t>(a)], pb = p[static_cast<size_t>(b)];
    return pa != pb ? pa > pb : a < b;
  };
  int64_t keep = o.top_k > 0 ? std::min(o.top_k, v) : v;
  // The order is a strict total one (ties broken by id), so any sort gives the same tokens in the
  // same places: the whole vocabulary (top-p alone) goes to std::sort, which is faster there than
  // partial_sort's heap.
  if (keep == v) {
    std::sort(order.begin(), order.end(), more_likely);
  } else {
    std::partial_sort(order.begin(), order.begin() + keep, order.end(), more_likely);
  }
  double total = 0;
  for (int64_t i = 0; i < keep; ++i) total += p[static_cast<size_t>(order[static_cast<size_t>(i)])];
  if (o.top_p < 1) {
    double reached = 0;
    for (int64_t i = 0; i < keep; ++i) {
      reached += p[static_cast<size_t>(order[static_cast<size_t>(i)])];
      if (reached >= o.top_p * total) {
        keep = i + 1;
        total = reached;
        break;
      }
    }
  }
  double u = r.uniform() * total;
  for (int64_t i = 0; i < keep; ++i) {
    const int64_t id = order[static_cast<size_t>(i)];
    u -= p[static_cast<size_t>(id)];
    if (u < 0) return id;
  }
  return order[static_cast<size_t>(keep - 1)];
}

}  // namespace attn::decode
