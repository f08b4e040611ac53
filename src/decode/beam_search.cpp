#include "decode/beam_search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "decode/length_penalty.hpp"
#include "kernels/exp_nonpositive.hpp"
#include "kernels/isa_clones.hpp"

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
ATTN_ISA_CLONES(double, log_sum_exp, (std::span<const float> scores, banned_tokens banned), (scores, banned)) {
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

// One pass keeping the k best so far in order; a later token with an equal score comes after.
// Once k are kept, a stretch of 16 scores none above the k-th best is passed over whole (one
// vector comparison): nearly all of a vocabulary is, so the scan costs about what reading the
// scores costs.
ATTN_ISA_CLONES(std::vector<int64_t>, best_tokens, (std::span<const float> scores, banned_tokens banned, size_t k),
                (scores, banned, k)) {
  std::vector<int64_t> best;
  if (k == 0) return best;
  best.reserve(k + 1);
  const float* s = scores.data();
  const auto n = static_cast<int64_t>(scores.size());
  for (int64_t i = 0; i < n;) {
    const int64_t end = std::min<int64_t>(n, i + sum_lanes);
    if (best.size() == k) {
      const float bar = s[best.back()];
      int above = 0;
#pragma omp simd reduction(| : above)
      for (int64_t j = i; j < end; ++j) above |= s[j] > bar ? 1 : 0;
      if (above == 0) {
        i = end;
        continue;
      }
    }
    for (; i < end; ++i) {
      const float si = s[i];
      if (!banned.allows(i) || (best.size() == k && !(si > s[best.back()]))) continue;
      auto at = best.end();
      while (at != best.begin() && si > s[*(at - 1)]) --at;
      best.insert(at, i);
      if (best.size() > k) best.pop_back();
    }
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

// One search, a step at a time: choose() picks the step's extensions and says which states read
// which tokens; read() takes their scores. beam_search runs one; beam_search_together runs
// several in lockstep, their reads in one pass.
class beam_run {
 public:
  beam_run(const autoregressive_model& model, std::span<const int64_t> prompt, const beam_options& o)
      : o_(o), beam_(static_cast<size_t>(o.beam)), n_best_(static_cast<size_t>(o.n_best)) {
    live_prefix root;
    root.state = model.start();
    root.scores = model.read(*root.state, prompt);
    alive_.push_back(std::move(root));
    if (o.max_tokens == 0) {
      finished_ = {hypothesis{}};
      over_ = true;
    }
  }

  // The step's extensions chosen; false when the search is over, else states() must read tokens().
  bool choose();
  std::span<decoder_state* const> states() const { return states_; }
  std::span<const int64_t> tokens() const { return tokens_; }
  // The scores of the token after each of states(), in their order.
  void read(std::span<const std::span<const float>> scores) {
    for (size_t k = 0; k < next_.size(); ++k) next_[k].scores = scores[k];
    alive_ = std::move(next_);
    next_.clear();
    ++n_;
  }
  std::vector<hypothesis> result() && { return std::move(finished_); }

 private:
  void rank_finished() {
    std::stable_sort(finished_.begin(), finished_.end(),
                     [](const hypothesis& a, const hypothesis& b) { return a.score > b.score; });
    if (finished_.size() > n_best_) finished_.resize(n_best_);
  }

  const beam_options& o_;
  size_t beam_, n_best_;
  int64_t n_ = 0;  // tokens made so far
  bool over_ = false;
  std::vector<hypothesis> finished_;
  std::vector<live_prefix> alive_, next_;
  std::vector<extension> extensions_;
  std::vector<decoder_state*> states_;
  std::vector<int64_t> tokens_;
};

bool beam_run::choose() {
  if (over_ || n_ >= o_.max_tokens || alive_.empty()) {
    over_ = true;
    return false;
  }
  const bool last = n_ + 1 == o_.max_tokens;
  // Each prefix's 2·beam best tokens are all the step can use: at most `beam` extensions
  // finish (one end token per prefix), so the best 2·beam hold `beam` that go on.
  extensions_.clear();
  for (size_t i = 0; i < alive_.size(); ++i) {
    // log p(token) = score − log Σ exp(scores): the order of the scores is the order of the
    // log-probabilities, so only the 2·beam best need theirs.
    const double log_sum = log_sum_exp(alive_[i].scores, o_.banned);
    for (const int64_t t : best_tokens(alive_[i].scores, o_.banned, 2 * beam_))
      extensions_.push_back(
          {alive_[i].h.log_probability + (static_cast<double>(alive_[i].scores[static_cast<size_t>(t)]) - log_sum), i, t});
  }
  std::sort(extensions_.begin(), extensions_.end(), goes_before);
  // The best `beam` extensions that finish are kept; the best `beam` that do not go on.
  const auto length = n_ + 1;  // every extension at this step has n + 1 scored tokens
  std::vector<extension> going_on;
  for (size_t rank = 0; rank < extensions_.size(); ++rank) {
    const extension& e = extensions_[rank];
    const bool ends = e.token == o_.end;
    if (ends || last) {
      if (rank >= beam_) continue;
      hypothesis h;
      h.tokens = alive_[e.parent].h.tokens;
      if (!ends) h.tokens.push_back(e.token);
      h.log_probability = e.log_probability;
      h.score = e.log_probability / length_normalizer(length, o_.length_penalty);
      h.ended = ends;
      finished_.push_back(std::move(h));
    } else if (going_on.size() < beam_) {
      going_on.push_back(e);
    }
    if (going_on.size() == beam_ && rank + 1 >= beam_) break;
  }
  rank_finished();
  // Stop when no live prefix can reach the n-best list: its log-probability can only fall,
  // and the normaliser is monotone in the length, so its best is s / the larger normaliser
  // of the shortest and the longest lengths still open to it.
  if (finished_.size() == n_best_ && !going_on.empty()) {
    const double widest = std::max(length_normalizer(length + 1, o_.length_penalty),
                                   length_normalizer(o_.max_tokens, o_.length_penalty));
    const bool hopeless = std::all_of(going_on.begin(), going_on.end(), [&](const extension& e) {
      return e.log_probability / widest <= finished_.back().score;
    });
    if (hopeless) going_on.clear();
  }
  if (going_on.empty()) {
    alive_.clear();
    over_ = true;
    return false;
  }
  // The next beam: a prefix continued k ways is copied k − 1 times and moved once.
  std::vector<size_t> children(alive_.size(), 0);
  for (const extension& e : going_on) ++children[e.parent];
  next_.clear();
  next_.reserve(going_on.size());
  states_.clear();
  tokens_.clear();
  for (const extension& e : going_on) {
    live_prefix& parent = alive_[e.parent];
    live_prefix child;
    child.h.tokens = parent.h.tokens;
    child.h.tokens.push_back(e.token);
    child.h.log_probability = e.log_probability;
    child.state = --children[e.parent] > 0 ? parent.state->copy() : std::move(parent.state);
    states_.push_back(child.state.get());
    tokens_.push_back(e.token);
    next_.push_back(std::move(child));
  }
  return true;
}

}  // namespace

std::vector<hypothesis> beam_search(const autoregressive_model& model, std::span<const int64_t> prompt,
                                    const beam_options& o) {
  beam_run run(model, prompt, o);
  // Every child reads its token, in one pass where the model can (model.step_each).
  while (run.choose()) run.read(model.step_each(run.states(), run.tokens()));
  return std::move(run).result();
}

std::vector<std::vector<hypothesis>> beam_search_together(std::span<const autoregressive_model* const> models,
                                                          std::span<const std::span<const int64_t>> prompts,
                                                          std::span<const beam_options> options) {
  std::vector<beam_run> runs;
  runs.reserve(models.size());
  for (size_t k = 0; k < models.size(); ++k) runs.emplace_back(*models[k], prompts[k], options[k]);
  std::vector<decoder_state*> states;
  std::vector<int64_t> tokens;
  std::vector<beam_run*> stepping;
  for (;;) {
    states.clear();
    tokens.clear();
    stepping.clear();
    for (beam_run& run : runs)
      if (run.choose()) {
        stepping.push_back(&run);
        states.insert(states.end(), run.states().begin(), run.states().end());
        tokens.insert(tokens.end(), run.tokens().begin(), run.tokens().end());
      }
    if (stepping.empty()) break;
    const std::vector<std::span<const float>> scores = models.front()->step_each(states, tokens);
    size_t at = 0;
    for (beam_run* run : stepping) {
      const size_t n = run->states().size();
      run->read({scores.data() + at, n});
      at += n;
    }
  }
  std::vector<std::vector<hypothesis>> found;
  for (beam_run& run : runs) found.push_back(std::move(run).result());
  return found;
}

}  // namespace attn::decode
