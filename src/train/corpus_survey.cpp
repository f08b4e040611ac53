#include "train/corpus_survey.hpp"

#include "train/masking.hpp"
#include "train/lm_stream.hpp"

namespace attn::train {

bool held_out(int64_t sequence, bool validating) {
  return validating && sequence % valid_every == 0 && sequence / valid_every < max_valid;
}

corpus_reader open_corpus(const train_options& o, const text::text_tokenizer& tokenizer) {
  return {o.data, is_lm(o) ? 0 : o.max_length, tokenizer};
}

survey survey_corpus(const train_options& o, text::text_tokenizer tokenizer) {
  survey s;
  s.tokenizer = std::move(tokenizer);
  corpus_reader reader = open_corpus(o, s.tokenizer);
  std::vector<std::string> tokens;
  while (true) {
    const int64_t i = reader.position().sequence;
    if (!reader.next(tokens)) break;
    ++s.sequences;
    s.lengths.push_back(static_cast<int64_t>(tokens.size()));
    if (held_out(i, true)) {
      s.valid.push_back(std::move(tokens));
      continue;
    }
    for (const std::string& t : tokens) s.counts[t] += 1;
  }
  // Too little text to spare some: everything trains.
  if (s.sequences < o.valid_min_lines) {
    for (const auto& v : s.valid)
      for (const std::string& t : v) s.counts[t] += 1;
    s.valid.clear();
  }
  s.train_sequences = s.sequences - static_cast<int64_t>(s.valid.size());
  s.bytes = reader.position().offset;
  return s;
}

std::vector<int64_t> chunk_steps(const train_options& o, const survey& s, bool validating) {
  std::vector<int64_t> steps;
  int64_t in_chunk = 0, ids = 1;  // an lm chunk's stream starts with the end token
  std::vector<int64_t> lengths;   // --pack-sentences: the chunk's sentences' lengths
  const auto close = [&] {
    const int64_t items = is_lm(o)            ? count_windows(ids, o.context)
                          : o.pack_sentences ? static_cast<int64_t>(pack_sizes(lengths, o.max_length).size())
                                             : in_chunk;
    steps.push_back((items + o.batch - 1) / o.batch);
    in_chunk = 0;
    ids = 1;
    lengths.clear();
  };
  for (int64_t i = 0; i < s.sequences; ++i) {
    if (held_out(i, validating)) continue;
    ++in_chunk;
    ids += s.lengths[static_cast<size_t>(i)] + 1;
    if (o.pack_sentences) lengths.push_back(s.lengths[static_cast<size_t>(i)]);
    if (in_chunk == chunk_sequences) close();
  }
  if (in_chunk > 0) close();
  return steps;
}

}  // namespace attn::train
