// Translation's training data (issue #54): sentence pairs read from two files aligned by line
// (--source, --target: Multi30k's and WMT's form) or from one file of source<TAB>target lines
// (--data: Tatoeba's and Anki's), encoded as subword pieces, and cut into batches of like-length
// pairs counted in tokens (fairseq's --max-tokens, Marian's mini-batch words).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/translator.hpp"
#include "text/subword_pieces.hpp"

namespace attn::train {

struct sentence_pair {
  std::string source, target;
};

// Input errors (one line each): a file that cannot be read, files whose line counts differ, a
// --data line with no tab (its line number), no pair at all. Lines are kept as they are (a pair
// with an empty side is kept: the encoder skips it and counts it).
std::vector<sentence_pair> read_pairs(const std::string& source, const std::string& target);
std::vector<sentence_pair> read_tab_separated_pairs(const std::string& path);

// Each side's pieces followed by </s>.
struct encoded_pair {
  std::vector<int64_t> source, target;
};
struct encoded_pairs {
  std::vector<encoded_pair> pairs;
  int64_t too_long = 0;  // a side past max_length pieces (</s> included): skipped, never cut
  int64_t empty = 0;     // a side with no pieces: skipped
};
encoded_pairs encode_pairs(const std::vector<sentence_pair>& pairs, const text::subword_pieces& pieces,
                           int64_t max_length);

// The pairs in batches of like length: sorted by (target, source) length, cut where a batch's
// padded size — pairs × (longest source + longest target + 1) — would pass max_tokens (a pair
// alone always makes a batch), the batches then in an order drawn from seed. Indices into pairs.
std::vector<std::vector<int64_t>> length_batches(const std::vector<encoded_pair>& pairs, int64_t max_tokens,
                                                 uint64_t seed);

// The translator's batch of those pairs: sources padded with −1, the target read as <s> y and
// predicted as y </s>.
models::translation_batch make_translation_batch(const std::vector<encoded_pair>& pairs,
                                                 std::span<const int64_t> indices);

}  // namespace attn::train
