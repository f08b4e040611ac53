#include "train/corpus_batches.hpp"

#include <algorithm>

#include "train/lm_stream.hpp"
#include "train/rng.hpp"

namespace attn::train {

uint64_t mix_seeds(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<masked_sequence> lm_windows(const std::vector<std::vector<std::string>>& paragraphs,
                                        const word_index& words, int64_t context, data_summary* summary) {
  std::vector<int64_t> stream{words.find(end_token)};
  for (const auto& p : paragraphs) {
    const int64_t unknown = append_paragraph(p, words, stream);
    if (summary != nullptr) {
      ++summary->lines;
      summary->unknown_words += unknown;
    }
  }
  if (summary != nullptr) summary->tokens += static_cast<int64_t>(stream.size()) - 1;
  return next_token_windows(stream, context);
}

word_sequence encode(const std::vector<std::string>& tokens, const word_index& inputs,
                     const word_index& outputs, data_summary& summary) {
  word_sequence s;
  for (const std::string& t : tokens) {
    const int64_t id = inputs.find(t);
    if (id < 0) {
      ++summary.unknown_words;
      if (summary.unknown_examples.size() < 10 &&
          std::find(summary.unknown_examples.begin(), summary.unknown_examples.end(), t) == summary.unknown_examples.end())
        summary.unknown_examples.push_back(t);
      continue;
    }
    s.ids.push_back(id);
    s.classes.push_back(outputs.find(t));
  }
  return s;
}

int64_t corpus_batches::begin_part(int64_t epoch, int64_t part, bool) {
  const bool lm = is_lm(o_);
  if (part == 0) chunk_start_ = {};
  reader_.seek(chunk_start_);
  chunk_.clear();
  windows_.clear();
  std::vector<std::vector<std::string>> text;  // lm: paragraphs, cut into windows
  std::vector<int64_t> lengths;                // --pack-sentences: the sentences' token counts
  std::vector<std::string> tokens;
  int64_t read = 0;
  while (read < chunk_sequences) {
    const int64_t i = reader_.position().sequence;
    if (!reader_.next(tokens)) break;
    if (held_out(i, validating_)) continue;
    ++read;
    if (lm) {
      text.push_back(std::move(tokens));
      continue;
    }
    data_summary unused;  // the survey counted the corpus already
    chunk_.push_back(encode(tokens, inputs_, outputs_, unused));
    if (o_.pack_sentences) lengths.push_back(static_cast<int64_t>(tokens.size()));
  }
  if (read == 0) return 0;
  if (o_.pack_sentences) chunk_ = pack_sentences(chunk_, lengths, o_.max_length);  // before the shuffle: neighbours
  rng shuffle(mix_seeds(mix_seeds(o_.seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(part)));
  // lm: each epoch cuts the chunk's stream at other places. The stream starts at a paragraph
  // drawn for the epoch and wraps around to the ones before it, so every window still
  // starts its paragraphs after an end token, the count of windows does not change, and a
  // book read fifty times is not cut into the same windows fifty times (nanoGPT draws its
  // windows anywhere in the text).
  // (Drawn from a generator of its own, so that the shuffle's draws are those of a stream
  // that starts at its first paragraph.)
  if (lm) {
    rng cut(mix_seeds(mix_seeds(mix_seeds(o_.seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(part)), 1));
    std::rotate(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(cut.below(text.size())), text.end());
    windows_ = lm_windows(text, inputs_, o_.context, nullptr);
  }
  next_chunk_ = reader_.position();
  const auto batch = static_cast<size_t>(o_.batch);
  if (lm) {
    shuffle.shuffle(windows_);
  } else {
    shuffle.shuffle(chunk_);
    if (o_.group_by_length) group_by_length(chunk_, batch, shuffle);
  }
  const size_t items = lm ? windows_.size() : chunk_.size();
  return static_cast<int64_t>((items + batch - 1) / batch);
}

step_batch corpus_batches::batch(int64_t index, int64_t step) {
  const bool lm = is_lm(o_);
  // This step's masks and dropout, from the step's number.
  rng r(mix_seeds(o_.seed ^ 0x6d61736bULL, static_cast<uint64_t>(step)));
  const auto batch = static_cast<size_t>(o_.batch);
  const size_t items = lm ? windows_.size() : chunk_.size();
  const size_t first = static_cast<size_t>(index) * batch, end = std::min(items, first + batch);
  masked_.clear();
  group_.clear();
  for (size_t k = first; k < end && !lm; ++k) masked_.push_back(mask_words(chunk_[k], masking_, r));
  for (size_t k = first; k < end; ++k) group_.push_back(lm ? &windows_[k] : &masked_[k - first]);
  step_batch b;
  b.items = static_cast<int64_t>(group_.size());
  for (const masked_sequence* g : group_) b.rows += static_cast<int64_t>(g->positions.size());
  // Never 0, which means "evaluating": a training forward also scores the adaptive softmax
  // without every class, and takes the full softmax's gradients in the same pass
  // (nn/fused_output.hpp). (r is this step's own stream, drawn from after the masking.)
  b.dropout_seed = r.next() | 1;
  b.batch_of = [this](int64_t from, int64_t to) {
    return make_masked_batch({group_.begin() + from, group_.begin() + to});
  };
  return b;
}


void corpus_batches::save(nlohmann::json& progress_fields, checkpoint&) const {
  progress_fields["offset"] = chunk_start_.offset;
  progress_fields["skip"] = chunk_start_.skip;
  progress_fields["sequence"] = chunk_start_.sequence;
}
void corpus_batches::load(const nlohmann::json& j, const io::json_fields& h, const checkpoint&) {
  chunk_start_ = {h.integer(j, "progress.offset"), h.integer(j, "progress.skip"), h.integer(j, "progress.sequence")};
  const auto f = [](int64_t v) { return static_cast<double>(v); };
  h.range("progress.offset", f(chunk_start_.offset), 0, f(corpus_bytes_));
  h.range("progress.sequence", f(chunk_start_.sequence), 0, f(sequences_));
  h.range("progress.skip", f(chunk_start_.skip), 0, f(chunk_start_.sequence));
}

}  // namespace attn::train
