// The streamed tasks' batch source for the training loop (train/loop.hpp): a part of an epoch is
// a chunk, the next chunk_sequences training sequences, read again from where it starts and
// shuffled by a stream of its own (masked-word: sentences, words hidden per step; lm: paragraphs
// as one stream, cut into windows at a place drawn for the epoch); a step's masks and dropout come
// from the step's number, so a resumed run draws what the uninterrupted run drew.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/corpus_survey.hpp"
#include "train/dataset.hpp"
#include "train/loop.hpp"
#include "train/masking.hpp"

namespace attn::train {

// Two numbers mixed into one seed (splitmix64's finaliser over their combination).
uint64_t mix_seeds(uint64_t a, uint64_t b);

// lm: a chunk's (or the held-out text's) paragraphs as one stream, cut into windows; summary (may
// be null) counts the lines, tokens and unknown words.
std::vector<masked_sequence> lm_windows(const std::vector<std::vector<std::string>>& paragraphs,
                                        const word_index& words, int64_t context, data_summary* summary);

// A sentence as input rows and output classes, the words without a row left out (and counted).
word_sequence encode(const std::vector<std::string>& tokens, const word_index& inputs,
                     const word_index& outputs, data_summary& summary);

class corpus_batches final : public batch_source {
 public:
  corpus_batches(const train_options& o, const survey& s, bool validating, const word_index& inputs,
                 const word_index& outputs, const masking& m)
      : o_(o), validating_(validating), inputs_(inputs), outputs_(outputs), masking_(m),
        part_steps_(chunk_steps(o, s, validating)), reader_(open_corpus(o, s.tokenizer)), sequences_(s.sequences),
        corpus_bytes_(s.bytes) {}

  const std::vector<int64_t>& part_steps() const override { return part_steps_; }
  int64_t begin_part(int64_t epoch, int64_t part, bool resumed) override;
  step_batch batch(int64_t index, int64_t step) override;
  void end_part() override { chunk_start_ = next_chunk_; }
  // Where the chunk's sequences begin.
  void save(nlohmann::json& progress_fields, checkpoint& c) const override;
  void load(const nlohmann::json& progress_fields, const io::json_fields& h, const checkpoint& c) override;

 private:
  const train_options& o_;
  bool validating_;
  const word_index& inputs_;
  const word_index& outputs_;
  const masking& masking_;
  std::vector<int64_t> part_steps_;
  corpus_reader reader_;
  int64_t sequences_, corpus_bytes_;
  corpus_position chunk_start_, next_chunk_;
  std::vector<word_sequence> chunk_;        // masked-word: sentences, masked per step
  std::vector<masked_sequence> windows_;    // lm: the chunk's stream cut into windows
  std::vector<masked_sequence> masked_;     // masked-word: this step's masked sentences
  std::vector<const masked_sequence*> group_;
};

}  // namespace attn::train
