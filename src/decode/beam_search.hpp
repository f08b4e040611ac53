// Beam search: the `beam` most probable prefixes are carried forward together, each extended by
// every token; the most probable `beam` extensions go on. A prefix that chooses the end token, or
// reaches max_tokens, is finished and leaves the beam, which is refilled from the next most
// probable extensions (so `beam` prefixes stay alive while any exist). Finished hypotheses are
// ranked by log-probability / length_normalizer (decode/length_penalty.hpp).
//
// It stops as soon as no live prefix can still enter the n-best list: a prefix's log-probability
// s ≤ 0 only falls, so its normalised score can at best reach s / the largest normaliser of the
// lengths still open to it. That bound is exact, so stopping early never changes the result, and
// with a beam wide enough to keep every prefix (V·(V − 1)^(L − 2) for V tokens and L steps) the
// n-best list is exhaustive search's. With α = 0 and beam 1 it is greedy decoding.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "decode/autoregressive_model.hpp"
#include "decode/banned_tokens.hpp"

namespace attn::decode {

struct beam_options {
  int64_t beam = 4;             // prefixes carried at each step, ≥ 1
  int64_t n_best = 1;           // hypotheses returned at most, 1 … beam
  double length_penalty = 1.0;  // α of |Y|^α (length_penalty.hpp)
  int64_t max_tokens = 100;     // tokens made per hypothesis at most (the end token not counted)
  int64_t end = -1;             // the end token (-1: none): choosing it finishes a hypothesis
  banned_tokens banned;         // never chosen
};

struct hypothesis {
  std::vector<int64_t> tokens;  // made (the end token not included)
  double log_probability = 0;   // Σ log p(token | prompt, tokens before), the end token's included
  double score = 0;             // log_probability / length_normalizer(|Y|, α), what ranks hypotheses
  bool ended = false;           // chose the end token (else: stopped at max_tokens)
};

// The probabilities are the model's softmax renormalised over the allowed tokens, as sampling
// draws from them. Best first; ties keep the order found (shorter first, then the beam's order).
// Fewer than n_best only when fewer hypotheses exist.
std::vector<hypothesis> beam_search(const autoregressive_model& model, std::span<const int64_t> prompt,
                                    const beam_options& o);

// Several searches at once, search k from models[k], prompts[k] and options[k], in lockstep: at
// each step the live prefixes of all of them read their tokens in one models[0]->step_each (a
// network reads its weights once for all the rows). The models must step each other's states:
// one network, different inputs (decode/translation_decoding.hpp: one per source sentence).
// Each list is what beam_search gives that search alone.
std::vector<std::vector<hypothesis>> beam_search_together(std::span<const autoregressive_model* const> models,
                                                          std::span<const std::span<const int64_t>> prompts,
                                                          std::span<const beam_options> options);

// log softmax(scores) over the allowed tokens (−∞ for the banned), in double: each score minus
// log_sum_exp (−∞ when every token is banned).
void log_probabilities(std::span<const float> scores, banned_tokens banned, std::vector<double>& out);
double log_sum_exp(std::span<const float> scores, banned_tokens banned);
// The k allowed tokens of the highest scores, best first; ties to the lower id.
std::vector<int64_t> best_tokens(std::span<const float> scores, banned_tokens banned, size_t k);

}  // namespace attn::decode
