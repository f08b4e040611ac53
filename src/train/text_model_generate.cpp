// attn::text_model::generate: a language model continues a text, through src/decode/: the
// causal LM as an autoregressive model (decode/causal_lm_decoding.hpp), and one token at a time
// greedy or sampled (decode/token_stream.hpp), or beam search (decode/beam_search.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "attn/detokenize.hpp"
#include "attn/error.hpp"
#include "attn/tokenizer.hpp"
#include "decode/beam_search.hpp"
#include "decode/causal_lm_decoding.hpp"
#include "decode/greedy.hpp"
#include "decode/sampling.hpp"
#include "decode/token_stream.hpp"
#include "train/lm_stream.hpp"
#include "train/rng.hpp"
#include "train/text_model_impl.hpp"

namespace attn {

namespace {

void check_options(const generation_options& o) {
  if (o.max_words < 0) throw_usage(fmt::format("--max-words must be ≥ 0, got {}", o.max_words));
  // At 100 the draw is already all but uniform; above, a value is a slip (as the CLI's --temperature).
  if (!(o.temperature >= 0 && o.temperature <= 100))
    throw_usage(fmt::format("--temperature must be in [0, 100], got {}", o.temperature));
  if (o.top_k < 0) throw_usage(fmt::format("--top-k must be ≥ 0, got {}", o.top_k));
  if (!(o.top_p > 0 && o.top_p <= 1)) throw_usage(fmt::format("--top-p must be in (0, 1], got {}", o.top_p));
  if (o.beam < 0) throw_usage(fmt::format("--beam must be ≥ 0, got {}", o.beam));
  if (o.n_best < 0) throw_usage(fmt::format("--n-best must be ≥ 0, got {}", o.n_best));
  if (o.n_best > 0 && o.beam == 0) throw_usage("--n-best needs --beam");
  if (o.n_best > o.beam && o.beam > 0)
    throw_usage(fmt::format("--n-best must be at most --beam ({}), got {}", o.beam, o.n_best));
  // Beyond ±10 the normaliser's powers dwarf every log-probability: a slip.
  if (!(o.length_penalty >= -10 && o.length_penalty <= 10))
    throw_usage(fmt::format("--length-penalty must be in [-10, 10], got {}", o.length_penalty));
}

}  // namespace

generation text_model::generate(std::string_view prompt, const generation_options& o,
                                const std::function<void(const std::string&)>& on_text) const {
  const impl& m = *impl_;
  if (m.net.as<models::causal_lm<float>>() == nullptr)  // the one model that steps
    throw_usage(fmt::format("generate needs a language model (--task lm); this is a {} model",
                            task_name(m.config.task)));
  check_options(o);
  const train::word_index& words = m.inputs;
  const int64_t end = words.find(train::end_token), unknown = words.find(train::unknown_token);
  generation g;
  std::vector<int64_t> history{end};  // a text starts as if a paragraph had just ended
  for (const std::string& t : m.tokenizer.tokens(prompt)) {
    const int64_t id = words.find(t);
    if (id < 0) g.unknown.push_back(t);
    g.prompt.push_back(id < 0 ? train::unknown_token : t);
    history.push_back(id < 0 ? unknown : id);
  }
  const decode::causal_lm_decoding model(m.net);
  const decode::banned_tokens banned{unknown, o.ignore_eos ? end : -1};
  // Each token as readable text: the continuation carries on the prompt's sentence.
  text::text_tokenizer::writer text = m.tokenizer.text_writer();
  for (const std::string& t : g.prompt) text.next(t);
  if (o.beam > 0) {
    decode::beam_options b;
    b.beam = o.beam;
    b.n_best = std::max<int64_t>(1, o.n_best);
    b.length_penalty = o.length_penalty;
    b.max_tokens = o.max_words;
    b.end = end;
    b.banned = banned;
    const std::vector<decode::hypothesis> found = decode::beam_search(model, history, b);
    for (const decode::hypothesis& h : found) {
      generated_text t;
      text::text_tokenizer::writer continuation = text;
      for (const int64_t id : h.tokens) {
        t.tokens.push_back(words.words()[static_cast<size_t>(id)]);
        t.text += continuation.next(t.tokens.back());
      }
      t.score = h.score;
      t.log_probability = h.log_probability;
      t.ended = h.ended;
      g.n_best.push_back(std::move(t));
    }
    const generated_text& best = g.n_best.front();
    g.made = static_cast<int64_t>(best.tokens.size());
    g.ended = best.ended;
    if (on_text) {
      text::text_tokenizer::writer continuation = text;
      for (const std::string& token : best.tokens) on_text(continuation.next(token));
    } else {
      g.tokens = best.tokens;
      g.text = best.text;
    }
    if (o.n_best == 0) g.n_best.clear();
    return g;
  }
  train::rng r(o.seed);
  const decode::sampling_options sampling{o.temperature, o.top_k, o.top_p};
  const decode::stream_result made = decode::stream_tokens(
      model, history, o.max_words, end,
      [&](std::span<const float> scores) {
        return o.temperature == 0 ? decode::most_likely(scores, banned) : decode::sample(scores, banned, sampling, r);
      },
      [&](int64_t next) {
        const std::string& token = words.words()[static_cast<size_t>(next)];
        const std::string piece = text.next(token);
        if (on_text) {
          on_text(piece);
        } else {
          g.tokens.push_back(token);
          g.text += piece;
        }
      });
  g.made = made.made;
  g.ended = made.ended;
  return g;
}

}  // namespace attn
