// src/decode/: beam search against exhaustive search (a beam wide enough to keep every prefix
// finds brute force's n-best list) and against greedy decoding (beam 1, no length penalty); the
// length penalty's effect; sampling's top-k and top-p edge cases; the causal LM's decoding
// state against the one-token-at-a-time loop generation used before src/decode/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "attn/text_model.hpp"
#include "decode/autoregressive_model.hpp"
#include "decode/beam_search.hpp"
#include "decode/causal_lm_decoding.hpp"
#include "decode/greedy.hpp"
#include "decode/length_penalty.hpp"
#include "decode/sampling.hpp"
#include "decode/token_stream.hpp"
#include "models/causal_lm.hpp"
#include "models/network.hpp"
#include "train/rng.hpp"

namespace {

using attn::decode::autoregressive_model;
using attn::decode::banned_tokens;
using attn::decode::beam_options;
using attn::decode::decoder_state;
using attn::decode::hypothesis;

// A model whose scores are a fixed pseudo-random function of the whole prefix read: every
// prefix has its own distribution, so greedy choices are rarely the best sequences and a beam
// that drops a prefix it needed shows.
struct prefix_state final : decoder_state {
  std::vector<int64_t> read;
  std::vector<float> scores;
  std::unique_ptr<decoder_state> copy() const override { return std::make_unique<prefix_state>(*this); }
};

class table_model final : public autoregressive_model {
 public:
  table_model(int64_t v, uint64_t seed, float spread = 3.0f) : v_(v), seed_(seed), spread_(spread) {}
  int64_t vocabulary() const override { return v_; }
  std::unique_ptr<decoder_state> start() const override { return std::make_unique<prefix_state>(); }
  std::span<const float> read(decoder_state& state, std::span<const int64_t> tokens) const override {
    auto& s = static_cast<prefix_state&>(state);
    s.read.insert(s.read.end(), tokens.begin(), tokens.end());
    reads_ += static_cast<int64_t>(tokens.size());
    uint64_t h = seed_;
    for (const int64_t t : s.read) h = mix(h ^ static_cast<uint64_t>(t + 1));
    s.scores.resize(static_cast<size_t>(v_));
    for (float& x : s.scores) {
      h = mix(h);
      x = spread_ * (2.0f * static_cast<float>(h >> 40) / static_cast<float>(1 << 24) - 1.0f);
    }
    return s.scores;
  }
  mutable int64_t reads_ = 0;

 private:
  static uint64_t mix(uint64_t z) {  // splitmix64's finaliser
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int64_t v_;
  uint64_t seed_;
  float spread_;
};

// Every hypothesis beam search could return (each ending at the end token, or cut at
// max_tokens), scored as beam search scores them; best first.
void enumerate(const autoregressive_model& m, std::vector<int64_t> prompt, std::vector<int64_t> made, double log_p,
               const beam_options& o, std::vector<hypothesis>& all) {
  auto state = m.start();
  std::vector<int64_t> tokens = prompt;
  tokens.insert(tokens.end(), made.begin(), made.end());
  std::vector<double> lp;
  attn::decode::log_probabilities(m.read(*state, tokens), o.banned, lp);
  const auto length = static_cast<int64_t>(made.size()) + 1;
  for (int64_t t = 0; t < m.vocabulary(); ++t) {
    if (!o.banned.allows(t)) continue;
    const double total = log_p + lp[static_cast<size_t>(t)];
    std::vector<int64_t> longer = made;
    if (t != o.end) longer.push_back(t);
    if (t == o.end || length == o.max_tokens) {
      all.push_back({longer, total, total / attn::decode::length_normalizer(length, o.length_penalty), t == o.end});
    } else {
      enumerate(m, prompt, longer, total, o, all);
    }
  }
}

std::vector<hypothesis> exhaustive(const autoregressive_model& m, const std::vector<int64_t>& prompt,
                                   const beam_options& o) {
  std::vector<hypothesis> all;
  enumerate(m, prompt, {}, 0.0, o, all);
  std::stable_sort(all.begin(), all.end(), [](const hypothesis& a, const hypothesis& b) { return a.score > b.score; });
  return all;
}

std::string show(const std::vector<int64_t>& tokens) {
  std::string s;
  for (const int64_t t : tokens) s += std::to_string(t) + " ";
  return s;
}

// A beam of V·(V − 1)^(L − 2) keeps every prefix up to the last step, whose candidates all have
// the same length (so ranking them by log-probability is ranking by score): the n-best list must
// be brute force's, scores to the last bit (the same sums in the same order) and tokens.
TEST(BeamSearch, WideEnoughItIsExhaustiveSearch) {
  int64_t cases = 0;
  for (const int64_t v : {3, 4, 5})
    for (const int64_t steps : {1, 2, 3, 4})
      for (const double alpha : {0.0, 0.6, 1.0, 2.5, 6.0, -0.7})
        for (uint64_t seed = 0; seed < 12; ++seed) {
          if (steps == 4 && v != 3) continue;               // (the slowest: fewer cases)
          if (v == 5 && steps == 3 && seed >= 4) continue;
          const table_model m(v, seed * 1000 + static_cast<uint64_t>(v * 10 + steps));
          beam_options o;
          o.end = v - 1;
          o.max_tokens = steps;
          o.length_penalty = alpha;
          o.beam = steps == 1 ? v : v * static_cast<int64_t>(std::pow(v - 1, steps - 2));
          const std::vector<hypothesis> truth = exhaustive(m, {0}, o);
          // A short list lets the search stop early (its bound on what live prefixes can still
          // score): that must not change the list either.
          for (const int64_t n_best : {int64_t{1}, int64_t{2}, std::min<int64_t>(o.beam, static_cast<int64_t>(truth.size()))}) {
          o.n_best = n_best;
          const std::vector<hypothesis> found = attn::decode::beam_search(m, std::vector<int64_t>{0}, o);
          ASSERT_EQ(found.size(), static_cast<size_t>(o.n_best))
              << "V " << v << ", " << steps << " steps, alpha " << alpha << ", seed " << seed;
          for (size_t i = 0; i < found.size(); ++i) {
            ASSERT_EQ(found[i].score, truth[i].score)
                << "V " << v << ", " << steps << " steps, alpha " << alpha << ", seed " << seed << ", rank " << i
                << ": beam " << show(found[i].tokens) << "brute force " << show(truth[i].tokens);
            ASSERT_EQ(found[i].tokens, truth[i].tokens) << "rank " << i;
            ASSERT_EQ(found[i].ended, truth[i].ended) << "rank " << i;
            ASSERT_EQ(found[i].log_probability, truth[i].log_probability) << "rank " << i;
          }
          }
          ++cases;
        }
  EXPECT_GT(cases, 600);
}

// Without an end token every prefix goes on, so a beam of exactly V^(L − 1) is what keeps them
// all to the last step: one fewer live prefix (a beam that keeps beam − 1) loses exhaustiveness.
TEST(BeamSearch, WithoutAnEndTokenABeamOfVToTheLMinusOneIsExhaustive) {
  for (const int64_t v : {2, 3, 4})
    for (const int64_t steps : {2, 3})
      for (const double alpha : {0.0, 1.0})
        for (uint64_t seed = 0; seed < 12; ++seed) {
          const table_model m(v, seed * 77 + static_cast<uint64_t>(v * 10 + steps));
          beam_options o;
          o.end = -1;
          o.max_tokens = steps;
          o.length_penalty = alpha;
          o.beam = static_cast<int64_t>(std::pow(v, steps - 1));
          o.n_best = o.beam;
          const std::vector<hypothesis> truth = exhaustive(m, {0}, o);
          const std::vector<hypothesis> found = attn::decode::beam_search(m, std::vector<int64_t>{0}, o);
          ASSERT_EQ(found.size(), static_cast<size_t>(o.n_best)) << "V " << v << ", " << steps << " steps";
          for (size_t i = 0; i < found.size(); ++i)
            ASSERT_EQ(found[i].tokens, truth[i].tokens)
                << "V " << v << ", " << steps << " steps, alpha " << alpha << ", seed " << seed << ", rank " << i
                << ": beam " << show(found[i].tokens) << "(" << found[i].score << ") brute force "
                << show(truth[i].tokens) << "(" << truth[i].score << ")";
        }
}

// A narrower beam can only miss: its best is never better than brute force's, and its list is
// sorted, each score its log-probability over the normaliser of its length.
TEST(BeamSearch, NarrowBeamNeverBeatsExhaustiveAndRanksItsList) {
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const table_model m(6, seed);
    beam_options o;
    o.end = 2;
    o.max_tokens = 4;
    o.beam = 3;
    o.n_best = 3;
    const std::vector<hypothesis> truth = exhaustive(m, {1, 4}, o);
    const std::vector<hypothesis> found = attn::decode::beam_search(m, std::vector<int64_t>{1, 4}, o);
    ASSERT_EQ(found.size(), 3u);
    EXPECT_LE(found[0].score, truth[0].score);
    for (size_t i = 0; i < found.size(); ++i) {
      const auto length = static_cast<int64_t>(found[i].tokens.size()) + (found[i].ended ? 1 : 0);
      EXPECT_DOUBLE_EQ(found[i].score, found[i].log_probability / attn::decode::length_normalizer(length, 1.0));
      if (i > 0) {
        EXPECT_GE(found[i - 1].score, found[i].score);
      }
    }
  }
}

// Beam 1 without a length penalty follows greedy decoding's path and stops where it stops.
TEST(BeamSearch, BeamOneWithoutPenaltyIsGreedy) {
  for (uint64_t seed = 0; seed < 200; ++seed)
    for (const int64_t max_tokens : {1, 3, 8, 20}) {
      const table_model m(5 + static_cast<int64_t>(seed % 4), seed);
      const int64_t end = seed % 2 == 0 ? 0 : m.vocabulary() - 1;
      const banned_tokens banned{seed % 3 == 0 ? int64_t{1} : -1, -1};
      std::vector<int64_t> greedy;
      const attn::decode::stream_result r = attn::decode::stream_tokens(
          m, std::vector<int64_t>{2}, max_tokens, end,
          [&](std::span<const float> s) { return attn::decode::most_likely(s, banned); },
          [&](int64_t t) { greedy.push_back(t); });
      beam_options o;
      o.beam = 1;
      o.length_penalty = 0;
      o.max_tokens = max_tokens;
      o.end = end;
      o.banned = banned;
      const std::vector<hypothesis> found = attn::decode::beam_search(m, std::vector<int64_t>{2}, o);
      ASSERT_EQ(found.size(), 1u);
      ASSERT_EQ(found[0].tokens, greedy) << "seed " << seed << ", max " << max_tokens;
      ASSERT_EQ(found[0].ended, r.ended) << "seed " << seed;
    }
}

// On the built-in language model: --beam 1 --length-penalty 0 prints what --temperature 0 prints.
TEST(BeamSearch, BeamOneWithoutPenaltyIsGreedyOnTheBuiltInModel) {
  const attn::text_model m = attn::text_model::builtin_lm();
  for (const char* prompt : {"", "The river", "In 1850 the city"}) {
    attn::generation_options greedy;
    greedy.temperature = 0;
    greedy.max_words = 25;
    attn::generation_options beam = greedy;
    beam.beam = 1;
    beam.length_penalty = 0;
    const attn::generation a = m.generate(prompt, greedy), b = m.generate(prompt, beam);
    EXPECT_EQ(a.tokens, b.tokens) << prompt;
    EXPECT_EQ(a.text, b.text) << prompt;
    EXPECT_EQ(a.ended, b.ended) << prompt;
  }
}

// Where the end token is likely now but a longer text is likelier per token, the penalty
// decides: α = 0 keeps the short text, a large α the longer one.
struct fixed_state final : decoder_state {
  std::vector<int64_t> read;
  std::vector<float> scores;
  std::unique_ptr<decoder_state> copy() const override { return std::make_unique<fixed_state>(*this); }
};
class two_way_model final : public autoregressive_model {
 public:
  // tokens: 0 = end, 1 = "a", 2 = "b". After the prompt: end 0.5, a 0.5, b ≈ 0; after "a": end 0.9.
  int64_t vocabulary() const override { return 3; }
  std::unique_ptr<decoder_state> start() const override { return std::make_unique<fixed_state>(); }
  std::span<const float> read(decoder_state& state, std::span<const int64_t> tokens) const override {
    auto& s = static_cast<fixed_state&>(state);
    s.read.insert(s.read.end(), tokens.begin(), tokens.end());
    const bool after_a = s.read.back() == 1;
    s.scores = after_a ? std::vector<float>{std::log(0.9f), std::log(0.05f), std::log(0.05f)}
                       : std::vector<float>{std::log(0.5f), std::log(0.5f), -30.0f};
    return s.scores;
  }
};

TEST(BeamSearch, LengthPenaltyChoosesBetweenShortAndLong) {
  const two_way_model m;
  beam_options o;
  o.beam = 2;
  o.n_best = 2;
  o.end = 0;
  o.max_tokens = 5;
  o.length_penalty = 0;  // "" scores log 0.5 = -0.69; "a" log 0.5 + log 0.9 = -0.80
  std::vector<hypothesis> found = attn::decode::beam_search(m, std::vector<int64_t>{2}, o);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_TRUE(found[0].tokens.empty());
  EXPECT_TRUE(found[0].ended);
  EXPECT_NEAR(found[0].score, std::log(0.5), 1e-6);
  EXPECT_EQ(found[1].tokens, std::vector<int64_t>{1});
  // α = 1: "" −0.69 / 1 (its <eos>); "a" −0.80 / 2 = −0.40; "a a" −3.79 / 3 = −1.26
  o.length_penalty = 1;
  found = attn::decode::beam_search(m, std::vector<int64_t>{2}, o);
  EXPECT_EQ(found[0].tokens, std::vector<int64_t>{1});
  EXPECT_NEAR(found[0].score, (std::log(0.5) + std::log(0.9)) / 2.0, 1e-6);
  EXPECT_TRUE(found[1].tokens.empty());
}

TEST(BeamSearch, EndOfSequenceAndLimits) {
  const table_model m(6, 5);
  beam_options o;
  o.beam = 4;
  o.n_best = 4;
  o.end = 5;
  o.max_tokens = 0;  // nothing to make: one empty hypothesis
  std::vector<hypothesis> found = attn::decode::beam_search(m, std::vector<int64_t>{0}, o);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].tokens.empty());
  EXPECT_FALSE(found[0].ended);
  o.max_tokens = 6;
  o.banned = {5, 3};  // the end token banned (--ignore-eos) and another: every hypothesis runs to the limit
  found = attn::decode::beam_search(m, std::vector<int64_t>{0}, o);
  ASSERT_EQ(found.size(), 4u);
  for (const hypothesis& h : found) {
    EXPECT_EQ(h.tokens.size(), 6u);
    EXPECT_FALSE(h.ended);
    EXPECT_EQ(std::count(h.tokens.begin(), h.tokens.end(), 3), 0);
  }
  // The first token is the end token's only choice: the list holds what exists.
  o.banned = {};
  o.max_tokens = 1;
  o.beam = 8;
  o.n_best = 8;
  found = attn::decode::beam_search(m, std::vector<int64_t>{0}, o);
  EXPECT_EQ(found.size(), 6u);
  EXPECT_EQ(std::count_if(found.begin(), found.end(), [](const hypothesis& h) { return h.ended; }), 1);
}

// The greedy and sampling loop reads the prompt once and each made token but the last.
TEST(TokenStream, ReadsThePromptAndEveryTokenButTheLast) {
  const table_model m(7, 3);
  int64_t made = 0;
  const attn::decode::stream_result r = attn::decode::stream_tokens(
      m, std::vector<int64_t>{1, 2, 3}, 5, -1, [&](std::span<const float>) { return int64_t{4}; },
      [&](int64_t) { ++made; });
  EXPECT_EQ(made, 5);
  EXPECT_EQ(r.made, 5);
  EXPECT_FALSE(r.ended);
  EXPECT_EQ(m.reads_, 3 + 4);
}

std::vector<float> random_scores(std::mt19937& g, int64_t v) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> s(static_cast<size_t>(v));
  for (float& x : s) x = normal(g);
  return s;
}

TEST(Sampling, TopOneAndATinyNucleusAreGreedy) {
  std::mt19937 g(1);
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const std::vector<float> s = random_scores(g, 1 + static_cast<int64_t>(seed % 40));
    const banned_tokens none;
    attn::train::rng r(seed);
    EXPECT_EQ(attn::decode::sample(s, none, {.temperature = 0.8, .top_k = 1, .top_p = 1.0}, r),
              attn::decode::most_likely(s, none));
    EXPECT_EQ(attn::decode::sample(s, none, {.temperature = 1.7, .top_k = 0, .top_p = 1e-12}, r),
              attn::decode::most_likely(s, none));
  }
}

// Ties at the top-k cut go to the lower ids; top_k past V is no cut; a banned token is never drawn.
TEST(Sampling, CutsTiesAndBannedTokens) {
  const std::vector<float> s{1, 1, 1, 0, 5};
  const banned_tokens banned{4, -1};  // the likeliest is banned
  std::vector<int64_t> seen(5, 0);
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    attn::train::rng r(seed);
    ++seen[static_cast<size_t>(attn::decode::sample(s, banned, {.temperature = 1, .top_k = 2, .top_p = 1}, r))];
  }
  EXPECT_GT(seen[0], 800);
  EXPECT_GT(seen[1], 800);
  EXPECT_EQ(seen[2] + seen[3] + seen[4], 0);
  seen.assign(5, 0);
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    attn::train::rng r(seed), same(seed);
    const int64_t wide = attn::decode::sample(s, banned, {.temperature = 1, .top_k = 99, .top_p = 1}, r);
    EXPECT_EQ(wide, attn::decode::sample(s, banned, {.temperature = 1, .top_k = 4, .top_p = 1}, same));
    ++seen[static_cast<size_t>(wide)];
  }
  EXPECT_EQ(seen[4], 0);
  EXPECT_GT(seen[3], 0);
}

// The nucleus keeps the fewest tokens whose probability reaches p: with probabilities ½, ¼, ¼
// (exactly representable), p = ½ keeps one token and p just above ½ keeps two.
TEST(Sampling, NucleusBoundary) {
  const std::vector<float> s{std::log(0.25f), std::log(0.5f), std::log(0.25f)};
  std::vector<int64_t> seen(3, 0);
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    attn::train::rng r(seed);
    ++seen[static_cast<size_t>(attn::decode::sample(s, {}, {.temperature = 1, .top_k = 0, .top_p = 0.5}, r))];
  }
  EXPECT_EQ(seen[1], 1000);
  seen.assign(3, 0);
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    attn::train::rng r(seed);
    ++seen[static_cast<size_t>(attn::decode::sample(s, {}, {.temperature = 1, .top_k = 0, .top_p = 0.51}, r))];
  }
  EXPECT_GT(seen[0], 0);  // the tie between 0 and 2 goes to the lower id
  EXPECT_EQ(seen[2], 0);
}

// One uniform draw per call, whatever the cut: a seed's words depend on that order.
TEST(Sampling, DrawsOnceACall) {
  std::mt19937 g(2);
  const std::vector<float> s = random_scores(g, 50);
  for (const attn::decode::sampling_options o :
       {attn::decode::sampling_options{1, 0, 1}, attn::decode::sampling_options{0.5, 10, 1},
        attn::decode::sampling_options{2, 0, 0.7}, attn::decode::sampling_options{1, 3, 0.2}}) {
    attn::train::rng r(9), after(9);
    attn::decode::sample(s, {}, o, r);
    after.uniform();
    EXPECT_EQ(r.next(), after.next());
  }
}

// The causal LM's state against the loop generate ran before src/decode/ (written out here as
// the specification): a cache that restarts from its latest half whenever it is full, and a
// prompt longer than the context read from its last `capacity` tokens. Same tokens → the same
// logits, bit for bit, on a context of 5 over 40 tokens.
TEST(CausalLmDecoding, RestartsPastTheContextAsBefore) {
  using attn::nn::network_shape;
  const network_shape shape{.vocabulary = 11, .new_words = 0, .embed = 12, .width = 12, .heads = 3, .layers = 2,
                            .feedforward = 17, .norm_first = true, .pool = attn::nn::pool_kind::token,
                            .hidden = 12, .classes = 11, .positions = 5, .causal = true,
                            .train_embeddings = true, .dropout = 0.0, .tied_output = true};
  std::vector<int64_t> rows(11);
  for (int64_t i = 0; i < 11; ++i) rows[static_cast<size_t>(i)] = i;
  attn::models::network<float> net(shape, rows);
  std::mt19937 g(4);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (auto* p : net.parameters())
    for (float& x : p->value) x = normal(g);
  std::vector<int64_t> history;
  for (int i = 0; i < 48; ++i) history.push_back(static_cast<int64_t>(g() % 11));
  for (const size_t prompt : {size_t{1}, size_t{3}, size_t{5}, size_t{8}}) {
    // Before: feed history from `fed` on; a full cache restarts from the latest half.
    attn::models::causal_lm_decoder before(*net.as<attn::models::causal_lm<float>>());
    const int64_t capacity = before.capacity();
    size_t fed = prompt > static_cast<size_t>(capacity) ? prompt - static_cast<size_t>(capacity) : 0;
    std::vector<float> expected;
    const auto feed_to = [&](size_t upto) {
      for (; fed < upto; ++fed) {
        if (before.length() == capacity) {
          before.clear();
          const size_t keep = static_cast<size_t>(std::max<int64_t>(1, capacity / 2));
          for (size_t i = fed - std::min(fed, keep - 1); i < fed; ++i) before.step(history[i]);
        }
        expected = before.step(history[fed]);
      }
    };
    const attn::decode::causal_lm_decoding after(net);
    auto state = after.start();
    feed_to(prompt);
    std::span<const float> got = after.read(*state, std::span<const int64_t>(history).first(prompt));
    ASSERT_TRUE(std::equal(got.begin(), got.end(), expected.begin(), expected.end())) << "prompt " << prompt;
    for (size_t t = prompt; t < history.size(); ++t) {
      feed_to(t + 1);
      got = after.step(*state, history[t]);
      ASSERT_TRUE(std::equal(got.begin(), got.end(), expected.begin(), expected.end()))
          << "prompt " << prompt << ", token " << t;
    }
    // A copy goes on as the original would.
    const std::unique_ptr<attn::decode::decoder_state> copy = state->copy();
    const std::span<const float> from_original = after.step(*state, 3);
    const std::vector<float> original(from_original.begin(), from_original.end());
    const std::span<const float> from_copy = after.step(*copy, 3);
    ASSERT_TRUE(std::equal(from_copy.begin(), from_copy.end(), original.begin(), original.end()));
  }
}

}  // namespace

namespace {

// The log-sum of the scores' exponentials (float exponentials, a double sum) against long
// double, over awkward lengths and with banned tokens anywhere (first, last, in either order,
// twice the same, past the end); every token banned: −∞.
TEST(BeamSearch, LogSumExpMatchesLongDoubleOverTheAllowedTokens) {
  std::mt19937 rng(41);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  for (size_t n : {1u, 2u, 7u, 15u, 16u, 17u, 33u, 63u, 65u, 129u, 8000u}) {
    std::vector<float> scores(n);
    for (float& s : scores) s = normal(rng);
    scores[0] = 50.0f;  // a banned token far above the rest must not count
    const attn::decode::banned_tokens banned{.first = 0, .second = n > 3 ? 3 : -1};
    for (const attn::decode::banned_tokens other :
         {attn::decode::banned_tokens{.first = static_cast<int64_t>(n) - 1, .second = 0},
          attn::decode::banned_tokens{.first = 0, .second = 0},
          attn::decode::banned_tokens{.first = static_cast<int64_t>(n) + 5, .second = -1}}) {
      long double top = -INFINITY, sum = 0;
      for (size_t i = 0; i < n; ++i)
        if (other.allows(static_cast<int64_t>(i))) top = std::max(top, static_cast<long double>(scores[i]));
      for (size_t i = 0; i < n; ++i)
        if (other.allows(static_cast<int64_t>(i))) sum += std::exp(static_cast<long double>(scores[i]) - top);
      const double want = top == -INFINITY ? -INFINITY : static_cast<double>(top + std::log(sum));
      if (want == -INFINITY) {
        EXPECT_EQ(attn::decode::log_sum_exp(scores, other), -INFINITY) << n;
      } else {
        EXPECT_NEAR(attn::decode::log_sum_exp(scores, other), want, 1e-6) << n << " banned " << other.first;
      }
    }
    long double top = -INFINITY, sum = 0;
    for (size_t i = 0; i < n; ++i)
      if (banned.allows(static_cast<int64_t>(i))) top = std::max(top, static_cast<long double>(scores[i]));
    for (size_t i = 0; i < n; ++i)
      if (banned.allows(static_cast<int64_t>(i))) sum += std::exp(static_cast<long double>(scores[i]) - top);
    const double got = attn::decode::log_sum_exp(scores, banned);
    if (n == 1) {
      EXPECT_EQ(got, -INFINITY);
      continue;
    }
    EXPECT_NEAR(got, static_cast<double>(top + std::log(sum)), 1e-6) << n;
  }
}

TEST(BeamSearch, BestTokensAreTheHighestAllowedScoresTiesToTheLowerId) {
  const std::vector<float> scores{5, 1, 5, 7, 5, -2, 9};
  const attn::decode::banned_tokens banned{.first = 6, .second = -1};
  EXPECT_EQ(attn::decode::best_tokens(scores, banned, 3), (std::vector<int64_t>{3, 0, 2}));
  EXPECT_EQ(attn::decode::best_tokens(scores, banned, 5), (std::vector<int64_t>{3, 0, 2, 4, 1}));
  EXPECT_EQ(attn::decode::best_tokens(scores, banned, 10).size(), 6u);
  EXPECT_TRUE(attn::decode::best_tokens(scores, banned, 0).empty());
}

}  // namespace
