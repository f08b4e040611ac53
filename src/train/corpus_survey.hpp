// The streamed tasks' first pass over their corpus (masked-word, lm): word counts, each
// sequence's length and the held-out share of its sequences; and from it each chunk's steps.
// Memory stays flat in the corpus size: only counts, lengths and the held-out text are kept.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "attn/train.hpp"
#include "train/corpus.hpp"

namespace attn::train {

inline constexpr int64_t chunk_sequences = 4096;  // shuffled together; the memory a run holds
inline constexpr int64_t valid_every = 20;        // sequence i is held out when i % 20 == 0 …
inline constexpr int64_t max_valid = 2000;        // … among the first 20 × 2000

inline bool is_lm(const train_options& o) { return kind_of(o.task).autoregressive; }

// Whether sequence i is held out (every valid_every-th, among the first valid_every × max_valid).
bool held_out(int64_t sequence, bool validating);

// masked-word reads sentences cut at max_length; lm reads whole paragraphs.
corpus_reader open_corpus(const train_options& o, const text::text_tokenizer& tokenizer);

struct survey {
  std::unordered_map<std::string, int64_t> counts;  // training sequences' words
  std::vector<std::vector<std::string>> valid;      // the held-out sequences
  std::vector<int64_t> lengths;                     // every sequence's tokens
  int64_t sequences = 0, train_sequences = 0;
  int64_t bytes = 0;  // of text (decompressed, for .xz and .gz)
  text::text_tokenizer tokenizer;  // how the text was cut into tokens (words, or --pieces)
};

// Too little text to spare some (fewer than valid_min_lines sequences): everything trains.
survey survey_corpus(const train_options& o, text::text_tokenizer tokenizer = {});

// The optimiser steps of each chunk of an epoch: a chunk is the next chunk_sequences training
// sequences; masked-word batches sequences, lm batches the windows of the chunk's stream.
std::vector<int64_t> chunk_steps(const train_options& o, const survey& s, bool validating);

}  // namespace attn::train
