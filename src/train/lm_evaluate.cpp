#include "train/lm_evaluate.hpp"

#include <algorithm>
#include <cmath>

#include "attn/error.hpp"
#include "train/corpus.hpp"
#include "train/lm_stream.hpp"

namespace attn::train {

evaluation evaluate_lm(const text_model::impl& m, const std::string& path) {
  const int64_t context = m.config.max_positions;
  // Up to 32 windows a pass, fewer when their logits would pass 128 MB (a 16k-word model's 32
  // windows of 512 would be 1 GB).
  const int64_t windows_at_once =
      std::clamp<int64_t>(static_cast<int64_t>(max_scoring_logits) / std::max<int64_t>(context * m.net.shape().classes, 1), 1, 32);
  corpus_reader reader(path, 0, m.tokenizer);
  std::vector<std::string> paragraph;
  std::vector<int64_t> stream{m.inputs.find(end_token)};
  score_tally tally;
  evaluation e;
  // Scores the whole windows of the stream (all, at the end), keeping the last id to start the
  // rest: the windows are those of the whole stream.
  const auto score_windows = [&](bool all) {
    const auto n = static_cast<int64_t>(stream.size());
    const int64_t whole = all ? n : (n - 1) / context * context + 1;
    if (whole < 2) return;
    const std::vector<int64_t> part(stream.begin(), stream.begin() + whole);
    const std::vector<masked_sequence> windows = next_token_windows(part, context);
    for (size_t begin = 0; begin < windows.size(); begin += windows_at_once) {
      std::vector<const masked_sequence*> group;
      for (size_t i = begin; i < std::min(windows.size(), begin + windows_at_once); ++i) group.push_back(&windows[i]);
      tally.add(m.net, make_masked_batch(group));
    }
    stream.erase(stream.begin(), stream.begin() + whole - 1);
  };
  while (reader.next(paragraph)) {
    ++e.lines;
    e.unknown_words += append_paragraph(paragraph, m.inputs, stream);
    if (static_cast<int64_t>(stream.size()) > windows_at_once * context) score_windows(false);
  }
  score_windows(true);
  if (e.lines == 0) throw_input(path, "no text to score (the file is empty or blank)");
  const scored_examples s = tally.result();
  e.n = e.scored = s.n;
  e.loss = s.loss;
  e.accuracy = s.accuracy;
  e.perplexity = std::exp(s.loss);
  e.unknown_share = s.n > 0 ? static_cast<double>(e.unknown_words) / static_cast<double>(s.n) : 0.0;
  return e;
}

}  // namespace attn::train
