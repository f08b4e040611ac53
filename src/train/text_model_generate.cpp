// attn::text_model::generate: a language model continues a text one token at a time, through the
// key-value cache of nn/causal_decoder.hpp, sampling each token as generation_options says.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "attn/detokenize.hpp"
#include "attn/error.hpp"
#include "attn/tokenizer.hpp"
#include "nn/causal_decoder.hpp"
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
}

// The next token from the logits: the most likely (temperature 0; ties to the lower id), or a
// draw from softmax(logits / temperature) cut to the top k and the top p. The banned tokens are
// never chosen (the unknown token; the end token with ignore_eos; -1: none).
int64_t choose(const std::vector<float>& logits, std::array<int64_t, 2> banned, const generation_options& o,
               train::rng& r) {
  const auto c = static_cast<int64_t>(logits.size());
  const auto allowed = [&](int64_t i) { return i != banned[0] && i != banned[1]; };
  int64_t best = 0;
  while (!allowed(best)) ++best;
  for (int64_t i = 0; i < c; ++i)
    if (allowed(i) && logits[static_cast<size_t>(i)] > logits[static_cast<size_t>(best)]) best = i;
  if (o.temperature == 0) return best;
  const double top = logits[static_cast<size_t>(best)];
  std::vector<double> p(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i)
    p[static_cast<size_t>(i)] = allowed(i) ? std::exp((logits[static_cast<size_t>(i)] - top) / o.temperature) : 0.0;
  if (o.top_k == 0 && o.top_p >= 1) {  // no cut: draw in id order, with no sort of the vocabulary
    double total = 0;
    for (double x : p) total += x;
    double u = r.uniform() * total;
    for (int64_t i = 0; i < c; ++i) {
      u -= p[static_cast<size_t>(i)];
      if (u < 0) return i;  // (a banned token's p is 0: never here)
    }
    return best;  // u rounded past the sum
  }
  std::vector<int64_t> order(static_cast<size_t>(c));
  std::iota(order.begin(), order.end(), int64_t{0});
  // Most likely first, ties to the lower id, so the cut never depends on the sort.
  const auto more_likely = [&](int64_t a, int64_t b) {
    const double pa = p[static_cast<size_t>(a)], pb = p[static_cast<size_t>(b)];
    return pa != pb ? pa > pb : a < b;
  };
  int64_t keep = o.top_k > 0 ? std::min(o.top_k, c) : c;
  std::partial_sort(order.begin(), order.begin() + keep, order.end(), more_likely);
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

}  // namespace

generation text_model::generate(std::string_view prompt, const generation_options& o,
                                const std::function<void(const std::string&)>& on_text) const {
  const impl& m = *impl_;
  if (m.config.task != text_task::lm)
    throw_usage(fmt::format("generate needs a language model (--task lm); this is a {} model",
                            task_name(m.config.task)));
  check_options(o);
  const train::word_index& words = m.inputs;
  const int64_t end = words.find(train::end_token), unknown = words.find(train::unknown_token);
  generation g;
  std::vector<int64_t> history{end};  // a text starts as if a paragraph had just ended
  for (const std::string& t : tokenize(prompt)) {
    const int64_t id = words.find(t);
    if (id < 0) g.unknown.push_back(t);
    g.prompt.push_back(id < 0 ? train::unknown_token : t);
    history.push_back(id < 0 ? unknown : id);
  }
  nn::causal_decoder decoder(m.net);
  const int64_t capacity = decoder.capacity();
  // Feeds the tokens from `from` on; a full cache restarts from the latest half of the history.
  std::vector<float> logits;
  size_t fed = 0;
  const auto feed_history = [&] {
    for (; fed < history.size(); ++fed) {
      if (decoder.length() == capacity) {
        decoder.clear();
        const size_t keep = static_cast<size_t>(std::max<int64_t>(1, capacity / 2));
        for (size_t i = fed - std::min(fed, keep - 1); i < fed; ++i) decoder.step(history[i]);
      }
      logits = decoder.step(history[fed]);
    }
  };
  // A prompt longer than the context: only its last `capacity` tokens are read.
  if (static_cast<int64_t>(history.size()) > capacity) fed = history.size() - static_cast<size_t>(capacity);
  feed_history();
  // Only the last `capacity` tokens are ever read again (a restart keeps half of them), so the
  // history is trimmed once it holds twice that: memory stays flat however long the stream.
  const auto trim_history = [&] {
    const auto window = static_cast<size_t>(capacity);
    if (window == 0 || history.size() < 2 * window || fed < window) return;
    const size_t drop = fed - window;
    history.erase(history.begin(), history.begin() + static_cast<std::ptrdiff_t>(drop));
    fed -= drop;
  };
  train::rng r(o.seed);
  detokenizer text;
  for (const std::string& t : g.prompt) text.next(t);  // the continuation carries on the prompt's sentence
  for (int64_t n = 0; n < o.max_words; ++n) {
    const int64_t next = choose(logits, {unknown, o.ignore_eos ? end : -1}, o, r);
    if (next == end) {
      g.ended = true;
      break;
    }
    const std::string& token = words.words()[static_cast<size_t>(next)];
    ++g.made;
    const std::string piece = text.next(token);
    if (on_text) {
      on_text(piece);
    } else {
      g.tokens.push_back(token);
      g.text += piece;
    }
    history.push_back(next);
    trim_history();
    if (n + 1 < o.max_words) feed_history();
  }
  return g;
}

}  // namespace attn
