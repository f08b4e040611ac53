#include "decode/beam_search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "decode/length_penalty.hpp"
#include "kernels/exp_nonpositive.hpp"

namespace attn::decode {

namespace {

// The allowed ids are [0, n) less at most two banned ones: the loops run over the stretches
// between them, so their bodies have no branch and vectorise.
struct allowed_stretches {
  int64_t begin[3], end[3];
  int count = 0;
};

allowed_stretches stretches_of(int64_t n, banned_tokens banned) {
  int64_t cut[2];
  int cuts = 0;
  for (const int64_t b : {banned.first, banned.second})
    if (b >= 0 && b < n && (cuts == 0 || cut[0] != b)) cut[cuts++] = b;
  if (cuts == 2 && cut[0] > cut[1]) std::swap(cut[0], cut[1]);
  allowed_stretches r;
  int64_t from = 0;
  for (int k = 0; k < cuts; ++k) {
    r.begin[r.count] = from;
    r.end[r.count++] = cut[k];
    from = cut[k] + 1;
  }
  r.begin[r.count] = from;
  r.end[r.count++] = n;
  return r;
}

constexpr int sum_lanes = 16;

}  // namespace

// The exponentials in float (kernels::exp_nonpositive, relative error near 1e-7: far below any
// difference a beam's ranking rests on), 16 at a time, each added to its own double lane in id
// order; the lanes are added last. A fixed order, so the same bits on every code path: the
// double sum of a scalar loop kept this to one exponential at a time, 13% of a beam-5
// translation on one thread.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
double log_sum_exp(std::span<const float> scores, banned_tokens banned) {
  const float* s = scores.data();
  const allowed_stretches parts = stretches_of(static_cast<int64_t>(scores.size()), banned);
  constexpr float none = -std::numeric_limits<float>::infinity();
  float top = none;
  for (int p = 0; p < parts.count; ++p) {
#pragma omp simd reduction(max : top)
    for (int64_t i = parts.begin[p]; i < parts.end[p]; ++i) top = s[i] > top ? s[i] : top;
  }
  if (top == none) return -std::numeric_limits<double>::infinity();
  double lane[sum_lanes] = {};
  for (int p = 0; p < parts.count; ++p) {
    int64_t i = parts.begin[p];
    for (; i + sum_lanes <= parts.end[p]; i += sum_lanes) {
      float e[sum_lanes];
#pragma omp simd
      for (int j = 0; j < sum_lanes; ++j) e[j] = kernels::exp_nonpositive(s[i + j] - top);
#pragma omp simd
      for (int j = 0; j < sum_lanes; ++j) lane[j] += static_cast<double>(e[j]);
    }
    for (int j = 0; i < parts.end[p]; ++i, ++j) lane[j] += static_cast<double>(kernels::exp_nonpositive(s[i] - top));
  }
  double sum = 0;
  for (const double l : lane) sum += l;
  return static_cast<double>(top) + std::log(sum);
}

void log_probabilities(std::span<const float> scores, banned_tokens banned, std::vector<double>& out) {
  const double log_sum = log_sum_exp(scores, banned);
  out.assign(scores.size(), -std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < scores.size(); ++i)
    if (banned.allows(static_cast<int64_t>(i))) out[i] = static_cast<double>(scores[i]) - log_sum;
}

std::vector<int64_t> best_tokens(std::span<const float> scores, banned_tokens banned, size_t k) {
  // One pass keeping the k best so far in order; a later token with an equal score comes after.
  std::vector<int64_t> best;
  best.reserve(k + 1);
  for (int64_t i = 0; i < static_cast<int64_t>(scores.size()); ++i) {
    const float si = scores[static_cast<size_t>(i)];
    if (!banned.allows(i) || k == 0 || (best.size() == k && !(si > scores[static_cast<size_t>(best.back())]))) continue;
    auto at = best.end();
    while (at != best.begin() && si > scores[static_cast<size_t>(*(at - 1))]) --at;
    best.insert(at, i);
    if (best.size() > k) best.pop_back();
  }
  return best;
}

namespace {

struct live_prefix {
  hypothesis h;
  std::unique_ptr<decoder_state> state;
  std::span<const float> scores;  // of the token after h.tokens
};

struct extension {
  double log_probability;  // of the prefix with the token
  size_t parent;           // index in the beam
  int64_t token;
};

// Higher log-probability first; ties to the earlier prefix, then the lower token id, so the
// beam never depends on how a sort broke a tie.
bool goes_before(const extension& a, const extension& b) {
  if (a.log_probability != b.log_probability) return a.log_probability > b.log_probability;
  if (a.parent != b.parent) return a.parent < b.parent;
  return a.token < b.token;
}

}  // namespace

std::vector<hypothesis> beam_search(const autoregressive_model& model, std::span<const int64_t> prompt,
                                    const beam_options& o) {
  const auto beam = static_cast<size_t>(o.beam), n_best = static_cast<size_t>(o.n_best);
  std::vector<hypothesis> finished;
  std::vector<live_prefix> alive;
  {
    live_prefix root;
    root.state = model.start();
    root.scores = model.read(*root.state, prompt);
    alive.push_back(std::move(root));
  }
  if (o.max_tokens == 0) return {hypothesis{}};
  const auto rank_finished = [&] {
    std::stable_sort(finished.begin(), finished.end(),
                     [](const hypothesis& a, const hypothesis& b) { return a.score > b.score; });
    if (finished.size() > n_best) finished.resize(n_best);
  };
  std::vector<extension> extensions;
  for (int64_t n = 0; n < o.max_tokens && !alive.empty(); ++n) {
    const bool last = n + 1 == o.max_tokens;
    // Each prefix's 2·beam best tokens are all the step can use: at most `beam` extensions
    // finish (one end token per prefix), so the best 2·beam hold `beam` that go on.
    extensions.clear();
    for (size_t i = 0; i < alive.size(); ++i) {
      // log p(token) = score − log Σ exp(scores): the order of the scores is the order of the
      // log-probabilities, so only the 2·beam best need theirs.
      const double log_sum = log_sum_exp(alive[i].scores, o.banned);
      for (const int64_t t : best_tokens(alive[i].scores, o.banned, 2 * beam))
        extensions.push_back(
            {alive[i].h.log_probability + (static_cast<double>(alive[i].scores[static_cast<size_t>(t)]) - log_sum), i, t});
    }
    std::sort(extensions.begin(), extensions.end(), goes_before);
    // The best `beam` extensions that finish are kept; the best `beam` that do not go on.
    const auto length = n + 1;  // every extension at this step has n + 1 scored tokens
    std::vector<extension> going_on;
    for (size_t rank = 0; rank < extensions.size(); ++rank) {
      const extension& e = extensions[rank];
      const bool ends = e.token == o.end;
      if (ends || last) {
        if (rank >= beam) continue;
        hypothesis h;
        h.tokens = alive[e.parent].h.tokens;
        if (!ends) h.tokens.push_back(e.token);
        h.log_probability = e.log_probability;
        h.score = e.log_probability / length_normalizer(length, o.length_penalty);
        h.ended = ends;
        finished.push_back(std::move(h));
      } else if (going_on.size() < beam) {
        going_on.push_back(e);
      }
      if (going_on.size() == beam && rank + 1 >= beam) break;
    }
    rank_finished();
    // Stop when no live prefix can reach the n-best list: its log-probability can only fall,
    // and the normaliser is monotone in the length, so its best is s / the larger normaliser
    // of the shortest and the longest lengths still open to it.
    if (finished.size() == n_best && !going_on.empty()) {
      const double widest = std::max(length_normalizer(length + 1, o.length_penalty),
                                     length_normalizer(o.max_tokens, o.length_penalty));
      const bool hopeless = std::all_of(going_on.begin(), going_on.end(), [&](const extension& e) {
        return e.log_probability / widest <= finished.back().score;
      });
      if (hopeless) break;
    }
    // The next beam: a prefix continued k ways is copied k − 1 times and moved once.
    std::vector<size_t> children(alive.size(), 0);
    for (const extension& e : going_on) ++children[e.parent];
    std::vector<live_prefix> next;
    next.reserve(going_on.size());
    std::vector<decoder_state*> states;
    std::vector<int64_t> tokens;
    for (const extension& e : going_on) {
      live_prefix& parent = alive[e.parent];
      live_prefix child;
      child.h.tokens = parent.h.tokens;
      child.h.tokens.push_back(e.token);
      child.h.log_probability = e.log_probability;
      child.state = --children[e.parent] > 0 ? parent.state->copy() : std::move(parent.state);
      states.push_back(child.state.get());
      tokens.push_back(e.token);
      next.push_back(std::move(child));
    }
    // Every child reads its token, in one pass where the model can (model.step_each).
    const std::vector<std::span<const float>> scores = model.step_each(states, tokens);
    for (size_t k = 0; k < next.size(); ++k) next[k].scores = scores[k];
    alive = std::move(next);
  }
  return finished;
}

}  // namespace attn::decode
