#include "train/masked_evaluate.hpp"

#include <fmt/format.h>

#include "attn/error.hpp"
#include "train/corpus.hpp"
#include "train/masking.hpp"
#include "train/model_input.hpp"
#include "train/rng.hpp"

namespace attn::train {

evaluation evaluate_masked_words(const text_model::impl& m, const std::string& path, int64_t every,
                                 uint64_t seed) {
  if (every < 2) throw_usage(fmt::format("--every must be at least 2, got {}", every));
  constexpr size_t batch_sequences = 64;
  const int64_t max_length = m.config.max_positions > 0 ? m.config.max_positions : 64;
  const int64_t mask = m.inputs.find(mask_token);
  rng r(seed);
  const auto offset = static_cast<int64_t>(r.below(static_cast<uint64_t>(every)));
  corpus_reader reader(path, max_length);
  std::vector<std::string> tokens;
  std::vector<masked_sequence> group;
  score_tally tally;
  evaluation e;
  int64_t word = 0, last_line = -1;
  // Groups of up to batch_sequences, fewer when their logits would pass max_scoring_logits (as
  // the trainer's held-out scoring groups them: 64 sequences of a 30k-word model can pass it).
  const auto classes = static_cast<size_t>(m.net.shape().classes);
  size_t rows = 0;
  const auto flush = [&] {
    std::vector<const masked_sequence*> batch;
    for (const masked_sequence& s : group) batch.push_back(&s);
    if (!batch.empty()) tally.add(m.net, make_masked_batch(batch));
    group.clear();
    rows = 0;
  };
  while (reader.next(tokens)) {
    if (reader.position().offset != last_line) ++e.lines;  // sequences of one line share its offset
    last_line = reader.position().offset;
    masked_sequence s;
    for (const std::string& t : tokens) {
      const int64_t id = m.inputs.find(t);
      if (id < 0) {
        ++e.unknown_words;
        continue;
      }
      const auto at = static_cast<int64_t>(s.ids.size());
      s.ids.push_back(id);
      if ((word++ + offset) % every != 0) continue;
      ++e.n;
      const int64_t target = m.outputs.find(t);
      if (target < 0) continue;  // not a word the model can answer: wrong
      s.ids.back() = mask;
      s.positions.push_back(at);
      s.targets.push_back(target);
    }
    if (s.positions.empty() || s.ids.size() < 2) continue;  // a lone token has no context
    const size_t more = s.positions.size();
    if (group.size() == batch_sequences || (rows + more) * classes > max_scoring_logits) flush();
    rows += more;
    group.push_back(std::move(s));
  }
  flush();
  if (e.n == 0) throw_input(path, "no word to hide (the file has no word the model knows)");
  const scored_examples sc = tally.result();
  e.scored = sc.n;
  e.skipped = e.n - sc.n;
  e.loss = sc.loss;
  e.accuracy = sc.accuracy * static_cast<double>(sc.n) / static_cast<double>(e.n);
  e.top5 = sc.top5 * static_cast<double>(sc.n) / static_cast<double>(e.n);
  return e;
}

}  // namespace attn::train
