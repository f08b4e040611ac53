// Hiding words for the masked-word task (BERT's recipe): of the tokens whose word the model can
// predict, a share is chosen (at least one per sequence); each chosen token is replaced by the
// mask token 80% of the time, by a random output word 10%, and left as it is 10% (so the model
// cannot tell which visible words will be scored, and every token's vector must carry its
// context). The chosen tokens' original words are the targets.
#pragma once

#include <cstdint>
#include <vector>

#include "models/network.hpp"
#include "train/rng.hpp"

namespace attn::train {

struct masking {
  double share = 0.15;
  int64_t mask_id = -1;              // the mask token's embedding row
  std::vector<int64_t> output_rows;  // each output word's embedding row (random replacements)
  // The share of sentences read without their final stop (. ! ?: stop_ids, their rows). Text
  // split into sentences always ends in one, so a model never sees a last word without it and
  // reads the last place of a text that lacks one ("... at the bank") as the stop's; BERT's
  // text, cut anywhere, has no such place. 0: every sentence whole, and no draw is made.
  double drop_final_stop = 0;
  std::vector<int64_t> stop_ids;
};

// One sequence of embedding rows: classes[t] is token t's output word (-1: cannot be predicted).
struct word_sequence {
  std::vector<int64_t> ids, classes;
};

struct masked_sequence {
  std::vector<int64_t> ids;                  // with the chosen tokens replaced
  std::vector<int64_t> positions, targets;   // the chosen tokens and their words
};

masked_sequence mask_words(const word_sequence& s, const masking& m, rng& r);

// Masked-word batches of sentences of like length (Hugging Face's group_by_length): a batch is
// padded to its longest sentence, and shuffled sentences of 3 to 64 tokens leave about half of a
// batch padding. The shuffled chunk is sorted by length (stably: equal lengths keep their
// shuffled order) and cut into batches of `batch`, and the full batches are put in an order
// drawn from `shuffle` (a short last batch stays last, so the chunk still cuts into the same
// batches): each step still sees a random draw of sentences of one length, the lengths in random order.
void group_by_length(std::vector<word_sequence>& chunk, size_t batch, rng& shuffle);

// Consecutive sentences joined into sequences of at most max_length tokens (RoBERTa's
// FULL-SENTENCES inputs): a batch of shuffled sentences is about half padding, a batch of packs
// little of it, and the sentences keep their order and their neighbours as context. lengths[i]
// is sentence i's token count as the corpus survey counted it (before words without a row were
// left out, so a pack is never longer than max_length): pack_sizes gives how many sentences
// each pack takes (greedily, in order; a sentence alone is never split), the same from the
// survey's lengths as from the chunk's, so a run knows its steps before it reads the corpus.
std::vector<int64_t> pack_sizes(const std::vector<int64_t>& lengths, int64_t max_length);
std::vector<word_sequence> pack_sentences(std::vector<word_sequence>& chunk, const std::vector<int64_t>& lengths,
                                          int64_t max_length);

// Padded batch; one row per chosen token (pool_row {sequence, position + 1}: token_pool's row).
nn::batch make_masked_batch(const std::vector<const masked_sequence*>& sequences);

}  // namespace attn::train
